from django.urls import path

from goldset.views import answers, answers_admin, answers_lead

app_name = "answers"

urlpatterns = [
    path("", answers.queue, name="queue"),
    path("claim/", answers.claim, name="claim"),
    path("items/<str:public_id>/", answers.item, name="item"),
    path("items/<str:public_id>/skip/", answers.skip, name="skip"),
    path("undo/", answers.undo, name="undo"),
    path("calibration/", answers.calibration, name="calibration"),
    path("calibration/<slug:domain>/start/", answers.calibration_start, name="calibration_start"),
    path("adjudication/", answers_lead.adjudication_queue, name="adjudication_queue"),
    path("adjudication/<str:public_id>/", answers_lead.adjudicate, name="adjudicate"),
    path("calibration-status/", answers_lead.calibration_status, name="calibration_status"),
    path("calibration-sets/<slug:domain>/", answers_lead.calibration_set, name="calibration_set"),
    path(
        "calibration-sets/<slug:domain>/<str:public_id>/",
        answers_lead.calibration_reference,
        name="calibration_reference",
    ),
    path("import/", answers_admin.import_files, name="import"),
    path("runs/", answers_admin.runs, name="runs"),
    path("export/", answers_admin.export, name="export"),
    path("export/adjudication.jsonl", answers_admin.export_download, name="export_download"),
]
