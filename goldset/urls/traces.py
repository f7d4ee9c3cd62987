from django.urls import path

from goldset.views import traces

app_name = "traces"

urlpatterns = [
    path("", traces.overview, name="overview"),
    path("sampling/", traces.sampling_rules, name="sampling"),
    path("sampling/<int:pk>/", traces.sampling_rule, name="sampling_rule"),
    path("sampling/<int:pk>/enabled/", traces.sampling_rule_enabled, name="sampling_enabled"),
    path("<str:trace_id>/", traces.trace_detail, name="trace"),
]
