"""The login pages with OpenID Connect on or off and local passwords on or off, and the OIDC
URLs' answers that need no provider (the browser test signs in through a real one)."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from tests.factories import TEST_PASSWORD
from workbench.models import AuditEvent, LoginThrottle
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db

IDP = "https://idp.example.org/realms/acme/protocol/openid-connect"


@pytest.fixture
def oidc_on(settings):
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME = "Acme SSO"
    settings.OIDC_RP_CLIENT_ID = "goldset"
    settings.OIDC_RP_CLIENT_SECRET = "s3cret"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{IDP}/auth"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{IDP}/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{IDP}/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{IDP}/certs"
    settings.OIDC_ROLE_MAP = "goldset-annotators:annotator"
    settings.AUTHENTICATION_BACKENDS = [
        "workbench.auth.ThrottledModelBackend",
        "workbench.auth.RoleMappingOIDCBackend",
    ]
    return settings


def test_the_oidc_urls_answer_404_while_oidc_is_off(client, annotator):
    assert client.get(reverse("oidc_authentication_init")).status_code == 404
    assert client.get(reverse("oidc_authentication_callback")).status_code == 404
    client.force_login(annotator)
    assert client.post(reverse("oidc_logout")).status_code == 404
    page = client.get(reverse("login"), follow=True).content.decode()
    assert "Sign in with" not in page


def test_the_login_page_offers_the_provider_beside_the_password_form(client, oidc_on):
    page = client.get(reverse("login") + "?next=/corpus/").content.decode()
    assert "Sign in with Acme SSO" in page and 'id="id_password"' in page
    assert reverse("oidc_authentication_init") + "?next=/corpus/" in page


def test_starting_a_sign_in_sends_the_browser_to_the_provider_with_state_nonce_and_pkce(
    client, oidc_on
):
    response = client.get(reverse("oidc_authentication_init") + "?next=/corpus/")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    query = parse_qs(target.query)
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{IDP}/auth"
    assert query["client_id"] == ["goldset"] and query["response_type"] == ["code"]
    assert query["redirect_uri"] == ["http://testserver/oidc/callback/"]
    assert query["code_challenge_method"] == ["S256"] and query["nonce"][0]
    assert query["state"][0] in client.session["oidc_states"]
    assert client.session["oidc_login_next"] == "/corpus/"


@pytest.mark.parametrize(
    "query,status,text",
    [
        ("?error=access_denied&state=x", 400, "Sign-in cancelled"),
        ("?code=abc&state=never-started", 400, "Sign-in expired"),
        ("", 400, "Sign-in expired"),
    ],
)
def test_a_callback_that_cannot_sign_in_answers_a_page_not_a_500(
    client, oidc_on, query, status, text
):
    if "never-started" in query:  # a session with other states: the unknown one is refused
        client.get(reverse("oidc_authentication_init"))
    response = client.get(reverse("oidc_authentication_callback") + query)
    assert response.status_code == status
    assert text in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_provider_that_cannot_be_reached_is_a_page_and_an_audit_event(client, oidc_on):
    oidc_on.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"  # discard port: refused
    start = client.get(reverse("oidc_authentication_init"))
    state = parse_qs(urlsplit(start["Location"]).query)["state"][0]
    response = client.get(reverse("oidc_authentication_callback") + f"?code=c&state={state}")
    assert response.status_code == 400
    assert "could not be verified" in response.content.decode()
    event = AuditEvent.objects.get(verb="login_failed")
    assert event.detail["method"] == "oidc" and event.detail["reason"] == "provider"


def test_with_local_passwords_off_no_password_form_signs_anyone_in(
    client, oidc_on, annotator, make_user
):
    admin = make_user(Role.ADMIN, username="root-admin", is_superuser=True)
    oidc_on.LOCAL_PASSWORDS_ENABLED = False
    page = client.get(reverse("login")).content.decode()
    assert 'id="id_password"' not in page and "Sign in with Acme SSO" in page
    admin_page = client.get("/django-admin/login/").content.decode()
    assert 'id="login-form"' not in admin_page and "Sign in with Acme SSO" in admin_page

    response = client.post(
        reverse("login"), {"username": annotator.username, "password": TEST_PASSWORD}
    )
    assert response.status_code == 403
    assert "Password sign-in is switched off" in response.content.decode()
    assert "_auth_user_id" not in client.session
    client.post("/django-admin/login/", {"username": admin.username, "password": TEST_PASSWORD})
    assert "_auth_user_id" not in client.session
    assert client.get("/django-admin/").status_code == 302  # to the admin's login

    refused = AuditEvent.objects.filter(verb="login_refused").order_by("id")
    assert [(e.detail["form"], e.detail["reason"]) for e in refused] == [
        ("login", "passwords_off"),
        ("admin", "passwords_off"),
    ]
    assert not LoginThrottle.objects.exists()  # no password was checked, so nothing counted

    _, raw = create_api_token(user=annotator, name="ci")
    api = client.get("/api/v1/domains/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.status_code == 200  # API tokens keep working


def test_with_local_passwords_on_the_lockout_still_counts(client, oidc_on, annotator):
    oidc_on.LOGIN_MAX_FAILURES = 2
    for _ in range(2):
        client.post(reverse("login"), {"username": annotator.username, "password": "wrong"})
    response = client.post(
        reverse("login"), {"username": annotator.username, "password": TEST_PASSWORD}
    )
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_oidc_logout_ends_the_session_here_then_at_the_provider(client, oidc_on, annotator):
    oidc_on.OIDC_OP_LOGOUT_ENDPOINT = f"{IDP}/logout"
    client.force_login(annotator)
    session = client.session
    session["oidc_id_token"] = "the.id.token"
    session.save()
    response = client.post(reverse("oidc_logout"))
    target = urlsplit(response["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{IDP}/logout"
    assert parse_qs(target.query)["id_token_hint"] == ["the.id.token"]
    assert parse_qs(target.query)["post_logout_redirect_uri"] == ["http://testserver/login/"]
    assert "_auth_user_id" not in client.session
    assert AuditEvent.objects.filter(verb="logout", actor=annotator).count() == 1
