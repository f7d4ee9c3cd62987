from django.urls import path

from goldset.views import project_bundle, projects

app_name = "projects"

urlpatterns = [
    path("projects/new/", projects.create, name="create"),
    path("project/settings/", projects.settings_page, name="settings"),
    path("project/settings/protocol/", projects.protocol_settings, name="protocol_settings"),
    path("project/archive/", projects.archive, name="archive"),
    path("project/delete/", projects.delete, name="delete"),
    path("project/bundle.tar.gz", project_bundle.download, name="bundle"),
    path("project/members/", projects.members, name="members"),
    path("project/members/<int:user_id>/remove/", projects.member_remove, name="member_remove"),
]
