"""Sign-in through a real OpenID Connect provider (django-oauth-toolkit in its own process,
fixture ``oidc_provider``) in Chromium: the role comes from the provider's ``groups`` claim at
every sign-in, an unmapped user is refused on a page, and with local passwords off only the
provider's button is left."""

import io
import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import CommandError, call_command

from workbench.middleware import SessionSecurityMiddleware
from workbench.models import AuditEvent, OidcIdentity
from workbench.roles import roles_of

IDP_PASSWORD = "idp-pass-7Qw2"


def _sign_in(page, live_server, username):
    """From the login page through the provider's login form back to the workbench."""
    page.goto("/login/")
    page.click("text=Sign in with Test IdP")
    page.wait_for_url(re.compile(r".*/accounts/login/.*"))
    page.fill("#idp-username", username)
    page.fill("#idp-password", IDP_PASSWORD)
    with page.expect_navigation(url=lambda url: url.startswith(live_server.url)) as nav:
        page.click("#idp-submit")
    return nav.value


def _session_key(context):
    return next(c["value"] for c in context.cookies() if c["name"] == "sessionid")


def test_sign_in_through_the_provider_maps_groups_to_roles_refuses_the_unmapped_and_replaces_passwords(
    browser, live_server, oidc_provider, oidc_settings, transactional_db
):
    users = get_user_model().objects
    oidc_provider.set_user("alice", IDP_PASSWORD, ["goldset-annotators", "staff"], "a@x.org")
    oidc_provider.set_user("bob", IDP_PASSWORD, ["goldset-annotators", "goldset-leads"])
    oidc_provider.set_user("carol", IDP_PASSWORD, ["marketing"])
    contexts = {name: browser.new_context(base_url=live_server.url) for name in "abc"}
    try:
        pages = {name: ctx.new_page() for name, ctx in contexts.items()}
        for page in pages.values():
            page.set_default_timeout(15_000)

        # An annotator-mapped user lands signed in as an annotator, with our session stamps.
        signing_in = int(time.time())
        response = _sign_in(pages["a"], live_server, "alice")
        signed_in = time.time()
        assert response.status == 200 and pages["a"].url == f"{live_server.url}/"
        assert pages["a"].locator(".who").inner_text() == "alice · Annotator"
        alice = users.get(username="alice")
        assert roles_of(alice) == {"annotator"} and alice.email == "a@x.org"
        assert OidcIdentity.objects.get(user=alice).issuer == oidc_provider.issuer
        session = SessionStore(session_key=_session_key(contexts["a"])).load()
        assert signing_in <= session[SessionSecurityMiddleware.STARTED] <= signed_in
        login = AuditEvent.objects.get(verb="login", actor=alice)
        assert login.detail["method"] == "oidc" and login.detail["role"] == "annotator"

        # Several mapped groups: the strongest role wins.
        _sign_in(pages["b"], live_server, "bob")
        assert pages["b"].locator(".who").inner_text() == "bob · Adjudication lead"
        # ... and the session is ours: idle past SESSION_IDLE_TIMEOUT_SECONDS, it ends.
        store = SessionStore(session_key=_session_key(contexts["b"]))
        store[SessionSecurityMiddleware.SEEN] = int(time.time()) - 31 * 60
        store.save()
        pages["b"].goto("/")
        assert pages["b"].url.startswith(f"{live_server.url}/login/")

        # No mapped group: a page that says so, nobody signed in, no account created.
        response = _sign_in(pages["c"], live_server, "carol")
        assert response.status == 403
        assert "No access to this workbench" in pages["c"].locator("#oidc-failure").inner_text()
        assert not users.filter(username="carol").exists()
        refused = AuditEvent.objects.get(verb="login_refused")
        assert refused.detail["claim_values"] == ["marketing"]
        pages["c"].goto("/")
        assert pages["c"].url.startswith(f"{live_server.url}/login/")

        # A role changed at the provider applies at the next sign-in. Logging out here also
        # ends the provider's session (RP-initiated logout), so the provider asks again.
        oidc_provider.set_user("alice", IDP_PASSWORD, ["goldset-admins"], "a@x.org")
        assert pages["a"].locator(".who").inner_text() == "alice · Annotator"  # not before
        old_session = _session_key(contexts["a"])
        pages["a"].click("text=Log out")
        pages["a"].wait_for_url(re.compile(r".*/login/$"))
        assert not SessionStore().exists(old_session)
        _sign_in(pages["a"], live_server, "alice")
        assert pages["a"].locator(".who").inner_text() == "alice · Admin"
        alice = users.get(username="alice")  # roles_of caches on the object
        assert alice.is_staff and roles_of(alice) == {"admin"}
        changes = AuditEvent.objects.filter(verb="role_changed", actor=alice).order_by("id")
        assert [(e.detail["from"], e.detail["to"]) for e in changes] == [
            ([], ["annotator"]),
            (["annotator"], ["admin"]),
        ]

        # Local passwords off: the login pages keep only the provider's button, which works.
        oidc_settings.LOCAL_PASSWORDS_ENABLED = False
        page = contexts["c"].new_page()
        page.goto("/login/")
        assert page.locator("#id_password").count() == 0
        assert page.locator("#oidc-sign-in").inner_text() == "Sign in with Test IdP"
        page.goto("/django-admin/login/")
        assert page.locator("#login-form").count() == 0
        assert page.locator("#oidc-sign-in").is_visible()
        oidc_provider.set_user("carol", IDP_PASSWORD, ["goldset-leads"])
        page.goto("/login/")
        page.click("text=Sign in with Test IdP")  # still signed in at the provider
        page.wait_for_url(f"{live_server.url}/")
        assert page.locator(".who").inner_text() == "carol · Adjudication lead"
    finally:
        for context in contexts.values():
            context.close()


def test_oidc_discover_prints_the_provider_settings_from_its_discovery_document(oidc_provider):
    out = io.StringIO()
    call_command("oidc_discover", oidc_provider.discovery_url, stdout=out)
    printed = dict(line.split("=", 1) for line in out.getvalue().splitlines())
    expected = oidc_provider.workbench_settings()
    assert printed == {name: expected[name] for name in printed}
    assert len(printed) == 6
    with pytest.raises(CommandError, match="not an OpenID Connect discovery document"):
        call_command("oidc_discover", f"{oidc_provider.issuer}/.well-known/jwks.json")
    with pytest.raises(CommandError, match="405"):
        call_command("oidc_discover", f"{oidc_provider.url}/test/users/")
