"""Version tags through the API (issue 29): leads and admins read tags, admins create, move
(PUT) and delete them with a write token; ``versions/{ref}/``, its download, the diff and a job's
``version`` take a number, ``v7``, a tag or ``latest``; a refused name or version is a 422
naming the field, an unknown reference a problem+json 404; another project's tags are unknown;
the schema documents every operation and its statuses."""

import json

import pytest
from django.urls import reverse

from goldset.models import Domain, ImportJob, Project, VersionTag, VersionTagMove
from goldset.services.freeze import store_frozen_version
from goldset.services.projects import grant_role
from goldset.services.version_tags import set_version_tag
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    UserFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from workbench.models import AuditEvent
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


def put(client, name, body, **extra):
    return client.put(
        reverse("api:tag", args=[name]), json.dumps(body), content_type="application/json", **extra
    )


@pytest.fixture
def second(version, admin_user):
    """A second version (v2, a subset of v1) and the tag ``ci`` on v1."""
    rows = [gold_row_for(bv, triple_id=f"S-{i}") for i, bv in enumerate(make_gold_corpus(2))]
    v2 = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    set_version_tag(project=default_project(), actor=admin_user, name="ci", version=version)
    return v2


def test_tags_are_listed_for_leads_and_admins_with_their_version(
    client, client_for, annotator, lead, admin_user, second
):
    url = reverse("api:tags")
    assert client.get(url).status_code == 401
    assert client_for(annotator).get(url).status_code == 403
    for user in (lead, admin_user):
        rows = client_for(user).get(url).json()["results"]
        assert [(r["name"], r["version"], r["moved_by"]) for r in rows] == [
            ("ci", 1, admin_user.username)
        ]
    one = client_for(lead).get(reverse("api:tag", args=["ci"]))
    assert one.status_code == 200
    assert [(m["action"], m["from_version"], m["to_version"]) for m in one.json()["history"]] == [
        ("created", None, 1)
    ]
    missing = client_for(lead).get(reverse("api:tag", args=["nope"]))
    assert missing.status_code == 404 and missing["Content-Type"] == PROBLEM


def test_an_admin_creates_moves_and_deletes_a_tag(client_for, admin_user, second):
    admin = client_for(admin_user)
    created = put(admin, "release-2026q4", {"version": "v1", "note": "signed off"})
    assert created.status_code == 201, created.content
    assert created["Location"] == reverse("api:tag", args=["release-2026q4"])
    assert created.json()["version"] == 1 and created.json()["note"] == "signed off"
    moved = put(admin, "release-2026q4", {"version": 2})
    assert moved.status_code == 200 and moved.json()["version"] == 2
    assert [m["action"] for m in moved.json()["history"]] == ["moved", "created"]
    again = put(admin, "release-2026q4", {"version": "latest"})  # already there: nothing
    assert again.status_code == 200 and len(again.json()["history"]) == 2
    by_tag = put(admin, "ci", {"version": "release-2026q4"})  # where another tag points
    assert by_tag.json()["version"] == 2
    deleted = admin.delete(reverse("api:tag", args=["release-2026q4"]) + "?note=replaced")
    assert deleted.status_code == 204 and not deleted.content
    assert admin.get(reverse("api:tag", args=["release-2026q4"])).status_code == 404
    gone = VersionTagMove.objects.get(name="release-2026q4", to_version=None)
    assert gone.note == "replaced" and gone.moved_by == admin_user
    verbs = list(
        AuditEvent.objects.filter(verb__startswith="version_tag_", detail__tag="release-2026q4")
        .order_by("pk")
        .values_list("verb", flat=True)
    )
    assert verbs == ["version_tag_created", "version_tag_moved", "version_tag_deleted"]
    assert admin.delete(reverse("api:tag", args=["release-2026q4"])).status_code == 404


def test_annotators_leads_and_anonymous_callers_cannot_write(
    client, client_for, annotator, lead, second
):
    for who, expected in ((client, 401), (client_for(annotator), 403), (client_for(lead), 403)):
        response = put(who, "ci", {"version": 2})
        assert response.status_code == expected and response["Content-Type"] == PROBLEM
        deleted = who.delete(reverse("api:tag", args=["ci"]))
        assert deleted.status_code == expected
    assert VersionTag.objects.get(name="ci").version.number == 1


def test_a_read_token_reads_tags_and_a_write_token_moves_them(client, admin_user, second):
    _, read = create_api_token(user=admin_user, name="r", scope="read")
    _, write = create_api_token(user=admin_user, name="w", scope="write")
    assert client.get(reverse("api:tags"), HTTP_AUTHORIZATION=f"Bearer {read}").status_code == 200
    refused = put(client, "ci", {"version": 2}, HTTP_AUTHORIZATION=f"Bearer {read}")
    assert refused.status_code == 403
    moved = put(client, "ci", {"version": 2}, HTTP_AUTHORIZATION=f"Bearer {write}")
    assert moved.status_code == 200 and moved.json()["version"] == 2


@pytest.mark.parametrize(
    "name, body, status, field",
    [
        ("Release", {"version": 1}, 422, "name"),
        ("v3", {"version": 1}, 422, "name"),
        ("latest", {"version": 1}, 422, "name"),
        ("a" * 65, {"version": 1}, 422, "name"),
        ("ci", {"version": 9}, 422, "version"),
        ("ci", {"version": "nope"}, 422, "version"),
        ("ci", {"version": "bad ref!"}, 400, "version"),
        ("ci", {"version": 0}, 400, "version"),
        ("ci", {"version": True}, 400, "version"),
        ("ci", {}, 400, "version"),
        ("ci", {"version": 2, "note": "x" * 301}, 400, "note"),
    ],
)
def test_a_refused_put_names_the_field_and_changes_nothing(
    client_for, admin_user, second, name, body, status, field
):
    response = put(client_for(admin_user), name, body)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    assert field in [e["field"] for e in response.json()["errors"]]
    assert VersionTag.objects.get().version.number == 1
    assert VersionTagMove.objects.count() == 1


