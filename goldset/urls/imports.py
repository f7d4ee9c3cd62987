from django.urls import path

from goldset.views import imports

app_name = "imports"

urlpatterns = [
    path("<int:pk>/", imports.import_job, name="job"),
]
