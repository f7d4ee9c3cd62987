"""SAML 2.0 sign-in (issue 31) against a real IdP (pysaml2's, keys made at test time): the SP's
metadata, SP-initiated sign-in with the role from an attribute, single logout both ways; and the
answers that must be refused, each a 4xx and audited: unsigned, signed by another key, changed
after signing, re-used, for another audience or recipient, outside the clock skew allowance,
unsolicited."""

import base64
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from goldset.models import Project, ProjectMembership
from tests.factories import default_project
from tests.saml_idp import TestIdp, make_key_pair
from workbench.models import AuditEvent, OidcIdentity, SamlAssertion
from workbench.roles import Role

pytestmark = pytest.mark.django_db

SP = "http://testserver"
ADA = {"groups": ["gs-annotators"], "mail": ["ada@example.org"], "uid": ["ada"]}


def configure(settings, tmp_path, base: str = SP) -> TestIdp:
    """A fresh IdP at http://idp.test trusted by the SP at ``base``, and back."""
    idp = TestIdp(tmp_path, "http://idp.test")
    sp_key, sp_cert = make_key_pair(tmp_path, "sp")
    settings.SAML_ENABLED = True
    settings.SAML_PROVIDER_NAME = "Test IdP"
    settings.SAML_IDP_METADATA_FILE = idp.write_metadata()
    settings.SAML_SP_BASE_URL = base
    settings.SAML_SP_KEY_FILE, settings.SAML_SP_CERT_FILE = sp_key, sp_cert
    settings.SAML_ROLE_ATTRIBUTE = "groups"
    settings.SAML_ROLE_MAP = "gs-annotators:annotator,gs-leads:lead,gs-bot:customer-bot:lead"
    settings.SAML_ALLOW_IDP_INITIATED = False
    settings.SAML_CLOCK_SKEW_SECONDS = 60
    metadata = Client().get(reverse("saml:metadata"))
    assert metadata.status_code == 200
    idp.trust(metadata.content.decode())
    return idp


@pytest.fixture
def idp(settings, tmp_path):
    return configure(settings, tmp_path)


def _start(client: Client, next_url: str = "") -> str:
    started = client.get(reverse("saml:login"), {"next": next_url} if next_url else {})
    assert started.status_code == 302
    location = started["Location"]
    assert location.startswith("http://idp.test/sso?SAMLRequest=")
    return location


def _post(client: Client, fields: dict):
    return client.post(
        reverse("saml:acs"),
        {k: v for k, v in fields.items() if k in ("SAMLResponse", "RelayState")},
    )


def _refused(response, reason: str, status: int = 400):
    assert response.status_code == status, response.content[:500]
    page = response.content.decode()
    assert f'data-reason="{reason}"' in page
    if reason not in ("no_role", "inactive"):
        event = AuditEvent.objects.filter(verb="login_failed").first()
        assert event.detail["method"] == "saml" and event.detail["reason"] == reason
    assert "_auth_user_id" not in response.wsgi_request.session


def test_the_metadata_names_our_entity_acs_and_logout_urls(idp):
    xml = Client().get(reverse("saml:metadata")).content.decode()
    assert 'entityID="http://testserver/saml/metadata/"' in xml
    assert "http://testserver/saml/acs/" in xml and "http://testserver/saml/sls/" in xml
    assert 'WantAssertionsSigned="true"' in xml


def test_saml_pages_are_404_while_saml_is_off(settings):
    settings.SAML_ENABLED = False
    c = Client()
    assert c.get(reverse("saml:metadata")).status_code == 404
    assert c.get(reverse("saml:login")).status_code == 404
    assert c.post(reverse("saml:acs"), {"SAMLResponse": "x"}).status_code == 404


