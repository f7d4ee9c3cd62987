"""SCIM 2.0 provisioning (issue 31), driven over HTTP as Entra ID and Okta drive it: create, get
by filter, PATCH active=false, PATCH group members, delete; the deprovisioned person's session
and API token are refused on their next request because the session row is deleted and the
token revoked (they stay refused when the person is let back in). Deleting a person who is still
active ends their access the same way and frees their claims, keeping their labels and history.
The discovery documents answer at the URLs they name. Bad input answers 4xx in the SCIM error
schema, audited, with nothing stored."""

import json

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import reset_queries
from django.test import Client
from django.urls import reverse

from goldset.models import (
    AnswerRecord,
    Label,
    LabelAssignment,
    Project,
    ProjectMembership,
)
from goldset.services.labeling import claim_next_item
from tests.factories import (
    AnswerRecordFactory,
    CalibrationResultFactory,
    DomainFactory,
    UserFactory,
)
from tests.goldset.answers_helpers import claim_and_label, default_project
from workbench.models import AuditEvent, ScimGroup, ScimUser, UserSession
from workbench.roles import Role
from workbench.services.api_tokens import authenticate_api_token, create_api_token
from workbench.services.scim import ERROR_SCHEMA, LIST_SCHEMA, PATCH_SCHEMA, create_scim_token

pytestmark = pytest.mark.django_db

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"


class Directory:
    """A SCIM client holding a bearer token, as a directory is."""

    def __init__(self, raw: str):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {raw}"}

    def call(self, method: str, path: str, body=None, *, raw: bytes | None = None, **params):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"content_type": "application/scim+json", "headers": self.headers}
        if method == "GET":
            return self.client.get(f"/scim/v2/{path}", params, headers=self.headers)
        return getattr(self.client, method.lower())(f"/scim/v2/{path}", data, **kwargs)


@pytest.fixture
def directory(admin_user):
    _, raw = create_scim_token(by=admin_user, name="directory")
    return Directory(raw)


@pytest.fixture
def project():
    return Project.objects.create(name="Customer bot", slug="customer-bot")


def _patch(*operations):
    return {"schemas": [PATCH_SCHEMA], "Operations": list(operations)}


def _entra_user(name="ada@example.org", external="a1b2"):
    return {
        "schemas": [USER, ENTERPRISE],
        "externalId": external,
        "userName": name,
        "active": True,
        "displayName": "Ada Lovelace",
        "emails": [{"primary": True, "type": "work", "value": name}],
        "meta": {"resourceType": "User"},
        "name": {"formatted": "Ada Lovelace", "familyName": "Lovelace", "givenName": "Ada"},
        "title": "Analyst",
        ENTERPRISE: {"department": "Risk"},
    }


