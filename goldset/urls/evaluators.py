from django.urls import path

from goldset.views import evaluators

app_name = "evaluators"

urlpatterns = [
    path("", evaluators.evaluator_list, name="list"),
    path("<int:pk>/", evaluators.evaluator_detail, name="detail"),
    path("report/", evaluators.evaluator_report, name="report"),
    path("report.json", evaluators.evaluator_report_json, name="report_json"),
    path("calibrations/", evaluators.calibration_list, name="calibrations"),
    path("calibrations/<int:pk>/", evaluators.calibration_detail, name="calibration"),
    path("release/", evaluators.release_list, name="releases"),
    path("release/<int:pk>/", evaluators.release_detail, name="release"),
    path(
        "release/<int:pk>/report.html",
        evaluators.release_download,
        {"fmt": "html"},
        name="release_html",
    ),
    path(
        "release/<int:pk>/report.json",
        evaluators.release_download,
        {"fmt": "json"},
        name="release_json",
    ),
]