def test_sp_initiated_sign_in_maps_the_attribute_to_roles_and_logs_out_at_the_idp(idp):
    bot = Project.objects.create(name="Customer bot", slug="customer-bot")
    c = Client()
    location = _start(c, "/tokens/")
    fields = idp.answer(
        location, subject="ada-7f3", attributes={**ADA, "groups": ["gs-annotators", "gs-bot"]}
    )
    answered = _post(c, fields)
    assert answered.status_code == 302 and answered["Location"] == "/tokens/"
    identity = OidcIdentity.objects.get(issuer=idp.entity_id, subject="ada-7f3")
    user = identity.user
    assert user.username == "ada" and user.email == "ada@example.org"
    assert ProjectMembership.objects.get(user=user, project=default_project()).role == (
        Role.ANNOTATOR
    )
    assert ProjectMembership.objects.get(user=user, project=bot).role == Role.LEAD
    tokens_page = c.get(reverse("api_tokens"))
    assert tokens_page.status_code == 200
    assert f'action="{reverse("saml:logout")}"' in tokens_page.content.decode()
    login = AuditEvent.objects.get(verb="login")
    assert login.detail["method"] == "saml" and login.actor == user
    assert SamlAssertion.objects.count() == 1

    # single logout, SP-initiated: ours ends, then the IdP's answer comes back to the SLS
    out = c.post(reverse("saml:logout"))
    assert out.status_code == 200
    target = out.context["target"]
    assert target.startswith("http://idp.test/slo?SAMLRequest=")
    assert c.get(reverse("api_tokens")).status_code == 302
    back = idp.answer_logout(target)
    path = urlsplit(back)
    done = c.get(path.path + "?" + path.query)
    assert done.status_code == 302 and done["Location"] == reverse("login")


def test_idp_initiated_single_logout_ends_the_persons_sessions(idp):
    c = Client()
    _post(c, idp.answer(_start(c), subject="ada-7f3", attributes=ADA))
    other = Client()
    _post(other, idp.answer(_start(other), subject="ada-7f3", attributes=ADA))
    assert c.get(reverse("api_tokens")).status_code == 200

    request = idp.logout_request(
        sp_entity_id=f"{SP}/saml/metadata/", sls=f"{SP}/saml/sls/", subject="ada-7f3"
    )
    path = urlsplit(request)
    answered = Client().get(path.path + "?" + path.query)
    assert answered.status_code == 302
    assert answered["Location"].startswith("http://idp.test/slo?SAMLResponse=")
    assert c.get(reverse("api_tokens")).status_code == 302
    assert other.get(reverse("api_tokens")).status_code == 302

    unsigned = path.query.split("&SigAlg=")[0]
    refused = Client().get(path.path + "?" + unsigned)
    assert refused.status_code == 400
    assert AuditEvent.objects.filter(verb="saml_logout_refused").exists()


def test_an_unsigned_assertion_is_refused(idp):
    c = Client()
    fields = idp.answer(_start(c), subject="ada-7f3", attributes=ADA, forgery="unsigned")
    _refused(_post(c, fields), "signature")
    assert not OidcIdentity.objects.exists()


def test_an_assertion_signed_by_another_key_is_refused(idp):
    c = Client()
    fields = idp.answer(_start(c), subject="root", attributes=ADA, forgery="other_key")
    _refused(_post(c, fields), "signature")
    assert not OidcIdentity.objects.exists()


def test_an_assertion_changed_after_signing_is_refused(idp):
    c = Client()
    fields = idp.answer(_start(c), subject="ada-7f3", attributes=ADA, forgery="tampered")
    assert "root-0" in base64.b64decode(fields["SAMLResponse"]).decode()  # another person now
    _refused(_post(c, fields), "signature")
    assert not OidcIdentity.objects.exists()


def test_a_reused_assertion_is_refused(idp):
    c = Client()
    fields = idp.answer(_start(c), subject="ada-7f3", attributes=ADA)
    assert _post(c, fields).status_code == 302
    thief = Client()
    _refused(_post(thief, fields), "unsolicited")  # its request was answered already


def test_a_reused_assertion_is_refused_even_where_idp_initiated_answers_are_allowed(idp, settings):
    settings.SAML_ALLOW_IDP_INITIATED = True
    fields = idp.unsolicited(
        sp_entity_id=f"{SP}/saml/metadata/",
        acs=f"{SP}/saml/acs/",
        subject="ada-7f3",
        attributes=ADA,
    )
    assert _post(Client(), fields).status_code == 302
    _refused(_post(Client(), fields), "replay")


def test_idp_initiated_answers_are_refused_by_default(idp):
    fields = idp.unsolicited(
        sp_entity_id=f"{SP}/saml/metadata/",
        acs=f"{SP}/saml/acs/",
        subject="ada-7f3",
        attributes=ADA,
    )
    _refused(_post(Client(), fields), "unsolicited")


def test_an_assertion_for_another_audience_is_refused(idp):
    c = Client()
    fields = idp.answer(
        _start(c), subject="ada-7f3", attributes=ADA, audience="https://other.example.org/sp"
    )
    _refused(_post(c, fields), "audience")


