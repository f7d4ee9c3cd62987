"""The jobs list's filters (a release gate finds its baseline with them): ``version`` (7, v7,
latest; a version not frozen has no jobs), ``system`` (answer logs the system answered in,
retrieval runs named after it) and ``status``; a value that is not one is a 400 naming the
field. Admins only, as the list itself; another
project's jobs are never listed and its prefix is a 404 to a non-member."""

import pytest
from django.urls import reverse

from goldset.models import GoldVersion, Project, ScoringJob
from goldset.services.projects import grant_role
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


def job(version, name, *, kind="retrieval", status="succeeded", systems=()):
    summary = {"systems": {s: {"release": True} for s in systems}} if systems else {}
    return ScoringJob.objects.create(
        project=version.project, version=version, name=name, kind=kind,
        run_format="answers" if kind == "answers" else "trec", run_filename="r",
        run_sha256="0" * 64, run_size=1, status=status, summary=summary,
    )  # fmt: skip


@pytest.fixture
def jobs(version):
    v2 = GoldVersion.objects.create(project=version.project, number=2, sealed=True)
    return {
        "bm25": job(version, "bm25"),
        "bm25_failed": job(version, "bm25", status="failed"),
        "answers": job(version, "nightly.jsonl", kind="answers", systems=("bot-a", "bot-b")),
        "named_like_a_system": job(version, "bot-a.jsonl", kind="answers", systems=("bot-c",)),
        "bm25_v2": job(v2, "bm25"),
    }


def ids(response):
    assert response.status_code == 200, response.content[:300]
    return [row["id"] for row in response.json()["results"]]


def test_admins_filter_jobs_by_version_system_and_status(client_for, admin_user, jobs):
    api = client_for(admin_user)
    url = reverse("api:jobs")
    assert ids(api.get(url, {"system": "bm25"})) == [
        jobs["bm25_v2"].pk, jobs["bm25_failed"].pk, jobs["bm25"].pk,
    ]  # fmt: skip
    assert ids(api.get(url, {"system": "bm25", "version": "v1", "status": "succeeded"})) == [
        jobs["bm25"].pk
    ]
    assert ids(api.get(url, {"system": "bot-a"})) == [jobs["answers"].pk]
    assert ids(api.get(url, {"system": "bot-b", "version": "1"})) == [jobs["answers"].pk]
    assert ids(api.get(url, {"version": "latest"})) == [jobs["bm25_v2"].pk]
    assert ids(api.get(url, {"status": "failed"})) == [jobs["bm25_failed"].pk]
    assert ids(api.get(url, {"system": "nobody"})) == []
    assert ids(api.get(url, {"version": "v9"})) == []  # not frozen (yet): no jobs
    assert ids(api.get(url, {"version": "v99999999999999999999"})) == []


@pytest.mark.parametrize(
    "query,field,message",
    [
        ({"status": "done"}, "status", "unknown status 'done'"),
        ({"version": "rel ease!"}, "version", "a version is a number (7), v7, a tag or 'latest'"),
        ({"sytem": "bm25"}, "sytem", ""),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(client_for, admin_user, jobs, query, field, message):
    response = client_for(admin_user).get(reverse("api:jobs"), query)
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    body = response.json()
    assert field in body["detail"] and message in body["detail"]


def test_the_filters_answer_each_role_as_the_list_does(
    client, client_for, annotator, lead, admin_user, jobs
):
    url = reverse("api:jobs") + "?system=bm25&version=1&status=succeeded"
    assert client.get(url).status_code == 401
    for user in (annotator, lead):
        response = client_for(user).get(url)
        assert response.status_code == 403 and response["Content-Type"] == PROBLEM
    assert ids(client_for(admin_user).get(url)) == [jobs["bm25"].pk]


def test_another_projects_jobs_are_not_found_through_the_filters(client_for, admin_user, jobs):
    other = Project.objects.create(name="Customer bot", slug="customer-bot")
    theirs = GoldVersion.objects.create(project=other, number=1, sealed=True)
    job(theirs, "bm25")
    # The default project's list: its own bm25 jobs only.
    assert len(ids(client_for(admin_user).get(reverse("api:jobs"), {"system": "bm25"}))) == 3
    prefixed = "/api/v1/projects/customer-bot/jobs/?system=bm25&version=1"
    assert len(ids(client_for(admin_user).get(prefixed))) == 1
    outsider = UserFactory(username="default-admin-only")
    grant_role(project=jobs["bm25"].project, user=outsider, role="admin")
    response = client_for(outsider).get(prefixed)
    assert response.status_code == 404 and response["Content-Type"] == PROBLEM
