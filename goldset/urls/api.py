from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from goldset.views import (
    api,
    api_decisions,
    api_pairwise,
    api_pairwise_calibration,
    api_projects,
    api_sampling,
    api_webhooks,
    otlp,
)

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    # projects (issue 27): the installation's list; each project's own endpoints are reached
    # under its prefix, /api/v1/projects/<slug>/ (workbench.middleware.ProjectMountMiddleware
    # takes it off), so the project itself is this URLconf's root
    path("", api_projects.ProjectDetail.as_view(), name="project"),
    path("projects/", api_projects.ProjectList.as_view(), name="projects"),
    path("settings/", api_projects.ProjectSettings.as_view(), name="project_settings"),
    path("members/", api_projects.MemberList.as_view(), name="project_members"),
    path("members/<str:member>/", api_projects.MemberDetail.as_view(), name="project_member"),
    path("domains/", api.DomainList.as_view(), name="domains"),
    path("documents/", api.DocumentList.as_view(), name="documents"),
    path("documents/<str:document_id>/", api.DocumentDetail.as_view(), name="document"),
    path(
        "documents/<str:document_id>/blocks/", api.DocumentBlocks.as_view(), name="document_blocks"
    ),
    path("blocks/<str:block_id>/versions/", api.BlockVersions.as_view(), name="block_versions"),
    path(
        "blocks/<str:block_id>/versions/<int:version>/",
        api.BlockVersionDetail.as_view(),
        name="block_version",
    ),
    path("triples/", api.TripleList.as_view(), name="triples"),
    path("triples/import/", api.triples_import, name="triples_import"),
    path("triples/<str:triple_id>/", api.TripleDetail.as_view(), name="triple"),
    path("questions/import/", api.questions_import, name="questions_import"),
    path("answers/import/", api.answers_import, name="answers_import"),
    path(
        "evaluators/<int:pk>/outputs/",
        api.evaluator_outputs_import,
        name="evaluator_outputs_import",
    ),
    path("imports/", api.import_create, name="imports"),
    path("imports/<int:pk>/", api.ImportDetail.as_view(), name="import"),
    path("imports/<int:pk>/cancel/", api.import_cancel, name="import_cancel"),
    path("imports/<int:pk>/retry/", api.import_retry, name="import_retry"),
    path("versions/", api.VersionList.as_view(), name="versions"),
    path("versions/diff/", api.version_diff, name="version_diff"),
    path("versions/freeze/", api.version_freeze, name="version_freeze"),
    # ``ref``: a number (7, v7), a tag or "latest" (goldset.services.version_tags); the two
    # fixed paths above come first, and a tag may not take their names.
    path("versions/<str:ref>/", api.VersionDetail.as_view(), name="version"),
    path(
        "versions/<str:ref>/download/<str:fmt>/",
        api.version_download,
        name="version_download",
    ),
    path("tags/", api.TagList.as_view(), name="tags"),
    path("tags/<str:name>/", api.TagDetail.as_view(), name="tag"),
    path("jobs/", api.JobList.as_view(), name="jobs"),
    path("jobs/compare/", api.job_compare, name="job_compare"),
    path("jobs/<int:pk>/", api.JobDetail.as_view(), name="job"),
    path("jobs/<int:pk>/queries/", api.JobQueries.as_view(), name="job_queries"),
    path("agreement/", api.SnapshotList.as_view(), name="agreement_snapshots"),
    path("alerts/", api.alert_list, name="alerts"),
    # labels, reviews, adjudications and webhook endpoints (issue 29)
    path("labels/", api_decisions.LabelList.as_view(), name="labels"),
    path("labels/claim/", api_decisions.label_claim, name="label_claim"),
    path("labels/<int:pk>/", api_decisions.LabelDetail.as_view(), name="label"),
    path("reviews/", api_decisions.ReviewList.as_view(), name="reviews"),
    path("reviews/claim/", api_decisions.review_claim, name="review_claim"),
    path("reviews/<int:pk>/", api_decisions.ReviewDetail.as_view(), name="review"),
    path("adjudications/", api_decisions.AdjudicationList.as_view(), name="adjudications"),
    path(
        "adjudications/queue/",
        api_decisions.AdjudicationQueue.as_view(),
        name="adjudication_queue",
    ),
    path(
        "adjudications/<int:pk>/",
        api_decisions.AdjudicationDetail.as_view(),
        name="adjudication",
    ),
    path("webhooks/", api_webhooks.WebhookEndpointList.as_view(), name="webhooks"),
    path("webhooks/<int:pk>/", api_webhooks.WebhookEndpointDetail.as_view(), name="webhook"),
    path(
        "webhooks/<int:pk>/deliveries/",
        api_webhooks.WebhookDeliveryList.as_view(),
        name="webhook_deliveries",
    ),
    path("webhooks/<int:pk>/test/", api_webhooks.webhook_test, name="webhook_test"),
    path(
        "webhooks/deliveries/<int:pk>/redeliver/",
        api_webhooks.webhook_redeliver,
        name="webhook_redeliver",
    ),
    # pairwise review (issue 30)
    path("pairwise/tasks/", api_pairwise.PairwiseTaskList.as_view(), name="pairwise_tasks"),
    path(
        "pairwise/tasks/<int:pk>/judgments/",
        api_pairwise.PairwiseJudgmentList.as_view(),
        name="pairwise_judgments",
    ),
    path(
        "pairwise/tasks/<int:pk>/judgments/import/",
        api_pairwise.pairwise_judgments_import,
        name="pairwise_judgments_import",
    ),
    path(
        "pairwise/tasks/<int:pk>/analysis/",
        api_pairwise.pairwise_analysis,
        name="pairwise_analysis",
    ),
    path("pairwise/claim/", api_pairwise.pairwise_claim, name="pairwise_claim"),
    path("pairwise/pairs/<str:public_id>/", api_pairwise.pairwise_pair, name="pairwise_pair"),
    path(
        "pairwise/pairs/<str:public_id>/judgment/",
        api_pairwise.pairwise_judge,
        name="pairwise_judge",
    ),
    path("pairwise/pairs/<str:public_id>/skip/", api_pairwise.pairwise_skip, name="pairwise_skip"),
    path("pairwise/undo/", api_pairwise.pairwise_undo, name="pairwise_undo"),
    path("pairwise/runs/", api_pairwise.pairwise_runs, name="pairwise_runs"),
    path(
        "pairwise/adjudications/",
        api_pairwise.PairAdjudicationList.as_view(),
        name="pairwise_adjudications",
    ),
    path(
        "pairwise/adjudications/<str:public_id>/",
        api_pairwise.pairwise_adjudication,
        name="pairwise_adjudication",
    ),
    # pairwise qualification (issue 30): calibration pairs, a reviewer's status and judgments
    path(
        "pairwise/calibration/pairs/",
        api_pairwise_calibration.CalibrationPairList.as_view(),
        name="pairwise_calibration_pairs",
    ),
    path(
        "pairwise/calibration/candidate/",
        api_pairwise_calibration.pairwise_calibration_candidate,
        name="pairwise_calibration_candidate",
    ),
    path(
        "pairwise/calibration/claim/",
        api_pairwise_calibration.pairwise_calibration_claim,
        name="pairwise_calibration_claim",
    ),
    path(
        "pairwise/calibration/pairs/<str:public_id>/judgment/",
        api_pairwise_calibration.pairwise_calibration_judge,
        name="pairwise_calibration_judge",
    ),
    path(
        "pairwise/qualification/",
        api_pairwise_calibration.pairwise_qualification,
        name="pairwise_qualification",
    ),
    path(
        "pairwise/qualifications/",
        api_pairwise_calibration.PairQualificationList.as_view(),
        name="pairwise_qualifications",
    ),
    # OTLP/HTTP (issue 28): the path an OpenTelemetry exporter appends, without a trailing slash
    path("otlp/v1/traces", otlp.otlp_traces, name="otlp_traces"),
    path("sampling-rules/", api_sampling.SamplingRuleList.as_view(), name="sampling_rules"),
    path(
        "sampling-rules/<int:pk>/", api_sampling.SamplingRuleDetail.as_view(), name="sampling_rule"
    ),
    re_path(r"^(?P<rest>[\s\S]*)$", api.not_found, name="not_found"),
]
