"""Issue 24: with OpenID Connect on, the ID token's ``iss`` was checked only when the optional
OIDC_OP_ISSUER was set, and a token without ``exp`` was accepted. The backend now verifies
tokens against the test identity provider's real JWKS (tests/oidc_provider), and tokens forged
with its own key but lacking ``iss`` or ``exp`` are refused. Also: API tokens end when the
provider stops vouching for their owner, and may have a maximum lifetime."""

import datetime as dt
import time
from pathlib import Path

import httpx
import jwt
import pytest
from django.core.exceptions import SuspiciousOperation
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from workbench.auth import OidcSignInFailed, RoleMappingOIDCBackend
from workbench.checks import check_oidc_settings
from workbench.models import ApiToken, AuditEvent
from workbench.roles import Role
from workbench.services.accounts import SignInRefused, sign_in_with_provider
from workbench.services.api_tokens import create_api_token
from workbench.services.rate_limits import reset_cache_outage


@pytest.fixture
def provider(settings, oidc_provider):
    """The workbench's settings for the running test provider, and a way to sign ID tokens
    with the provider's own key (as a forger holding it could)."""
    for name, value in oidc_provider.workbench_settings().items():
        setattr(settings, name, value)
    key = Path(oidc_provider.env["IDP_KEY_FILE"]).read_bytes()
    jwks = httpx.get(settings.OIDC_OP_JWKS_ENDPOINT, timeout=10).json()
    kid = jwks["keys"][0]["kid"]

    def sign(**claims):
        payload = {
            "iss": oidc_provider.issuer,
            "aud": settings.OIDC_RP_CLIENT_ID,
            "sub": "42",
            "nonce": "n",
            "iat": int(time.time()),
            "exp": int(time.time()) + 300,
            **claims,
        }
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})

    sign.issuer = oidc_provider.issuer
    return sign


def test_a_token_signed_by_the_provider_with_iss_and_exp_is_accepted(provider):
    payload = RoleMappingOIDCBackend().verify_token(provider(), nonce="n")
    assert payload["iss"] == provider.issuer and payload["sub"] == "42"


@pytest.mark.parametrize(
    "claims,why",
    [
        ({"iss": None}, "names no issuer"),
        ({"iss": "http://127.0.0.1:1/o"}, "another issuer"),
        ({"exp": None}, "has no expiry"),
        ({"exp": "tomorrow"}, None),  # PyJWT refuses a non-numeric exp itself (a 400 page)
    ],
)
def test_forged_tokens_without_issuer_or_expiry_are_refused(provider, claims, why):
    with pytest.raises((OidcSignInFailed, jwt.PyJWTError, SuspiciousOperation)) as refused:
        RoleMappingOIDCBackend().verify_token(provider(**claims), nonce="n")
    if why:
        assert why in str(refused.value)


def test_without_an_issuer_configured_no_token_is_accepted(provider, settings):
    settings.OIDC_OP_ISSUER = ""
    with pytest.raises(OidcSignInFailed, match="OIDC_OP_ISSUER is not set"):
        RoleMappingOIDCBackend().verify_token(provider(), nonce="n")
    assert "workbench.E102" in [e.id for e in check_oidc_settings()]


# ---------------------------------------------------------------- API tokens and the provider


def _sign_in(role, values=()):
    return sign_in_with_provider(
        issuer="https://idp.example.org",
        subject="sub-77",
        claims={"preferred_username": "ivan"},
        role=role,
        provider="Acme SSO",
        values=list(values),
    )


