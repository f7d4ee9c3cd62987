from django.urls import path, register_converter

from goldset.views import exports


class VersionRefConverter:
    """A version named by tag or ``latest`` in a page URL (``versions/release-2026q4/``): never a
    number (``v7/`` is the number's own pattern, so links to a version by number stay
    ``v7/``); which version it names is the resolver's to say (404 for none)."""

    regex = r"(?![vV]?[0-9]+/)[A-Za-z0-9][A-Za-z0-9._-]{0,63}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(VersionRefConverter, "version_ref")

app_name = "exports"

urlpatterns = [
    path("", exports.version_list, name="versions"),
    path("freeze/", exports.version_freeze, name="freeze"),
    path("diff/", exports.version_diff, name="diff"),
    path("v<int:number>/", exports.version_detail, name="version"),
    path("v<int:number>/download/<str:fmt>/", exports.version_download, name="download"),
    path("tags/", exports.tag_set, name="tag_set"),
    path("tags/<str:name>/delete/", exports.tag_delete, name="tag_delete"),
    path("jobs/", exports.job_list, name="jobs"),
    path("jobs/compare/", exports.job_compare, name="compare"),
    path("jobs/<int:pk>/", exports.job_detail, name="job"),
    path("jobs/<int:pk>/retry/", exports.job_retry, name="retry"),
    path("jobs/<int:pk>/cancel/", exports.job_cancel, name="cancel"),
    path("jobs/<int:pk>/download/<str:fmt>/", exports.job_download, name="job_download"),
    # A version by tag or "latest": the same pages, read by the one resolver.
    path("<version_ref:ref>/", exports.version_detail, name="version"),
    path("<version_ref:ref>/download/<str:fmt>/", exports.version_download, name="download"),
]
