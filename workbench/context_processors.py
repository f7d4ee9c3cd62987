from django.conf import settings

from workbench.roles import Role, roles_of


def roles(request):
    held = roles_of(request.user) if hasattr(request, "user") else frozenset()
    return {
        "user_roles": held,
        "is_admin": Role.ADMIN in held,
        "is_lead": bool({Role.LEAD, Role.ADMIN} & held),
        "is_annotator": Role.ANNOTATOR in held,
    }


def sign_in(request):
    """What the login pages offer: the password form, the identity provider's button, or both."""
    return {
        "local_passwords_enabled": settings.LOCAL_PASSWORDS_ENABLED,
        "oidc_enabled": settings.OIDC_ENABLED,
        "oidc_provider_name": settings.OIDC_PROVIDER_NAME,
        "saml_enabled": settings.SAML_ENABLED,
        "saml_provider_name": settings.SAML_PROVIDER_NAME,
    }
