from django.urls import path

from goldset.views import audit

app_name = "audit"

urlpatterns = [
    path("", audit.audit_log, name="log"),
    path("audit-log.csv", audit.audit_csv, name="csv"),
]
