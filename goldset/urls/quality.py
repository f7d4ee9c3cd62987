from django.urls import path, re_path

from goldset.views import quality

app_name = "quality"

urlpatterns = [
    path("agreement/", quality.agreement_dashboard, name="agreement"),
    re_path(
        r"^agreement\.(?P<fmt>csv|json)$", quality.agreement_download, name="agreement-download"
    ),
    path("alerts/", quality.alerts, name="alerts"),
    re_path(
        r"^(?P<name>confusion|workload|time)\.(?P<fmt>csv|json)$",
        quality.table_download,
        name="table-download",
    ),
    path("agreement/recompute/", quality.recompute, name="recompute"),
    path("fast-decisions/", quality.fast_decisions, name="fast_decisions"),
]