def _refusal(response, status: int, scim_type: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["schemas"] == [ERROR_SCHEMA] and body["status"] == str(status)
    if scim_type:
        assert body["scimType"] == scim_type
    event = AuditEvent.objects.filter(verb="scim_refused").first()
    assert event is not None and event.detail["status"] == status
    return body


def _signed_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _session_key(browser: Client) -> str:
    return browser.cookies[settings.SESSION_COOKIE_NAME].value


def _access_ended(user, *, session_keys: list[str], api_token, raw: str) -> None:
    """The person's sessions are deleted (not merely refused because the account is inactive)
    and their API token is revoked."""
    assert session_keys and not Session.objects.filter(session_key__in=session_keys).exists()
    assert not UserSession.objects.filter(user=user).exists()
    api_token.refresh_from_db()
    assert api_token.revoked_at is not None
    assert authenticate_api_token(raw=raw, method="GET", path="/api/v1/projects/") is None


def test_an_entra_id_run_provisions_maps_groups_and_deprovisions(directory, project):
    # Entra ID looks the user up first, then creates them
    lookup = directory.call("GET", "Users", filter='userName eq "ada@example.org"')
    assert lookup.status_code == 200 and lookup.json()["totalResults"] == 0
    created = directory.call("POST", "Users", _entra_user())
    assert created.status_code == 201, created.content
    ada = created.json()
    assert ada["userName"] == "ada@example.org" and ada["active"] is True
    assert ada["name"]["givenName"] == "Ada" and ada["externalId"] == "a1b2"
    assert created["Location"].endswith(f"/scim/v2/Users/{ada['id']}")
    found = directory.call("GET", "Users", filter='userName eq "ADA@example.org"').json()
    assert found["schemas"] == [LIST_SCHEMA] and found["Resources"][0]["id"] == ada["id"]
    assert directory.call("GET", f"Users/{ada['id']}").json()["emails"][0]["value"] == (
        "ada@example.org"
    )

    # groups: project:role, members added by PATCH
    annotators = directory.call(
        "POST", "Groups", {"schemas": [GROUP], "displayName": "customer-bot:annotator"}
    ).json()
    added = directory.call(
        "PATCH",
        f"Groups/{annotators['id']}",
        _patch({"op": "Add", "path": "members", "value": [{"value": ada["id"]}]}),
    )
    assert added.status_code == 200, added.content
    user = ScimUser.objects.get(scim_id=ada["id"]).user
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.ANNOTATOR
    browser = _signed_in(user)
    dashboard = f"/p/customer-bot{reverse('curation:dashboard')}"
    assert browser.get(dashboard).status_code == 403  # an annotator

    # a second group gives the lead role: effective on the very next request
    leads = directory.call(
        "POST",
        "Groups",
        {"schemas": [GROUP], "displayName": "customer-bot:lead", "members": [{"value": ada["id"]}]},
    ).json()
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.LEAD
    assert browser.get(dashboard).status_code == 200
    listed = directory.call("GET", "Groups", filter='displayName eq "customer-bot:lead"').json()
    assert listed["Resources"][0]["members"] == [{"value": ada["id"], "display": user.username}]
    excluded = directory.call(
        "GET", "Groups", filter='displayName eq "customer-bot:lead"', excludedAttributes="members"
    ).json()
    assert "members" not in excluded["Resources"][0]
    removed = directory.call(
        "PATCH",
        f"Groups/{leads['id']}",
        _patch({"op": "Remove", "path": "members", "value": [{"value": ada["id"]}]}),
    )
    assert removed.status_code == 200 and removed.json()["members"] == []
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.ANNOTATOR
    assert browser.get(dashboard).status_code == 403

    # Entra ID's attribute updates, some of which we do not keep
    updated = directory.call(
        "PATCH",
        f"Users/{ada['id']}",
        _patch(
            {"op": "Replace", "path": "name.givenName", "value": "Augusta"},
            {"op": "Add", "path": 'phoneNumbers[type eq "work"].value', "value": "+44 1"},
            {"op": "Add", "path": 'addresses[type eq "work"].locality', "value": "London"},
            {"op": "Replace", "path": f"{ENTERPRISE}:department", "value": "Audit"},
            {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "al@example.org"},
        ),
    )
    assert updated.status_code == 200, updated.content
    assert updated.json()["name"]["givenName"] == "Augusta"
    assert updated.json()["emails"][0]["value"] == "al@example.org"

    # Entra ID deactivates with a string "False"
    api_token, raw = create_api_token(user=user, name="ci", expires_in_days=30)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/projects/").status_code == 200
    session_key = _session_key(browser)
    assert Session.objects.filter(session_key=session_key).exists()
    off = directory.call(
        "PATCH", f"Users/{ada['id']}", _patch({"op": "Replace", "path": "active", "value": "False"})
    )
    assert off.status_code == 200 and off.json()["active"] is False
    _access_ended(user, session_keys=[session_key], api_token=api_token, raw=raw)
    assert browser.get(f"/p/customer-bot{reverse('home')}").status_code == 302  # to login
    assert api.get("/api/v1/projects/").status_code in (401, 403)
    assert AuditEvent.objects.filter(verb="user_deactivated", object_id=str(user.pk)).exists()

    gone = directory.call("DELETE", f"Users/{ada['id']}")
    assert gone.status_code == 204
    _refusal(directory.call("GET", f"Users/{ada['id']}"), 404)
    user.refresh_from_db()
    assert not user.is_active and not user.scim_groups.exists()
    assert not ProjectMembership.objects.filter(user=user, project=project).exists()
    assert AuditEvent.objects.filter(verb="scim.user_deleted", object_id=str(user.pk)).exists()


def test_an_okta_run_puts_patches_without_paths_and_removes_members_by_filter(directory, project):
    body = {
        "schemas": [USER],
        "userName": "grace@example.org",
        "name": {"givenName": "Grace", "familyName": "Hopper"},
        "emails": [{"primary": True, "value": "grace@example.org", "type": "work"}],
        "displayName": "Grace Hopper",
        "locale": "en-US",
        "externalId": "00u1",
        "groups": [],
        "password": "ignored-Secret1",
        "active": True,
    }
    grace = directory.call("POST", "Users", body).json()
    put = directory.call(
        "PUT",
        f"Users/{grace['id']}",
        {**body, "id": grace["id"], "name": {"givenName": "G.", "familyName": "Hopper"}},
    )
    assert put.status_code == 200 and put.json()["name"]["givenName"] == "G."
    group = directory.call(
        "POST",
        "Groups",
        {
            "schemas": [GROUP],
            "displayName": "customer-bot:admin",
            "members": [{"value": grace["id"]}],
        },
    ).json()
    user = ScimUser.objects.get(scim_id=grace["id"]).user
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.ADMIN
    assert not user.is_staff  # a directory group never makes an installation admin
    keeper = UserFactory(username="keeper")
    ProjectMembership.objects.create(user=keeper, project=project, role=Role.ADMIN)

    renamed = directory.call(
        "PATCH",
        f"Groups/{group['id']}",
        _patch(
            {"op": "replace", "value": {"id": group["id"], "displayName": "customer-bot:annotator"}}
        ),
    )
    assert renamed.status_code == 200 and renamed.json()["displayName"] == "customer-bot:annotator"
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.ANNOTATOR
    out = directory.call(
        "PATCH",
        f"Groups/{group['id']}",
        _patch({"op": "remove", "path": f'members[value eq "{grace["id"]}"]'}),
    )
    assert out.status_code == 200 and out.json()["members"] == []
    assert not ProjectMembership.objects.filter(user=user, project=project).exists()

    browser = _signed_in(user)
    session_key = _session_key(browser)
    api_token, raw = create_api_token(user=user, name="okta-ci", expires_in_days=30)
    off = directory.call(
        "PATCH", f"Users/{grace['id']}", _patch({"op": "replace", "value": {"active": False}})
    )
    assert off.status_code == 200 and off.json()["active"] is False
    _access_ended(user, session_keys=[session_key], api_token=api_token, raw=raw)
    assert browser.get(reverse("api_tokens")).status_code == 302
    on = directory.call(
        "PATCH", f"Users/{grace['id']}", _patch({"op": "replace", "value": {"active": True}})
    )
    assert on.json()["active"] is True
    # let back in, the person signs in afresh: the old session and token stay ended
    assert browser.get(reverse("api_tokens")).status_code == 302
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/projects/").status_code in (401, 403)
    assert directory.call("DELETE", f"Groups/{group['id']}").status_code == 204
    assert not ScimGroup.objects.exists()


def test_deleting_a_user_who_is_still_active_ends_their_access_at_once_and_keeps_their_work(
    directory,
):
    domain = DomainFactory(slug="supply_chain")
    for _ in range(3):
        AnswerRecordFactory(question__domain=domain)
    ada = directory.call("POST", "Users", _entra_user()).json()
    user = ScimUser.objects.get(scim_id=ada["id"]).user
    # a project role held directly, not through a directory group: the DELETE's group sync leaves
    # it alone, so only the deactivation can free the claim below
    ProjectMembership.objects.create(user=user, project=default_project(), role=Role.ANNOTATOR)
    CalibrationResultFactory(annotator=user, domain=domain)
    label = claim_and_label(user)
    held = claim_next_item(annotator=user, project=default_project()).assignment
    assigned_before = AnswerRecord.objects.get(pk=held.record_id).assigned_count
    api_token, raw = create_api_token(user=user, name="ci", expires_in_days=30)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/projects/").status_code == 200
    browsers = [_signed_in(user), _signed_in(user)]
    session_keys = [_session_key(b) for b in browsers]
    assert Session.objects.filter(session_key__in=session_keys).count() == 2
    assert all(b.get(reverse("api_tokens")).status_code == 200 for b in browsers)
    assert user.is_active

    gone = directory.call("DELETE", f"Users/{ada['id']}")

    assert gone.status_code == 204
    _access_ended(user, session_keys=session_keys, api_token=api_token, raw=raw)
    assert all(b.get(reverse("api_tokens")).status_code == 302 for b in browsers)  # to login
    assert api.get("/api/v1/projects/").status_code in (401, 403)
    # the claimed item is back in the pool
    assert not LabelAssignment.objects.filter(pk=held.pk).exists()
    assert AnswerRecord.objects.get(pk=held.record_id).assigned_count == assigned_before - 1
    # the account row, the past label and the audit history stay, attributed to the person
    user.refresh_from_db()
    assert not user.is_active and get_user_model().objects.filter(pk=user.pk).exists()
    assert Label.objects.get(pk=label.pk).annotator_id == user.pk
    assert AuditEvent.objects.filter(actor=user, verb="labeled").exists()
    ended = AuditEvent.objects.get(verb="user_deactivated", object_id=str(user.pk))
    assert ended.detail["reason"].startswith("scim_delete:")
    assert ended.detail["was_active"] is True
    assert (ended.detail["sessions"], ended.detail["tokens"], ended.detail["claims"]) == (2, 1, 1)
    assert AuditEvent.objects.filter(verb="scim.user_deleted", object_id=str(user.pk)).exists()
    _refusal(directory.call("GET", f"Users/{ada['id']}"), 404)


def test_a_keycloak_scim_run_puts_whole_users_and_groups(directory, project):
    """What the keycloak-scim extension (README, Keycloak) sends: whole resources by PUT, a
    group's full member list on every membership change, members with ``$ref``, and the
    Keycloak ids as ``externalId``."""
    body = {
        "schemas": [USER],
        "externalId": "kc-3f1a",
        "userName": "lin",
        "displayName": "Lin Wu",
        "name": {"givenName": "Lin", "familyName": "Wu"},
        "emails": [{"value": "lin@example.org", "type": "work", "primary": True}],
        "active": True,
        "roles": [],
    }
    lin = directory.call("POST", "Users", body).json()
    user = ScimUser.objects.get(scim_id=lin["id"]).user
    group = directory.call(
        "POST",
        "Groups",
        {"schemas": [GROUP], "externalId": "kc-g1", "displayName": "customer-bot:lead"},
    ).json()
    member = {"value": lin["id"], "$ref": f"Users/{lin['id']}"}
    whole_group = {
        "schemas": [GROUP],
        "id": group["id"],
        "externalId": "kc-g1",
        "displayName": "customer-bot:lead",
        "meta": {"location": f"Groups/{group['id']}"},
    }
    joined = directory.call("PUT", f"Groups/{group['id']}", {**whole_group, "members": [member]})
    assert joined.status_code == 200, joined.content
    assert joined.json()["members"] == [{"value": lin["id"], "display": "lin"}]
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.LEAD
    left = directory.call("PUT", f"Groups/{group['id']}", whole_group)  # no members: none left
    assert left.status_code == 200 and left.json()["members"] == []
    assert not ProjectMembership.objects.filter(user=user, project=project).exists()

    # disabled in Keycloak: the whole user again, with active false
    browser = _signed_in(user)
    session_key = _session_key(browser)
    api_token, raw = create_api_token(user=user, name="kc", expires_in_days=30)
    whole_user = {**body, "id": lin["id"], "meta": {"location": f"Users/{lin['id']}"}}
    off = directory.call("PUT", f"Users/{lin['id']}", {**whole_user, "active": False})
    assert off.status_code == 200 and off.json()["active"] is False
    _access_ended(user, session_keys=[session_key], api_token=api_token, raw=raw)
    assert directory.call("DELETE", f"Groups/{group['id']}").status_code == 204
    assert directory.call("DELETE", f"Users/{lin['id']}").status_code == 204


def _at_location(directory: Directory, resource: dict) -> dict:
    """GET the URL a discovery resource names as its ``meta.location``."""
    location = resource["meta"]["location"]
    prefix = "http://testserver/scim/v2/"
    assert location.startswith(prefix), location
    answer = directory.call("GET", location.removeprefix(prefix))
    assert answer.status_code == 200, (location, answer.content)
    assert answer["Content-Type"] == "application/scim+json"
    return answer.json()


def test_discovery_endpoints_describe_the_service(directory):
    config = directory.call("GET", "ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["filter"]["supported"] is True
    types = directory.call("GET", "ResourceTypes").json()
    assert {t["name"] for t in types["Resources"]} == {"User", "Group"}
    schemas = directory.call("GET", "Schemas").json()
    assert {s["id"] for s in schemas["Resources"]} == {USER, GROUP, ENTERPRISE}
    assert schemas["totalResults"] == 3
    # every schema a resource type names, extensions included, is described
    named = {t["schema"] for t in types["Resources"]}
    named |= {e["schema"] for t in types["Resources"] for e in t["schemaExtensions"]}
    assert named == {s["id"] for s in schemas["Resources"]}
    enterprise = next(s for s in schemas["Resources"] if s["id"] == ENTERPRISE)
    assert {"department", "manager"} <= {a["name"] for a in enterprise["attributes"]}


def test_each_discovery_resource_answers_at_its_own_location(directory):
    for listing in ("ResourceTypes", "Schemas"):
        for resource in directory.call("GET", listing).json()["Resources"]:
            assert _at_location(directory, resource) == resource
    user_type = directory.call("GET", "ResourceTypes/User").json()
    assert user_type["schema"] == USER and user_type["endpoint"] == "/Users"
    assert user_type["schemaExtensions"] == [{"schema": ENTERPRISE, "required": False}]
    assert directory.call("GET", f"Schemas/{GROUP}").json()["name"] == "Group"


@pytest.mark.parametrize(
    "path",
    [
        "ResourceTypes/Users",
        "ResourceTypes/user",
        "ResourceTypes/ServiceProviderConfig",
        "Schemas/User",
        "Schemas/urn:ietf:params:scim:schemas:core:2.0:Users",
        f"Schemas/{USER.upper()}",
    ],
)
def test_an_unknown_schema_or_resource_type_is_404_in_the_scim_error_schema(directory, path):
    body = _refusal(directory.call("GET", path), 404)
    assert "no Schema" in body["detail"] or "no ResourceType" in body["detail"]


def test_users_page_by_start_index_and_count(directory):
    for i in range(5):
        directory.call("POST", "Users", {"schemas": [USER], "userName": f"p{i}"})
    page = directory.call("GET", "Users", startIndex=2, count=2).json()
    assert page["totalResults"] == 5 and page["startIndex"] == 2 and page["itemsPerPage"] == 2
    assert [r["userName"] for r in page["Resources"]] == ["p1", "p2"]
    _refusal(directory.call("GET", "Users", count="many"), 400, "invalidValue")
    _refusal(directory.call("GET", "Users", filter='title co "x"'), 400, "invalidFilter")


def test_a_call_without_a_live_token_is_refused(directory, admin_user):
    anonymous = Directory("nope")
    _refusal(anonymous.call("GET", "Users"), 401)
    _, raw = create_scim_token(by=admin_user, name="old")
    from workbench.models import ScimToken
    from workbench.services.scim import revoke_scim_token

    revoke_scim_token(by=admin_user, token_id=ScimToken.objects.get(name="old").pk)
    _refusal(Directory(raw).call("POST", "Users", {"schemas": [USER], "userName": "x"}), 401)
    assert not ScimUser.objects.exists()


def test_malformed_json_is_refused_and_nothing_is_stored(directory):
    body = _refusal(directory.call("POST", "Users", raw=b'{"userName": "x",'), 400, "invalidSyntax")
    assert "JSON" in body["detail"]
    assert not ScimUser.objects.exists()
    _refusal(directory.call("POST", "Users", ["not", "an", "object"]), 400, "invalidSyntax")


def test_an_unknown_attribute_is_refused_by_name(directory):
    body = _refusal(
        directory.call("POST", "Users", {"schemas": [USER], "userName": "x", "shoeSize": 43}),
        400,
        "invalidSyntax",
    )
    assert "shoeSize" in body["detail"]
    body = _refusal(
        directory.call(
            "POST", "Users", {"schemas": [USER], "userName": "x", "name": {"nick": "x"}}
        ),
        400,
        "invalidSyntax",
    )
    assert "name.nick" in body["detail"]
    assert not ScimUser.objects.exists()


def test_a_bad_patch_path_is_refused_and_nothing_of_the_patch_is_applied(directory):
    ada = directory.call("POST", "Users", _entra_user()).json()
    body = _refusal(
        directory.call(
            "PATCH",
            f"Users/{ada['id']}",
            _patch(
                {"op": "Replace", "path": "active", "value": "False"},
                {"op": "Replace", "path": "shoeSize", "value": "43"},
            ),
        ),
        400,
        "invalidPath",
    )
    assert "shoeSize" in body["detail"]
    assert ScimUser.objects.get(scim_id=ada["id"]).user.is_active  # the first op rolled back
    _refusal(
        directory.call("PATCH", f"Users/{ada['id']}", _patch({"op": "explode", "path": "active"})),
        400,
        "invalidSyntax",
    )
    _refusal(
        directory.call("PATCH", f"Users/{ada['id']}", {"Operations": []}), 400, "invalidSyntax"
    )
    group = directory.call("POST", "Groups", {"schemas": [GROUP], "displayName": "g"}).json()
    _refusal(
        directory.call(
            "PATCH", f"Groups/{group['id']}", _patch({"op": "add", "path": "owners", "value": []})
        ),
        400,
        "invalidPath",
    )
    _refusal(
        directory.call(
            "PATCH",
            f"Groups/{group['id']}",
            _patch({"op": "add", "path": "members", "value": [{"value": "no-such-user"}]}),
        ),
        400,
        "invalidValue",
    )
    assert not ScimGroup.objects.get(scim_id=group["id"]).members.exists()


def test_a_user_name_of_a_local_account_is_refused_not_adopted(directory):
    local = UserFactory(role=Role.ADMIN, username="root")
    body = _refusal(
        directory.call("POST", "Users", {"schemas": [USER], "userName": "ROOT"}), 409, "uniqueness"
    )
    assert "local account" in body["detail"]
    local.refresh_from_db()
    assert local.is_active and not hasattr(local, "scim")
    assert not ScimUser.objects.exists()
    ada = directory.call("POST", "Users", _entra_user()).json()
    _refusal(
        directory.call(
            "PATCH",
            f"Users/{ada['id']}",
            _patch({"op": "replace", "path": "userName", "value": "root"}),
        ),
        409,
        "uniqueness",
    )
    _refusal(directory.call("POST", "Users", _entra_user()), 409, "uniqueness")


def test_a_deleted_user_is_revived_when_the_directory_creates_them_again(directory):
    ada = directory.call("POST", "Users", _entra_user()).json()
    directory.call("DELETE", f"Users/{ada['id']}")
    again = directory.call("POST", "Users", _entra_user())
    assert again.status_code == 201 and again.json()["id"] != ada["id"]
    assert ScimUser.objects.get().user.is_active


def test_removing_the_last_admin_of_a_project_is_refused(directory, project):
    grace = directory.call("POST", "Users", {"schemas": [USER], "userName": "grace"}).json()
    group = directory.call(
        "POST",
        "Groups",
        {
            "schemas": [GROUP],
            "displayName": "customer-bot:admin",
            "members": [{"value": grace["id"]}],
        },
    ).json()
    _refusal(
        directory.call(
            "PATCH", f"Groups/{group['id']}", _patch({"op": "remove", "path": "members"})
        ),
        409,
        "mutability",
    )
    user = ScimUser.objects.get(scim_id=grace["id"]).user
    assert ScimGroup.objects.get().members.get() == user
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.ADMIN


def test_lists_take_a_fixed_number_of_queries(directory, django_assert_max_num_queries):
    def fill(start: int, n: int):
        ids = [
            directory.call(
                "POST", "Users", {"schemas": [USER], "userName": f"q{start + i}"}
            ).json()["id"]
            for i in range(n)
        ]
        directory.call(
            "POST",
            "Groups",
            {
                "schemas": [GROUP],
                "displayName": f"g{start}",
                "members": [{"value": i} for i in ids],
            },
        )

    fill(0, 2)
    # one request per block, the log emptied first: each request resets the connection's log
    reset_queries()
    with django_assert_max_num_queries(20) as users_few:
        directory.call("GET", "Users")
    users_count = len(users_few)  # read now: the captured queries are a view of the log
    reset_queries()
    with django_assert_max_num_queries(20) as groups_few:
        directory.call("GET", "Groups")
    baseline = {"users": users_count, "groups": len(groups_few)}
    assert all(baseline.values())
    fill(10, 8)
    reset_queries()
    with django_assert_max_num_queries(baseline["users"]):
        users = directory.call("GET", "Users").json()
    reset_queries()
    with django_assert_max_num_queries(baseline["groups"]):
        groups = directory.call("GET", "Groups").json()
    assert users["totalResults"] == 10 and groups["totalResults"] == 2
    assert all(r["groups"] for r in users["Resources"])
    assert sum(len(g["members"]) for g in groups["Resources"]) == 10


def test_renaming_a_group_away_from_a_project_takes_its_role_away(directory, project):
    ada = directory.call("POST", "Users", _entra_user()).json()
    group = directory.call(
        "POST",
        "Groups",
        {"schemas": [GROUP], "displayName": "customer-bot:lead", "members": [{"value": ada["id"]}]},
    ).json()
    user = ScimUser.objects.get(scim_id=ada["id"]).user
    assert ProjectMembership.objects.get(user=user, project=project).role == Role.LEAD
    renamed = directory.call(
        "PATCH",
        f"Groups/{group['id']}",
        _patch({"op": "Replace", "path": "displayName", "value": "Marketing"}),
    )
    assert renamed.status_code == 200
    assert not ProjectMembership.objects.filter(user=user, project=project).exists()


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.LEAD, Role.ADMIN, None])
def test_a_signed_in_session_is_no_scim_credential(role, directory):
    person = UserFactory(role=role, username=f"session-{role or 'outsider'}")
    c = Client()
    c.force_login(person)
    for path in (
        "Users",
        "Groups",
        "ServiceProviderConfig",
        "Schemas",
        f"Schemas/{USER}",
        "ResourceTypes",
        "ResourceTypes/User",
    ):
        assert c.get(f"/scim/v2/{path}").status_code == 401
    body = json.dumps({"schemas": [USER], "userName": "sneaky"})
    assert c.post("/scim/v2/Users", body, content_type="application/scim+json").status_code == 401
    assert not ScimUser.objects.exists()


