from django.urls import path

from goldset.views import imports

app_name = "imports"

urlpatterns = [
    path("<int:pk>/", imports.import_job, name="job"),
    path("<int:pk>/cancel/", imports.import_cancel, name="cancel"),
    path("<int:pk>/retry/", imports.import_retry, name="retry"),
]