def test_an_assertion_for_another_recipient_is_refused(idp):
    c = Client()
    fields = idp.answer(
        _start(c), subject="ada-7f3", attributes=ADA, destination="https://other.example.org/acs"
    )
    _refused(_post(c, fields), "recipient")


def test_an_assertion_outside_the_clock_skew_allowance_is_refused(idp):
    c = Client()
    fields = idp.answer(_start(c), subject="ada-7f3", attributes=ADA, lifetime_minutes=-5)
    _refused(_post(c, fields), "clock")


def test_garbage_and_no_role_are_refused(idp):
    _refused(Client().post(reverse("saml:acs"), {"SAMLResponse": "not base64 xml"}), "malformed")
    _refused(Client().post(reverse("saml:acs"), {}), "malformed")
    c = Client()
    fields = idp.answer(_start(c), subject="eve", attributes={"groups": ["marketing"]})
    _refused(_post(c, fields), "no_role", status=403)
    assert AuditEvent.objects.get(verb="login_refused").detail["method"] == "saml"


def test_the_system_check_names_what_a_saml_configuration_lacks(settings, tmp_path):
    from workbench.checks import check_oidc_settings, check_saml_settings

    settings.SAML_ENABLED = True
    settings.SAML_IDP_METADATA_FILE = str(tmp_path / "missing.xml")
    settings.SAML_SP_BASE_URL = ""
    settings.SAML_ROLE_MAP = "gs:superuser"
    settings.SAML_SP_KEY_FILE, settings.SAML_SP_CERT_FILE = "k.pem", ""
    ids = [e.id for e in check_saml_settings()]
    assert ids == ["workbench.E111", "workbench.E112", "workbench.E113", "workbench.E114"]
    settings.OIDC_ENABLED, settings.LOCAL_PASSWORDS_ENABLED = False, False
    assert check_oidc_settings() == []  # SAML signs people in


def test_odd_saml_input_answers_4xx_never_500(idp):
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;&a;</x>'
    not_a_response = b'<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>'
    c = Client()
    answers = [
        c.get(reverse("saml:acs")).status_code,
        c.post(reverse("saml:acs"), {"SAMLResponse": base64.b64encode(bomb).decode()}).status_code,
        c.post(
            reverse("saml:acs"), {"SAMLResponse": base64.b64encode(not_a_response).decode()}
        ).status_code,
        c.get(reverse("saml:sls")).status_code,
        c.get(reverse("saml:sls"), {"SAMLRequest": "garbage"}).status_code,
        c.get(
            reverse("saml:sls"), {"SAMLRequest": "garbage", "SigAlg": "x", "Signature": "y"}
        ).status_code,
        c.get(reverse("saml:sls"), {"SAMLResponse": "garbage"}).status_code,
    ]
    assert all(400 <= status < 500 for status in answers), answers
    assert not OidcIdentity.objects.exists()


def test_a_person_the_directory_provisioned_signs_into_that_account_with_its_roles(idp, admin_user):
    from workbench.services import scim

    token, _ = scim.create_scim_token(by=admin_user, name="directory")
    link = scim.create_user(
        body={"schemas": [scim.USER_SCHEMA], "userName": "ada.l", "externalId": "ada-7f3"},
        token=token,
    )
    bot = Project.objects.create(name="Customer bot", slug="customer-bot")
    scim.create_group(
        body={
            "schemas": [scim.GROUP_SCHEMA],
            "displayName": "customer-bot:lead",
            "members": [{"value": str(link.scim_id)}],
        },
        token=token,
    )
    c = Client()
    # the IdP's groups would make her an annotator by SAML_ROLE_MAP: the directory's roles win
    answered = _post(c, idp.answer(_start(c), subject="ada-7f3", attributes=ADA))
    assert answered.status_code == 302
    identity = OidcIdentity.objects.get(subject="ada-7f3")
    assert identity.user == link.user
    assert list(
        ProjectMembership.objects.filter(user=link.user).values_list("project", "role")
    ) == [(bot.pk, Role.LEAD.value)]
    assert AuditEvent.objects.get(verb="login").detail["roles"] == "directory"

    scim.patch_user(
        scim_id=str(link.scim_id),
        body={
            "schemas": [scim.PATCH_SCHEMA],
            "Operations": [{"op": "replace", "value": {"active": False}}],
        },
        token=token,
    )
    assert c.get(reverse("api_tokens")).status_code == 302  # the session ended with the account
    again = Client()
    _refused(
        _post(again, idp.answer(_start(again), subject="ada-7f3", attributes=ADA)), "inactive", 403
    )
