from django.urls import path

from workbench import scim

app_name = "scim"

urlpatterns = [
    path("Users", scim.users, name="users"),
    path("Users/<str:scim_id>", scim.user, name="user"),
    path("Groups", scim.groups, name="groups"),
    path("Groups/<str:scim_id>", scim.group, name="group"),
    path("ServiceProviderConfig", scim.service_provider_config, name="service_provider_config"),
    path("ResourceTypes", scim.resource_types, name="resource_types"),
    path("ResourceTypes/<str:name>", scim.resource_type, name="resource_type"),
    path("Schemas", scim.schemas, name="schemas"),
    path("Schemas/<str:urn>", scim.schema, name="schema"),
]
