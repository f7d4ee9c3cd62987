"""``updated_since`` on every list but the alerts raised now (issue 29): the schema documents it (and only the
filters each list takes) on every list operation; a bad value is a 400 problem naming it, an
unknown filter a 400 naming the filter; domains, a document's blocks (a new version changes a
block) and a job's rows (written when it finishes) answer only what changed since."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from goldset.models import Project, ScoreQueryResult, default_project_id
from goldset.services.projects import grant_role
from tests.factories import BlockFactory, BlockVersionFactory, DocumentFactory, DomainFactory
from workbench.roles import Role

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"

# The lists without a change time to filter on, small and answered whole: the alerts raised
# now, computed at each request from the current figures and counters (not stored rows; an alert
# that ended would never be "changed since"); a project's members (a role change keeps no time:
# "joined since" would miss it); the runs a new pairwise task may compare, the task form's
# choices ("Run N" numbered over all of them, newest first, with their current answer counts).
WHOLE_LISTS = {"alerts_list", "projects_members_list", "pairwise_runs_list"}


@pytest.fixture
def schema(client):
    return client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()


def list_operations(schema):
    return {
        op["operationId"]: (path, op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if method == "get" and op["operationId"].endswith("_list")
    }


def test_every_list_but_the_whole_ones_documents_updated_since(schema):
    lists = list_operations(schema)
    # with the pairwise tasks, judgments, calibration pairs and qualification results, the
    # sampling rules, a project's members, the runs a pairwise task may compare and the split
    # pairs waiting for a lead
    assert len(lists) == 26
    missing = [
        name
        for name, (_, op) in lists.items()
        if not any(p["name"] == "updated_since" for p in op.get("parameters", []))
    ]
    assert sorted(missing) == sorted(WHOLE_LISTS)


LISTS = [
    ("api:domains", []),
    ("api:documents", []),
    ("api:triples", []),
    ("api:versions", []),
    ("api:tags", []),
    ("api:jobs", []),
    ("api:agreement_snapshots", []),
    ("api:labels", []),
    ("api:reviews", []),
    ("api:adjudications", []),
    ("api:adjudication_queue", []),
    ("api:webhooks", []),
    ("api:pairwise_calibration_pairs", []),
    ("api:pairwise_qualifications", []),
    ("api:pairwise_adjudications", []),
]


@pytest.mark.parametrize("name,args", LISTS)
def test_a_bad_updated_since_or_an_unknown_filter_is_a_400_naming_it(
    client_for, admin_user, name, args
):
    api = client_for(admin_user)
    url = reverse(name, args=args)
    assert api.get(url).status_code == 200
    for query, field in (("updated_since=last+week", "updated_since"), ("colour=red", "colour")):
        response = api.get(f"{url}?{query}")
        assert response.status_code == 400, (name, query)
        assert response["Content-Type"] == PROBLEM
        assert response.json()["errors"][0]["field"] == field
    later = (timezone.now() + timedelta(minutes=1)).isoformat()
    assert api.get(url, {"updated_since": later}).json()["results"] == []


def test_domains_answer_those_created_since(client_for, annotator):
    old = DomainFactory(slug="old_domain")
    old.__class__.objects.filter(pk=old.pk).update(created_at=datetime(2020, 1, 1, tzinfo=UTC))
    DomainFactory(slug="new_domain")
    api = client_for(annotator)
    since = {"updated_since": "2021-01-01T00:00:00Z"}
    assert [d["slug"] for d in api.get(reverse("api:domains"), since).json()["results"]] == [
        "new_domain"
    ]


def test_a_documents_blocks_changed_since_are_those_with_a_new_version(client_for, annotator):
    document = DocumentFactory()
    kept, revised = (BlockFactory(document=document, block_id=b) for b in ("b-kept", "b-new"))
    first = [BlockVersionFactory(block=kept), BlockVersionFactory(block=revised)]
    moment = timezone.now()
    for version in first:  # created before the moment the client last synced
        version.__class__.objects.filter(pk=version.pk).update(
            created_at=moment - timedelta(days=1)
        )
    BlockVersionFactory(block=revised, version=2)
    url = reverse("api:document_blocks", args=[document.document_id])
    rows = client_for(annotator).get(url, {"updated_since": moment.isoformat()}).json()
    assert [(b["block_id"], b["latest_version"]) for b in rows["results"]] == [("b-new", 2)]
    assert len(client_for(annotator).get(url).json()["results"]) == 2


def test_a_jobs_rows_are_new_when_it_finished_since(client_for, admin_user, job):
    ScoreQueryResult.objects.create(job=job, query_id="q1", metrics={"ndcg@10": 1.0})
    job.finished_at = timezone.now()
    job.save(update_fields=["finished_at"])
    url = reverse("api:job_queries", args=[job.pk])
    api = client_for(admin_user)
    before = (job.finished_at - timedelta(seconds=1)).isoformat()
    after = (job.finished_at + timedelta(seconds=1)).isoformat()
    assert [r["query_id"] for r in api.get(url, {"updated_since": before}).json()["results"]] == [
        "q1"
    ]
    assert api.get(url, {"updated_since": after}).json()["results"] == []


def test_updated_since_on_projects_answers_those_created_or_archived_since(client_for, admin_user):
    old = Project.objects.create(name="Old", slug="old")
    archived = Project.objects.create(name="Archived", slug="archived")
    long_ago = timezone.now() - timedelta(days=3)
    Project.objects.filter(pk__in=[old.pk, archived.pk, default_project_id()]).update(
        created_at=long_ago
    )
    since = timezone.now() - timedelta(days=1)
    Project.objects.filter(pk=archived.pk).update(archived_at=timezone.now())
    new = Project.objects.create(name="New", slug="new")
    for project in (old, archived, new):
        grant_role(project=project, user=admin_user, role=Role.ANNOTATOR)
    api = client_for(admin_user)
    everything = api.get(reverse("api:projects")).json()
    assert {p["slug"] for p in everything} >= {"default", "old", "archived", "new"}
    changed = api.get(reverse("api:projects"), {"updated_since": since.isoformat()}).json()
    assert {p["slug"] for p in changed} == {"archived", new.slug}
    response = api.get(reverse("api:projects"), {"updated_since": "last week"})
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "updated_since"
