from django.contrib import admin
from django.urls import include, path

from workbench import views

handler403 = "workbench.views.permission_denied"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("health/", views.health, name="health"),
    path(
        "oidc/authenticate/", views.OidcAuthenticateView.as_view(), name="oidc_authentication_init"
    ),
    path("oidc/callback/", views.OidcCallbackView.as_view(), name="oidc_authentication_callback"),
    path("oidc/logout/", views.oidc_logout, name="oidc_logout"),
    path("tokens/", views.api_tokens, name="api_tokens"),
    path("tokens/<int:pk>/revoke/", views.api_token_revoke, name="api_token_revoke"),
    path("identity/", include("workbench.identity_urls")),
    path("scim/v2/", include("workbench.scim_urls")),
    path("saml/", include("workbench.saml_urls")),
    path("corpus/", include("goldset.urls.corpus")),
    path("routing/", include("goldset.urls.routing")),
    path("quality/", include("goldset.urls.quality")),
    path("curation/", include("goldset.urls.curation")),
    path("answers/", include("goldset.urls.answers")),
    path("pairwise/", include("goldset.urls.pairwise")),
    path("promotion/", include("goldset.urls.promotion")),
    path("versions/", include("goldset.urls.exports")),
    path("evaluators/", include("goldset.urls.evaluators")),
    path("imports/", include("goldset.urls.imports")),
    path("inbox/", include("goldset.urls.inbox")),
    path("guidelines/", include("goldset.urls.guidelines")),
    path("webhooks/", include("goldset.urls.webhooks")),
    path("audit/", include("goldset.urls.audit")),
    path("traces/", include("goldset.urls.traces")),
    path("api/v1/", include("goldset.urls.api")),
    path("", include("goldset.urls.projects")),
    path("django-admin/", admin.site.urls),
]
