"""OpenID Connect sign-in without a browser: the claim → role mapping (garbage included), the
service that creates and updates users at every sign-in, and the backend's token checks."""

import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.test import RequestFactory

from workbench.auth import OidcSignInFailed, RoleMappingOIDCBackend
from workbench.checks import check_oidc_settings
from workbench.models import AuditEvent, OidcIdentity
from workbench.roles import Role, claim_values, parse_role_map, role_from_claims, roles_of
from workbench.services.accounts import SignInRefused, sign_in_with_provider

MAP = parse_role_map(
    "goldset-annotators:annotator, goldset-leads:lead ,goldset-admins:admin,"
    "urn:acme:groups:qa:adjudication_lead"
)


# ---------------------------------------------------------------- the mapping (pure)


def test_the_role_map_reads_pairs_aliases_and_values_containing_colons():
    assert MAP == {
        "goldset-annotators": Role.ANNOTATOR,
        "goldset-leads": Role.LEAD,
        "goldset-admins": Role.ADMIN,
        "urn:acme:groups:qa": Role.LEAD,
    }
    assert parse_role_map("") == {} and parse_role_map(" , ") == {}


@pytest.mark.parametrize(
    "text,problem",
    [
        ("goldset-annotators", "is not 'claim-value:role'"),
        (":admin", "is not 'claim-value:role'"),
        ("ops:superuser", "names no role"),
        ("ops:", "names no role"),
        ("ops:admin,ops:lead", "mapped twice"),
    ],
)
def test_a_bad_role_map_is_refused_naming_the_pair(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_role_map(text)


@pytest.mark.parametrize(
    "claims,role",
    [
        ({"groups": ["goldset-annotators"]}, Role.ANNOTATOR),
        ({"groups": "goldset-leads"}, Role.LEAD),  # a single string
        ({"groups": ["goldset-annotators", "goldset-admins", "goldset-leads"]}, Role.ADMIN),
        ({"groups": ["staff", "urn:acme:groups:qa"]}, Role.LEAD),
        ({"groups": ["GOLDSET-ADMINS", " goldset-admins"]}, None),  # exact match only
        ({"groups": []}, None),
        ({"groups": None}, None),
        ({"groups": 3}, None),
        ({"groups": {"goldset-admins": True}}, None),
        ({"groups": [["goldset-admins"]]}, None),  # nested lists carry nothing
        ({"groups": [None, 7, {"x": 1}, "goldset-annotators"]}, Role.ANNOTATOR),
        ({"roles": ["goldset-admins"]}, None),  # another claim
        ({}, None),
    ],
)
def test_the_strongest_mapped_value_of_the_claim_gives_the_role(claims, role):
    assert role_from_claims(claims, claim="groups", role_map=MAP) == role


def test_a_dotted_claim_reads_nested_objects_and_nothing_else():
    claims = {"realm_access": {"roles": ["goldset-leads"]}, "flat": "goldset-admins"}
    assert role_from_claims(claims, claim="realm_access.roles", role_map=MAP) == Role.LEAD
    assert claim_values({"realm_access": ["goldset-leads"]}, "realm_access.roles") == []
    assert claim_values({"a": {"b": 5}}, "a.b") == []
    assert claim_values("not a dict", "groups") == []


# ---------------------------------------------------------------- the service

with_db = pytest.mark.django_db
ISS = "https://idp.example.org"


def _sign_in(subject, role, claims=None, values=()):
    return sign_in_with_provider(
        issuer=ISS,
        subject=subject,
        claims=claims or {},
        role=role,
        provider="Acme SSO",
        values=list(values),
    )


@with_db
def test_the_first_sign_in_creates_the_user_with_the_role_and_later_ones_update_it():
    claims = {"preferred_username": "dana", "email": "dana@x.org", "given_name": "Dana"}
    dana = _sign_in("sub-1", Role.ADMIN, claims)
    assert dana.username == "dana" and dana.email == "dana@x.org" and dana.first_name == "Dana"
    assert roles_of(dana) == {"admin"} and dana.is_staff and not dana.has_usable_password()

    again = _sign_in("sub-1", Role.ANNOTATOR, {**claims, "email": "d@y.org"})
    assert again.pk == dana.pk and again.email == "d@y.org"
    assert roles_of(get_user_model().objects.get(pk=dana.pk)) == {"annotator"}
    assert not get_user_model().objects.get(pk=dana.pk).is_staff
    assert OidcIdentity.objects.get(subject="sub-1").last_sign_in_at is not None
    verbs = list(AuditEvent.objects.order_by("id").values_list("verb", flat=True))
    assert verbs == ["role_changed", "login", "role_changed", "login"]


@with_db
def test_a_refused_sign_in_withdraws_the_roles_of_a_known_user_and_is_audited():
    user = _sign_in("sub-2", Role.LEAD, {"preferred_username": "eve"})
    with pytest.raises(SignInRefused):
        _sign_in("sub-2", None, values=["marketing"])
    user = get_user_model().objects.get(pk=user.pk)
    assert roles_of(user) == frozenset() and not user.is_staff
    refused = AuditEvent.objects.get(verb="login_refused")
    assert refused.actor == user and refused.detail["claim_values"] == ["marketing"]

    with pytest.raises(SignInRefused):
        _sign_in("sub-unknown", None)
    assert not OidcIdentity.objects.filter(subject="sub-unknown").exists()


@with_db
def test_a_user_deactivated_here_is_refused_whatever_the_provider_says():
    user = _sign_in("sub-4", Role.LEAD, {"preferred_username": "fay"})
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(SignInRefused) as refused:
        _sign_in("sub-4", Role.ADMIN)
    assert refused.value.reason == "inactive"
    assert roles_of(get_user_model().objects.get(pk=user.pk)) == {"adjudication_lead"}
    assert AuditEvent.objects.get(verb="login_refused").detail["reason"] == "inactive"


@with_db
def test_a_provider_never_takes_over_a_local_account_by_naming_it(make_user):
    local = make_user(Role.ADMIN, username="root")
    user = _sign_in("sub-3", Role.ANNOTATOR, {"preferred_username": "root"})
    assert user.pk != local.pk and user.username.startswith("root-")
    assert roles_of(get_user_model().objects.get(pk=local.pk)) == {"admin"}


@with_db
def test_garbage_name_claims_are_ignored():
    claims = {"preferred_username": ["x"], "email": 42, "given_name": {"a": 1}}
    user = _sign_in("weird/sub id", Role.ANNOTATOR, claims)
    assert user.username == "weird_sub_id" and user.email == "" and user.first_name == ""


# ---------------------------------------------------------------- the backend's token checks


@pytest.fixture
def signing_key(settings):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = "goldset"
    settings.OIDC_OP_ISSUER = ISS
    settings.OIDC_RP_IDP_SIGN_KEY = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return key


def _token(key, **claims):
    payload = {"iss": ISS, "aud": "goldset", "sub": "s", "nonce": "n", "exp": time.time() + 60}
    return jwt.encode({**payload, **claims}, key, algorithm="RS256")


def test_the_backend_accepts_a_token_for_us_and_refuses_others(signing_key):
    backend = RoleMappingOIDCBackend()
    assert backend.verify_token(_token(signing_key), nonce="n")["sub"] == "s"
    assert backend.verify_token(_token(signing_key, aud=["x", "goldset"]), nonce="n")
    for bad, why in [
        ({"aud": "another-app"}, "not addressed to this application"),
        ({"iss": "https://evil.example"}, "another issuer"),
        ({"sub": ""}, "no subject"),
    ]:
        with pytest.raises(OidcSignInFailed, match=why):
            backend.verify_token(_token(signing_key, **bad), nonce="n")
    with pytest.raises(jwt.ExpiredSignatureError):
        backend.verify_token(_token(signing_key, exp=time.time() - 600), nonce="n")
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(SuspiciousOperation, match="verification failed"):
        backend.verify_token(_token(other), nonce="n")
    hs256 = jwt.encode({"aud": "goldset", "sub": "s"}, "a-shared-secret-32-bytes-long!!!", "HS256")
    with pytest.raises(SuspiciousOperation, match="does not match"):
        backend.verify_token(hs256, nonce="n")


def test_the_backend_leaves_password_logins_to_the_password_backend(signing_key):
    request = RequestFactory().get("/oidc/callback/?code=c&state=s")
    assert RoleMappingOIDCBackend().authenticate(request, username="u", password="p") is None


# ---------------------------------------------------------------- the start-up check


def test_the_system_check_refuses_an_oidc_configuration_that_cannot_sign_anyone_in(settings):
    settings.OIDC_ENABLED = False
    settings.LOCAL_PASSWORDS_ENABLED = False
    assert [e.id for e in check_oidc_settings()] == ["workbench.E101"]
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = ""
    settings.OIDC_OP_JWKS_ENDPOINT = ""
    settings.OIDC_ROLE_MAP = "ops:root"
    ids = [e.id for e in check_oidc_settings()]
    assert {"workbench.E102", "workbench.E103", "workbench.E104", "workbench.E105"} <= set(ids)
