from django.urls import path

from workbench import identity_views

app_name = "identity"

urlpatterns = [
    path("", identity_views.identity_page, name="page"),
    path(
        "scim-tokens/<int:pk>/revoke/", identity_views.scim_token_revoke, name="scim_token_revoke"
    ),
    path("people/<int:pk>/<slug:action>/", identity_views.person_action, name="person_action"),
]
