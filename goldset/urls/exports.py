from django.urls import path

from goldset.views import exports

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
]
