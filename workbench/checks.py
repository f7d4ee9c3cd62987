"""System checks (``manage.py check``, run before ``runserver`` and by the deploy check): an
OpenID Connect configuration that cannot sign anyone in is an error at start, not at the first
sign-in."""

import os

from django.conf import settings
from django.core.checks import Error, register

from workbench.roles import parse_role_map

REQUIRED_FOR_OIDC = (
    "OIDC_RP_CLIENT_ID",
    "OIDC_RP_CLIENT_SECRET",
    "OIDC_OP_ISSUER",  # every ID token's iss must equal it
    "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_OP_USER_ENDPOINT",
    "OIDC_ROLE_CLAIM",
)


@register("security")
def check_oidc_settings(app_configs=None, **kwargs):
    if not settings.OIDC_ENABLED:
        if not settings.LOCAL_PASSWORDS_ENABLED and not settings.SAML_ENABLED:
            return [
                Error(
                    "LOCAL_PASSWORDS_ENABLED=false without OIDC_ENABLED or SAML_ENABLED: nobody "
                    "can sign in.",
                    hint="Enable OpenID Connect or SAML (README, Team mode) or local passwords.",
                    id="workbench.E101",
                )
            ]
        return []
    errors = [
        Error(f"OIDC_ENABLED needs {name}.", id="workbench.E102")
        for name in REQUIRED_FOR_OIDC
        if not getattr(settings, name, "")
    ]
    if settings.OIDC_RP_SIGN_ALGO.startswith(("RS", "ES")) and not settings.OIDC_OP_JWKS_ENDPOINT:
        errors.append(
            Error(
                f"OIDC_RP_SIGN_ALGO={settings.OIDC_RP_SIGN_ALGO} needs OIDC_OP_JWKS_ENDPOINT.",
                id="workbench.E103",
            )
        )
    try:
        if not parse_role_map(settings.OIDC_ROLE_MAP):
            errors.append(
                Error(
                    "OIDC_ROLE_MAP is empty: every sign-in would be refused.",
                    hint="e.g. OIDC_ROLE_MAP=goldset-annotators:annotator,goldset-leads:lead",
                    id="workbench.E104",
                )
            )
    except ValueError as exc:
        errors.append(Error(str(exc), id="workbench.E104"))
    if "workbench.auth.RoleMappingOIDCBackend" not in settings.AUTHENTICATION_BACKENDS:
        errors.append(
            Error(
                "OIDC_ENABLED without RoleMappingOIDCBackend in AUTHENTICATION_BACKENDS.",
                id="workbench.E105",
            )
        )
    return errors


REQUIRED_FOR_SAML = ("SAML_IDP_METADATA_FILE", "SAML_SP_BASE_URL", "SAML_ROLE_ATTRIBUTE")


@register("security")
def check_saml_settings(app_configs=None, **kwargs):
    """SAML_ENABLED needs the IdP's metadata file, the public base URL, the xmlsec1 binary and
    a role map that grants something."""
    if not settings.SAML_ENABLED:
        return []
    errors = [
        Error(f"SAML_ENABLED needs {name}.", id="workbench.E111")
        for name in REQUIRED_FOR_SAML
        if not getattr(settings, name, "")
    ]
    for name in ("SAML_IDP_METADATA_FILE", "SAML_XMLSEC_BINARY"):
        path = getattr(settings, name, "")
        if path and not os.path.exists(path):
            errors.append(Error(f"{name}={path} does not exist.", id="workbench.E112"))
    if bool(settings.SAML_SP_KEY_FILE) != bool(settings.SAML_SP_CERT_FILE):
        errors.append(
            Error("SAML_SP_KEY_FILE and SAML_SP_CERT_FILE go together.", id="workbench.E113")
        )
    try:
        if not parse_role_map(settings.SAML_ROLE_MAP):
            errors.append(
                Error(
                    "SAML_ROLE_MAP is empty: every sign-in would be refused.", id="workbench.E114"
                )
            )
    except ValueError as exc:
        errors.append(Error(str(exc).replace("OIDC_", "SAML_"), id="workbench.E114"))
    return errors
