"""The API per project (issue 27): every endpoint answers under ``/api/v1/projects/<slug>/`` with
that project's objects only, and unprefixed for the default project. Project B holds canary
objects (several with the same ids as the default project's); a member of the default project
only (project A here) sees none of them, and every B object URL is a 404 to them. Tokens are
limited to one project (404 elsewhere) or valid in every project of their owner; read tokens
only read."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import (
    AgreementSnapshot,
    Domain,
    Evaluator,
    GoldVersion,
    ImportJob,
    Project,
    ScoringJob,
    Triple,
)
from goldset.services.projects import grant_role
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    UserFactory,
    default_project,
)
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db
CANARY = "CANARY"
API = "/api/v1/"


def bearer(raw):
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def member(username, *grants):
    """A person who is not an installation admin, with ``(project, role)`` grants."""
    user = UserFactory(username=username)
    for project, role in grants:
        grant_role(project=project, user=user, role=role)
    return user


@pytest.fixture
def project_b():
    return Project.objects.create(name="Customer bot", slug="customer-bot")


@pytest.fixture
def canaries(project_b, api_objects, admin_user):
    """Project B's objects, named like the default project's where ids may repeat across
    projects (document, block, triple), and marked CANARY wherever text is shown."""
    a_doc = DocumentFactory._meta.model.objects.get(document_id=api_objects["DOC"])
    domain = Domain.objects.create(project=project_b, slug="canary_domain", name=CANARY)
    document = DocumentFactory(
        project=project_b, document_id=a_doc.document_id, title=CANARY, domain=domain
    )
    block = BlockFactory(project=project_b, document=document, block_id=api_objects["BLOCK"])
    BlockVersionFactory(block=block, text=f"{CANARY} text")
    triple = Triple.objects.get(external_id=api_objects["TRIPLE"])
    triple.pk, triple.project, triple.domain = None, project_b, domain
    triple.current_revision, triple.routing_rule = None, CANARY
    triple.save()
    version = GoldVersion.objects.create(project=project_b, number=7, sealed=True, note=CANARY)
    jobs = [
        ScoringJob.objects.create(
            project=project_b,
            version=version,
            name=CANARY,
            kind="retrieval",
            run_format="trec",
            run_filename=CANARY,
            run_sha256=f"{i}" * 64,
            run_size=1,
            status="succeeded",
        )  # fmt: skip
        for i in (3, 4)
    ]
    imported = ImportJob.objects.create(
        project=project_b, kind="run", dedupe_key=CANARY, filename=CANARY, sha256="0" * 64,
        size=1, created_by=admin_user, status="failed",
    )  # fmt: skip
    AgreementSnapshot.objects.create(
        project=project_b, protocol="triple_review", axis=CANARY, metric="cohen_kappa",
        data_version=CANARY, value=0.1, n_items=500, reason=CANARY,
    )  # fmt: skip
    evaluator = Evaluator.objects.create(
        project=project_b, name=CANARY, version="1", kind="llm_judge"
    )
    return {
        "project": project_b,
        "version": version.number,
        "jobs": [j.pk for j in jobs],
        "import": imported.pk,
        "evaluator": evaluator.pk,
    }


@pytest.fixture
def a_admin():
    """An admin of the default project only (not an installation admin)."""
    return member("a-admin", (default_project(), Role.ADMIN))


def lists(objects):
    """Every list endpoint (GET) with its arguments, relative to the API root."""
    return [
        "projects/",
        "domains/",
        "documents/",
        f"documents/{objects['DOC']}/blocks/",
        f"blocks/{objects['BLOCK']}/versions/",
        f"blocks/{objects['BLOCK']}/versions/1/",
        f"documents/{objects['DOC']}/",
        "triples/",
        f"triples/{objects['TRIPLE']}/",
        "versions/",
        "versions/1/",
        "versions/diff/?a=1&b=1",
        "jobs/",
        f"jobs/{objects['JOB']}/",
        f"jobs/{objects['JOB']}/queries/",
        "agreement/",
        "alerts/",
    ]


def test_no_list_or_object_of_project_b_reaches_a_member_of_the_default_project(
    client_for, a_admin, api_objects, canaries
):
    c = client_for(a_admin)
    for prefix in (API, f"{API}projects/default/"):
        for path in lists(api_objects):
            if path == "projects/" and prefix != API:
                continue  # an installation list: not under a project's prefix
            response = c.get(prefix + path)
            assert response.status_code == 200, (prefix + path, response.content[:300])
            assert CANARY.encode() not in response.content, prefix + path
    listed = c.get(f"{API}projects/").json()
    assert [(p["slug"], p["role"]) for p in listed] == [("default", "admin")]


def test_every_object_url_of_project_b_is_a_404_in_the_default_project(
    client_for, a_admin, api_objects, canaries
):
    c = client_for(a_admin)
    b_jobs = canaries["jobs"]
    for prefix in (API, f"{API}projects/default/"):
        for path in (
            f"versions/{canaries['version']}/",
            f"versions/{canaries['version']}/download/gold_jsonl/",
            f"versions/diff/?a=1&b={canaries['version']}",
            f"jobs/{b_jobs[0]}/",
            f"jobs/{b_jobs[0]}/queries/",
            f"jobs/compare/?jobs={b_jobs[0]}&jobs={b_jobs[1]}",
            f"imports/{canaries['import']}/",
            "documents/no-such-document/",
        ):
            assert c.get(prefix + path).status_code == 404, prefix + path
        for path in (
            f"imports/{canaries['import']}/cancel/",
            f"imports/{canaries['import']}/retry/",
            f"evaluators/{canaries['evaluator']}/outputs/",
        ):
            assert c.post(prefix + path).status_code == 404, prefix + path


def test_a_member_of_the_default_project_only_gets_404_under_project_b(
    client_for, a_admin, api_objects, canaries
):
    c = client_for(a_admin)
    for path in lists(api_objects):
        if path == "projects/":
            continue
        response = c.get(f"{API}projects/customer-bot/{path}")
        assert response.status_code == 404, path
        assert response["Content-Type"] == "application/problem+json"
    assert c.get(f"{API}projects/no-such-project/domains/").status_code == 404


def test_a_member_of_project_b_sees_its_objects_under_its_prefix_only(
    client_for, api_objects, canaries
):
    b_admin = member("b-admin", (canaries["project"], Role.ADMIN))
    c = client_for(b_admin)
    b = f"{API}projects/customer-bot/"
    documents = c.get(b + "documents/").json()["results"]
    assert [(d["document_id"], d["title"]) for d in documents] == [(api_objects["DOC"], CANARY)]
    assert [d["slug"] for d in c.get(b + "domains/").json()["results"]] == ["canary_domain"]
    assert c.get(b + f"triples/{api_objects['TRIPLE']}/").json()["routing_rule"] == CANARY
    assert c.get(b + f"versions/{canaries['version']}/").json()["note"] == CANARY
    assert c.get(b + "versions/1/").status_code == 404  # the default project's v1
    assert c.get(b + f"jobs/{canaries['jobs'][0]}/").json()["name"] == CANARY
    assert c.get(b + f"jobs/{api_objects['JOB']}/").status_code == 404
    assert c.get(b + f"imports/{canaries['import']}/").status_code == 200
    assert c.get(b + f"imports/{api_objects['IMPORT']}/").status_code == 404
    figures = c.get(b + "agreement/").json()["results"]
    assert [f["data_version"] for f in figures] == [CANARY]
    # not a member of the default project: the unprefixed API is its, so 404
    assert c.get(API + "documents/").status_code == 404
    listed = c.get(f"{API}projects/").json()
    assert [(p["slug"], p["role"], p["api"]) for p in listed] == [("customer-bot", "admin", b)]


def test_an_upload_under_a_prefix_is_a_job_of_that_project_with_a_prefixed_location(
    client_for, canaries
):
    b_admin = member("b-admin", (canaries["project"], Role.ADMIN))
    upload = SimpleUploadedFile("questions.jsonl", b'{"not": "a question"}\n')
    response = client_for(b_admin).post(
        f"{API}projects/customer-bot/imports/", {"kind": "questions", "file": upload}
    )
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.project == canaries["project"]
    assert response["Location"] == f"{API}projects/customer-bot/imports/{job.pk}/"
    # the same file in the default project is another job (dedupe is per project)
    a_admin = member("a-admin", (default_project(), Role.ADMIN))
    upload.seek(0)
    again = client_for(a_admin).post(reverse("api:imports"), {"kind": "questions", "file": upload})
    assert again.status_code == 202 and again.json()["id"] != job.pk
    assert again["Location"] == f"{API}imports/{again.json()['id']}/"


def test_a_run_for_another_projects_version_is_refused(client_for, canaries):
    a_admin = member("a-admin", (default_project(), Role.ADMIN))
    upload = SimpleUploadedFile("run.jsonl", b'{"query_id": "q", "block_id": "b", "rank": 1}\n')
    response = client_for(a_admin).post(
        reverse("api:jobs"), {"version": canaries["version"], "file": upload}
    )
    assert response.status_code == 422
    assert f"v{canaries['version']} is not frozen" in response.json()["detail"]


@pytest.mark.parametrize("scope", ["read", "write"])
def test_a_token_of_one_project_is_a_404_in_every_other(client, api_objects, canaries, scope):
    both = member("both", (default_project(), Role.ADMIN), (canaries["project"], Role.ADMIN))
    _, for_b = create_api_token(user=both, name="b", scope=scope, project=canaries["project"])
    _, for_a = create_api_token(user=both, name="a", scope=scope, project=default_project())
    _, for_all = create_api_token(user=both, name="all", scope=scope)
    b = f"{API}projects/customer-bot/domains/"
    a = f"{API}projects/default/domains/"
    assert client.get(b, **bearer(for_b)).status_code == 200
    assert client.get(a, **bearer(for_b)).status_code == 404
    assert client.get(API + "domains/", **bearer(for_b)).status_code == 404  # the default's
    assert client.get(b, **bearer(for_a)).status_code == 404
    assert client.get(a, **bearer(for_a)).status_code == 200
    assert client.get(b, **bearer(for_all)).status_code == 200
    assert client.get(a, **bearer(for_all)).status_code == 200
    listed = client.get(f"{API}projects/", **bearer(for_b)).json()
    assert [p["slug"] for p in listed] == ["customer-bot"]
    everywhere = client.get(f"{API}projects/", **bearer(for_all)).json()
    assert sorted(p["slug"] for p in everywhere) == ["customer-bot", "default"]
    # a write needs a write token, in the token's project
    post = client.post(
        f"{API}projects/customer-bot/imports/{canaries['import']}/retry/", **bearer(for_b)
    )
    assert post.status_code == (409 if scope == "write" else 403)  # failed, its file is gone
    elsewhere = client.post(f"{API}projects/default/imports/1/retry/", **bearer(for_b))
    assert elsewhere.status_code == 404


def test_a_token_reaches_a_project_only_while_its_owner_is_a_member(client, canaries):
    owner = member("owner", (default_project(), Role.LEAD))
    _, raw = create_api_token(user=owner, name="all", scope="read")
    b = f"{API}projects/customer-bot/domains/"
    assert client.get(b, **bearer(raw)).status_code == 404
    grant_role(project=canaries["project"], user=owner, role=Role.ANNOTATOR)
    assert client.get(b, **bearer(raw)).status_code == 200
    # the role in B is B's: an annotator may not list B's gold versions
    assert client.get(f"{API}projects/customer-bot/versions/", **bearer(raw)).status_code == 403
    assert client.get(f"{API}projects/default/versions/", **bearer(raw)).status_code == 200


def test_a_token_cannot_be_made_for_a_project_its_owner_is_not_in(canaries):
    outsider = member("outsider", (default_project(), Role.ADMIN))
    with pytest.raises(Exception, match="No such project"):
        create_api_token(user=outsider, name="b", project=canaries["project"])


def test_the_projects_list_under_a_prefix_is_a_404(client_for, a_admin):
    assert client_for(a_admin).get(f"{API}projects/default/projects/").status_code == 404