@pytest.mark.django_db
def test_a_refused_sign_in_revokes_every_api_token_of_the_user():
    """Someone removed from the role groups at the provider kept working API tokens."""
    reset_cache_outage()
    user = _sign_in(Role.LEAD, ["goldset-leads"])
    _, raw = create_api_token(user=user, name="ci")
    create_api_token(user=user, name="laptop", expires_in_days=30)
    client = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    assert client.get(reverse("api:versions"), **bearer).status_code == 200
    with pytest.raises(SignInRefused):
        _sign_in(None, ["marketing"])
    assert not ApiToken.objects.filter(user=user, revoked_at=None).exists()
    event = AuditEvent.objects.get(verb="api_tokens_revoked")
    assert event.detail["reason"] == "oidc_sign_in_refused:no_role"
    assert len(event.detail["prefixes"]) == 2
    assert client.get(reverse("api:versions"), **bearer).status_code == 401


@pytest.mark.django_db
def test_a_maximum_lifetime_bounds_new_and_old_tokens(settings, lead, client_for):
    reset_cache_outage()
    old, old_raw = create_api_token(user=lead, name="old")  # no expiry, made before the limit
    ApiToken.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=31))
    settings.API_TOKEN_MAX_LIFETIME_DAYS = 30
    never, _ = create_api_token(user=lead, name="asks-never", expires_in_days=None)
    long, _ = create_api_token(user=lead, name="asks-a-year", expires_in_days=365)
    for token in (never, long):
        assert token.expires_at <= timezone.now() + dt.timedelta(days=30)
    client = Client()
    assert (
        client.get(reverse("api:versions"), HTTP_AUTHORIZATION=f"Bearer {old_raw}").status_code
        == 401
    )
    page = client_for(lead).get(reverse("api_tokens"))
    choices = dict(page.context["form"].fields["expires_in_days"].choices)
    assert "" not in choices and set(choices) == {30}  # no "Never", nothing longer
    html = page.content.decode()
    assert "at most 30 days" in html and "(expired)" in html  # the old token's end is shown
    old.refresh_from_db()
    ends = timezone.localtime(old.created_at + dt.timedelta(days=30))
    assert f"{ends:%Y-%m-%d %H:%M} (expired)" in html


# ---------------------------------------------------------------- a real sign-in, no browser


@pytest.mark.django_db
def test_a_real_sign_in_passes_the_checks_and_is_audited_with_address_and_user_agent(
    provider, oidc_provider, settings
):
    """The whole authorization-code flow against the test provider, scripted: its ID token
    carries iss and exp, and the sign-in's audit event names the browser's address and agent."""
    settings.AUTHENTICATION_BACKENDS = [
        "workbench.auth.ThrottledModelBackend",
        "workbench.auth.RoleMappingOIDCBackend",
    ]
    oidc_provider.register_client("http://testserver/oidc/callback/")
    oidc_provider.set_user("wendy", "idp-pass-1", groups=["goldset-leads"])
    browser = Client(REMOTE_ADDR="203.0.113.61", HTTP_USER_AGENT="Firefox/140 (edges)")
    start = browser.get(reverse("oidc_authentication_init"))
    assert start.status_code == 302
    with httpx.Client(follow_redirects=False, timeout=30) as idp:
        to_login = idp.get(start["Location"])
        login_url = httpx.URL(start["Location"]).join(to_login.headers["location"])
        form = idp.get(login_url)
        token = form.cookies.get("idp_csrftoken") or idp.cookies.get("idp_csrftoken")
        back = idp.post(
            login_url,
            data={
                "username": "wendy",
                "password": "idp-pass-1",
                "csrfmiddlewaretoken": token,
                "next": login_url.params["next"],
            },
            headers={"Referer": str(login_url)},
        )
        authorize = idp.get(login_url.join(back.headers["location"]))
        callback = httpx.URL(authorize.headers["location"])
    assert str(callback).startswith("http://testserver/oidc/callback/?")
    done = browser.get(f"{callback.path}?{callback.query.decode()}")
    assert done.status_code == 302, done.content[:500]
    login = AuditEvent.objects.get(verb="login")
    assert login.actor.username == "wendy" and login.detail["method"] == "oidc"
    assert login.detail["issuer"] == provider.issuer
    assert login.detail["address"] == "203.0.113.61"
    assert login.detail["user_agent"] == "Firefox/140 (edges)"
