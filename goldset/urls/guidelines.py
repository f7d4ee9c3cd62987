from django.urls import path

from goldset.views import guidelines

app_name = "guidelines"

urlpatterns = [
    path("", guidelines.guideline_list, name="list"),
    path("<slug:domain>/<str:task>/", guidelines.guideline_edit, name="edit"),
    path("<slug:domain>/<str:task>/v<int:version>/", guidelines.guideline_version, name="version"),
]
