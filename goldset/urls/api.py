from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from goldset.views import api

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("projects/", api.project_list, name="projects"),
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
    path("versions/<int:number>/", api.VersionDetail.as_view(), name="version"),
    path(
        "versions/<int:number>/download/<str:fmt>/",
        api.version_download,
        name="version_download",
    ),
    path("jobs/", api.JobList.as_view(), name="jobs"),
    path("jobs/compare/", api.job_compare, name="job_compare"),
    path("jobs/<int:pk>/", api.JobDetail.as_view(), name="job"),
    path("jobs/<int:pk>/queries/", api.JobQueries.as_view(), name="job_queries"),
    path("agreement/", api.SnapshotList.as_view(), name="agreement_snapshots"),
    path("alerts/", api.alert_list, name="alerts"),
    re_path(r"^(?P<rest>[\s\S]*)$", api.not_found, name="not_found"),
]
