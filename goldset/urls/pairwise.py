from django.urls import path

from goldset.views import pairwise

app_name = "pairwise"

urlpatterns = [
    path("", pairwise.queue, name="queue"),
    path("claim/", pairwise.claim, name="claim"),
    path("pairs/<str:public_id>/", pairwise.judge, name="judge"),
    path("pairs/<str:public_id>/skip/", pairwise.skip, name="skip"),
    path("undo/", pairwise.undo, name="undo"),
    path("tasks/", pairwise.tasks, name="tasks"),
    path("tasks/new/", pairwise.create, name="create"),
    path("tasks/<int:pk>/analysis/", pairwise.analysis, name="analysis"),
    path("tasks/<int:pk>/import/", pairwise.import_judgments, name="import"),
    path("adjudication/<str:public_id>/", pairwise.adjudicate, name="adjudicate"),
    path("calibration/", pairwise.calibration, name="calibration"),
    path("calibration/set/", pairwise.calibration_set, name="calibration_set"),
    path(
        "adjudication/<str:public_id>/calibration/",
        pairwise.add_calibration,
        name="add_calibration",
    ),
    path(
        "qualifications/<int:reviewer_pk>/reset/",
        pairwise.reset_calibration,
        name="reset_calibration",
    ),
]
