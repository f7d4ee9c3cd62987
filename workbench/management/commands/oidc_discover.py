"""``manage.py oidc_discover https://idp.example.org/.well-known/openid-configuration``: reads the
provider's discovery document once and prints the OIDC_OP_* lines for ``.env``. The workbench
itself never fetches the document at start (no network call while settings load)."""

import httpx
from django.core.management.base import BaseCommand, CommandError

FIELDS = {
    "OIDC_OP_ISSUER": "issuer",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}


class Command(BaseCommand):
    help = "Print the OIDC_OP_* settings from a provider's discovery document."

    def add_arguments(self, parser):
        parser.add_argument("url", help="the provider's /.well-known/openid-configuration URL")

    def handle(self, *args, url, **options):
        try:
            response = httpx.get(url, timeout=10, follow_redirects=True)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise CommandError(f"{url}: {exc}") from exc
        if not isinstance(document, dict) or "authorization_endpoint" not in document:
            raise CommandError(f"{url} is not an OpenID Connect discovery document")
        for name, key in FIELDS.items():
            self.stdout.write(f"{name}={document.get(key, '')}")
        algorithms = document.get("id_token_signing_alg_values_supported") or []
        if "RS256" not in algorithms:
            self.stderr.write(
                f"the provider signs ID tokens with {algorithms}: set OIDC_RP_SIGN_ALGO"
            )