@pytest.mark.parametrize(
    "ref, number",
    [("1", 1), ("v2", 2), ("V1", 1), ("ci", 1), ("latest", 2)],
)
def test_a_version_is_read_by_number_tag_or_latest(client_for, lead, second, ref, number):
    api = client_for(lead)
    response = api.get(reverse("api:version", args=[ref]))
    assert response.status_code == 200 and response.json()["number"] == number
    download = api.get(reverse("api:version_download", args=[ref, "manifest"]))
    assert download.status_code == 200 and download["X-Checksum-SHA256"]


@pytest.mark.parametrize("ref", ["9", "v9", "nope", "0", "9" * 400, "x!", "ci.", "-1"])
def test_an_unknown_reference_is_a_problem_404(client_for, lead, second, ref):
    response = client_for(lead).get(reverse("api:version", args=[ref]))
    assert response.status_code == 404 and response["Content-Type"] == PROBLEM


def test_the_diff_takes_tags(client_for, lead, second):
    response = client_for(lead).get(reverse("api:version_diff") + "?a=ci&b=latest")
    assert response.status_code == 200 and (response.json()["a"], response.json()["b"]) == (1, 2)
    unknown = client_for(lead).get(reverse("api:version_diff") + "?a=ci&b=nope")
    assert unknown.status_code == 404
    extra = client_for(lead).get(reverse("api:version_diff") + "?a=ci&b=1&c=2")
    assert extra.status_code == 400 and extra.json()["errors"][0]["field"] == "c"


def test_a_job_names_its_version_by_tag_and_keeps_the_number(client_for, admin_user, second):
    admin = client_for(admin_user)
    body = {
        "version": "ci",
        "name": "tagged",
        "run": [{"query_id": "Q-0", "block_id": "b", "rank": 1}],
    }
    response = admin.post(reverse("api:jobs"), json.dumps(body), content_type="application/json")
    assert response.status_code == 202, response.content
    assert ImportJob.objects.get(pk=response.json()["id"]).options["version"] == 1
    body["version"] = "nope"
    refused = admin.post(reverse("api:jobs"), json.dumps(body), content_type="application/json")
    assert refused.status_code == 422
    assert refused.json()["errors"] == [
        {"field": "version", "message": "no gold version is tagged 'nope'"}
    ]


def test_another_projects_tags_are_unknown_here_and_its_members_get_404(client_for, second):
    beta = Project.objects.create(name="Beta", slug="beta")
    outsider = UserFactory(username="beta-admin")
    grant_role(project=beta, user=outsider, role=Role.ADMIN)
    domain = Domain.objects.create(project=beta, slug="beta_domain", name="Beta")
    document = DocumentFactory(project=beta, document_id="beta-doc", domain=domain)
    pinned = BlockVersionFactory(
        block=BlockFactory(project=beta, block_id="beta-1", document=document)
    )
    store_frozen_version(project=beta, rows=[gold_row_for(pinned, triple_id="B-1")], actor=outsider)
    them = client_for(outsider)
    beta_api = "/api/v1/projects/beta/"
    assert them.get(f"{beta_api}tags/").json()["results"] == []
    assert them.get(f"{beta_api}tags/ci/").status_code == 404
    assert them.get(f"{beta_api}versions/ci/").status_code == 404
    refused = put(them, "x", {"version": 1})  # unprefixed: the default project, not theirs
    assert refused.status_code == 404
    created = them.put(
        f"{beta_api}tags/ci/", json.dumps({"version": 1}), content_type="application/json"
    )
    assert created.status_code == 201
    assert created["Location"] == f"{beta_api}tags/ci/"
    assert VersionTag.objects.get(project=beta).version.project == beta
    assert VersionTag.objects.get(project=default_project()).version.number == 1
    # moving the beta tag onto a number only the default project has: that number is unknown
    missing = them.put(
        f"{beta_api}tags/ci/", json.dumps({"version": 2}), content_type="application/json"
    )
    assert missing.status_code == 422 and missing.json()["errors"][0]["field"] == "version"


def test_the_schema_documents_the_tag_operations_and_their_statuses(client):
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    tags, tag = schema["paths"]["/api/v1/tags/"], schema["paths"]["/api/v1/tags/{name}/"]
    assert tags["get"]["operationId"] == "tags_list"
    assert {m: o["operationId"] for m, o in tag.items()} == {
        "get": "tags_retrieve",
        "put": "tags_update",
        "delete": "tags_destroy",
    }
    assert {"200", "201", "400", "401", "403", "404", "422", "429"} <= set(tag["put"]["responses"])
    assert {"204", "401", "403", "404"} <= set(tag["delete"]["responses"])
    assert "Location" in tag["put"]["responses"]["201"]["headers"]
    version = schema["paths"]["/api/v1/versions/{ref}/"]["get"]
    (ref,) = [p for p in version["parameters"] if p["name"] == "ref"]
    assert ref["schema"]["type"] == "string"
    jobs = schema["paths"]["/api/v1/jobs/"]["post"]["requestBody"]["content"]
    component = jobs["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    field = schema["components"]["schemas"][component]["properties"]["version"]
    assert [branch["type"] for branch in field["oneOf"]] == ["integer", "string"]