ODD_USER_BODIES = [
    {"schemas": [USER]},
    {"schemas": [USER], "userName": ""},
    {"schemas": [USER], "userName": 42},
    {"schemas": [USER], "userName": "a b"},
    {"schemas": [USER], "userName": "x" * 200},
    {"schemas": [USER], "userName": "ok", "emails": "a@b"},
    {"schemas": [USER], "userName": "ok", "emails": ["a@b"]},
    {"schemas": [USER], "userName": "ok", "name": "Ada"},
    {"schemas": [USER], "userName": "ok", "active": "maybe"},
    {"schemas": [USER], "userName": "ok", "externalId": {"x": 1}},
    None,
    "text",
]
ODD_PATCHES = [
    {"schemas": [PATCH_SCHEMA]},
    {"schemas": [PATCH_SCHEMA], "Operations": "replace"},
    {"schemas": [PATCH_SCHEMA], "Operations": [None]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "path": 7, "value": 1}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": [1, 2]}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "remove"}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "remove", "path": "userName"}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "add", "path": "members", "value": "x"}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "add", "path": "members", "value": [7]}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"shoeSize": 1}}]},
    {"schemas": [PATCH_SCHEMA], "Operations": [], "extra": 1},
]


def test_odd_input_never_answers_a_server_error(directory):
    ada = directory.call("POST", "Users", _entra_user()).json()
    group = directory.call("POST", "Groups", {"schemas": [GROUP], "displayName": "odd"}).json()
    answers = [directory.call("POST", "Users", body).status_code for body in ODD_USER_BODIES]
    answers += [directory.call("PUT", f"Users/{ada['id']}", b).status_code for b in ODD_USER_BODIES]
    for patch in ODD_PATCHES:
        answers.append(directory.call("PATCH", f"Users/{ada['id']}", patch).status_code)
        answers.append(directory.call("PATCH", f"Groups/{group['id']}", patch).status_code)
    answers += [
        directory.call("POST", "Groups", {"schemas": [GROUP], "displayName": ""}).status_code,
        directory.call("POST", "Groups", {"schemas": [GROUP], "displayName": "odd"}).status_code,
        directory.call("POST", "Groups", {"schemas": [GROUP], "displayName": 5}).status_code,
        directory.call("GET", "Users/not-a-uuid").status_code,
        directory.call("GET", "Groups/00000000-0000-0000-0000-000000000000").status_code,
        directory.call("DELETE", "Users/not-a-uuid").status_code,
        directory.call("GET", "Users", filter='userName eq "unterminated').status_code,
        directory.call("GET", "Users", startIndex="-5", count="0").status_code,
        directory.call("POST", "Users", raw=b"\xff\xfe").status_code,
        directory.call("POST", "Users", raw=b"[" * 100_000).status_code,
        directory.call("POST", "ServiceProviderConfig", {}).status_code,
    ]
    assert all(400 <= status < 500 or status == 200 for status in answers), answers
    assert answers.count(200) == 1  # startIndex=-5&count=0: an empty page
    user = ScimUser.objects.get(scim_id=ada["id"]).user
    assert user.username == "ada@example.org" and user.is_active
