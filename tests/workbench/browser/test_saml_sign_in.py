"""SAML sign-in in Chromium (issue 31): the login page's button goes to a real IdP (pysaml2's,
served over HTTP by a thread of this test, keys made at test time), whose form posts the signed
assertion back; the person lands signed in with the role the attribute maps to. The same
assertion posted again from another browser is refused on a page. A forged answer (unsigned,
signed by a key the workbench was never given, or changed after signing) that the IdP's own form
posts is refused on a page too: nobody is signed in, and the refusal is audited."""

import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from django.urls import reverse

from tests.conftest import free_port
from tests.saml_idp import FORGERIES, TAMPERED_UID, TestIdp, make_key_pair, wsgi_app
from workbench.models import AuditEvent, OidcIdentity
from workbench.roles import roles_of


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def saml_idp_server(request, settings, tmp_path, live_server):
    """The IdP over HTTP; parametrized indirectly with one of ``FORGERIES``, every answer it
    gives is forged that way (default: genuine answers)."""
    forgery = getattr(request, "param", None)
    port = free_port()
    idp = TestIdp(tmp_path, f"http://127.0.0.1:{port}")
    sp_key, sp_cert = make_key_pair(tmp_path, "sp")
    settings.SAML_ENABLED = True
    settings.SAML_PROVIDER_NAME = "Test IdP"
    settings.SAML_IDP_METADATA_FILE = idp.write_metadata()
    settings.SAML_SP_BASE_URL = live_server.url
    settings.SAML_SP_KEY_FILE, settings.SAML_SP_CERT_FILE = sp_key, sp_cert
    settings.SAML_ROLE_ATTRIBUTE = "groups"
    settings.SAML_ROLE_MAP = "gs-leads:lead"
    settings.SAML_ALLOW_IDP_INITIATED = False
    settings.SAML_CLOCK_SKEW_SECONDS = 60
    idp.trust(Client().get(reverse("saml:metadata")).content.decode())
    attributes = {"groups": ["gs-leads"], "uid": ["lin"], "mail": ["lin@example.org"]}
    server = make_server(
        "127.0.0.1",
        port,
        wsgi_app(idp, subject="lin-42", attributes=attributes, forgery=forgery),
        handler_class=_Quiet,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield idp
    server.shutdown()
    server.server_close()


def test_saml_sign_in_in_chromium_and_a_replayed_assertion_is_refused(
    browser, live_server, saml_idp_server, transactional_db
):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/login/")
    page.click("text=Sign in with Test IdP")
    page.wait_for_selector("#continue")
    assert page.url.startswith(saml_idp_server.base)
    posted = page.eval_on_selector("input[name=SAMLResponse]", "e => e.value")
    with page.expect_navigation(url=lambda url: url.startswith(live_server.url)):
        page.click("#continue")
    page.wait_for_load_state()
    assert "/login/" not in page.url
    user = OidcIdentity.objects.get(subject="lin-42").user
    assert user.username == "lin" and roles_of(user) == {"adjudication_lead"}
    assert AuditEvent.objects.get(verb="login").detail["method"] == "saml"

    # the captured assertion, posted again from another browser, signs nobody in
    thief = browser.new_context(base_url=live_server.url)
    other = thief.new_page()
    other.set_default_timeout(15_000)
    other.goto("/login/")
    other.set_content(
        f'<form method="post" action="{live_server.url}/saml/acs/">'
        f'<input type="hidden" name="SAMLResponse" value="{posted}">'
        '<button id="replay" type="submit">replay</button></form>'
    )
    with other.expect_navigation() as nav:
        other.click("#replay")
    assert nav.value.status == 400
    assert other.locator("#saml-reason").get_attribute("data-reason") == "unsolicited"
    assert AuditEvent.objects.filter(verb="login_failed", detail__method="saml").exists()
    context.close()
    thief.close()


@pytest.mark.parametrize("saml_idp_server", FORGERIES, indirect=True)
def test_a_forged_assertion_is_refused_in_chromium(
    browser, live_server, saml_idp_server, transactional_db
):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/login/")
    page.click("text=Sign in with Test IdP")
    page.wait_for_selector("#continue")
    assert page.url.startswith(saml_idp_server.base)
    with page.expect_navigation(url=lambda url: url.startswith(live_server.url)) as nav:
        page.click("#continue")  # the IdP's own form posts the forged answer to our ACS

    # the refusal page, with the reason
    assert nav.value.status == 400
    assert page.url == f"{live_server.url}/saml/acs/"
    assert "did not work" in page.locator("h1").inner_text()
    assert page.locator("#saml-reason").get_attribute("data-reason") == "signature"

    # nobody is signed in: a protected page sends this browser to the login page
    page.goto("/tokens/")
    assert page.url.startswith(f"{live_server.url}/login/")
    cookie = django_settings.SESSION_COOKIE_NAME
    for key in (c["value"] for c in context.cookies() if c["name"] == cookie):
        assert "_auth_user_id" not in SessionStore(session_key=key).load()
    assert not OidcIdentity.objects.exists()
    assert not get_user_model().objects.filter(username__in=("lin", TAMPERED_UID)).exists()

    # audited: the failed sign-in with its reason, and no login
    event = AuditEvent.objects.get(verb="login_failed")
    assert event.detail["method"] == "saml" and event.detail["reason"] == "signature"
    assert not AuditEvent.objects.filter(verb="login").exists()
    context.close()
