from django.urls import path

from workbench import saml_views

app_name = "saml"

urlpatterns = [
    path("metadata/", saml_views.saml_metadata, name="metadata"),
    path("login/", saml_views.saml_login, name="login"),
    path("acs/", saml_views.saml_acs, name="acs"),
    path("sls/", saml_views.saml_sls, name="sls"),
    path("logout/", saml_views.saml_logout, name="logout"),
]
