"""The object-scope (IDOR) suite per project (issue 27: "the blinding and IDOR suites run per
project"). In the default project and in a second project made with the project service —
whose people are members there only — another member's triple, review and label pages answer
404 to a member of the same project who does not own them, as in
tests/goldset/web/test_curation_access.py; and the role-gated pages follow the person's role *in
the project of the URL*: someone who is lead in one project and only annotator in the other
gets 403 for the lead pages under the other project's ``/p/<slug>/`` and the annotator pages
there. (That project A's URLs show nothing of B is tests/workbench/web/test_projects_crawl.py.)"""

from dataclasses import dataclass

import pytest
from django.urls import reverse

from goldset.models import AnswerRecord, Domain, Project, RecordStatus
from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.services.labeling import claim_next_item
from goldset.services.projects import create_project, grant_role
from goldset.services.reviews import claim_next_assignment
from goldset.services.triples import create_triple
from tests.factories import (
    AnswerRecordFactory,
    BlockFactory,
    BlockVersionFactory,
    CalibrationResultFactory,
    DocumentFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
    UserFactory,
    default_project,
)
from workbench.roles import Role

pytestmark = pytest.mark.django_db

SECOND = "policy-scope"
LEAD_PAGES = ["curation:dashboard", "curation:rereview", "answers:adjudication_queue"]
ANNOTATOR_PAGES = ["curation:queue", "answers:queue"]


@dataclass
class Place:
    """The project under test (``here``) and the other one (``there``); people are members of
    ``here`` only, except ``dual``: lead there, annotator here."""

    here: Project
    there: Project
    people: dict

    def url(self, name: str, *args) -> str:
        return f"/p/{self.here.slug}" + reverse(name, args=args or None)


def _member(project, username, role):
    user = UserFactory(username=username)
    grant_role(project=project, user=user, role=role)
    return user


@pytest.fixture(params=[DEFAULT_PROJECT_SLUG, SECOND])
def place(request, make_user) -> Place:
    founder = make_user(Role.ADMIN, username="installation-admin")
    second = create_project(name="Policy scope", slug=SECOND, by=founder)
    here, there = (
        (default_project(), second)
        if request.param == DEFAULT_PROJECT_SLUG
        else (second, default_project())
    )
    tag = here.slug
    people = {
        "author": _member(here, f"author-{tag}", Role.ANNOTATOR),
        "r1": _member(here, f"rev1-{tag}", Role.ANNOTATOR),
        "r2": _member(here, f"rev2-{tag}", Role.ANNOTATOR),
        "lead": _member(here, f"lead-{tag}", Role.LEAD),
        "dual": _member(there, f"dual-{tag}", Role.LEAD),
    }
    grant_role(project=here, user=people["dual"], role=Role.ANNOTATOR)
    return Place(here=here, there=there, people=people)


def _version(project):
    domain = Domain.objects.create(project=project, slug="scope", name="Scope")
    document = DocumentFactory(project=project, domain=domain, document_id="doc-scope")
    block = BlockFactory(project=project, document=document, block_id="doc-scope#1")
    return BlockVersionFactory(block=block)


def _triple(place: Place):
    return create_triple(
        project=place.here,
        author=place.people["author"],
        block_version=_version(place.here),
        question="What encryption-at-rest mechanism protects customer documents?",
        expected_answer="AES-256 at the storage layer.",
        task_type="factual_qa",
        source="public_rfp",
    )


def _record(place: Place) -> AnswerRecord:
    domain = Domain.objects.create(project=place.here, slug="scope-answers", name="Answers")
    system = SystemFactory(project=place.here, system_id="scope-system")
    return AnswerRecordFactory(
        project=place.here,
        question=QuestionFactory(project=place.here, domain=domain, question_id="q-scope"),
        run=RunFactory(project=place.here, run_id="scope-run", system=system),
    )


def test_a_triple_is_its_authors_and_the_leads_in_the_project(place, client_for):
    triple = _triple(place)
    author, other, lead = (place.people[k] for k in ("author", "r1", "lead"))
    url = place.url("curation:triple", triple.pk)
    assert client_for(author).get(url).status_code == 200
    assert client_for(lead).get(url).status_code == 200
    assert client_for(other).get(url).status_code == 404
    for name in ("curation:revise", "curation:split"):
        assert client_for(other).get(place.url(name, triple.pk)).status_code == 404
    for name in ("curation:message", "curation:drop", "curation:verify"):
        assert client_for(other).post(place.url(name, triple.pk)).status_code == 404


def test_a_review_page_is_its_reviewers_in_the_project(place, client_for):
    _triple(place)
    r1, r2, author = (place.people[k] for k in ("r1", "r2", "author"))
    assignment = claim_next_assignment(project=place.here, reviewer=r1)
    assert assignment is not None
    url = place.url("curation:review", assignment.pk)
    assert client_for(r1).get(url).status_code == 200
    assert client_for(r2).get(url).status_code == 404
    assert client_for(author).get(url).status_code == 404
    assert client_for(r2).post(url, {"verdict": "confirm"}).status_code == 404
    assert client_for(r2).post(place.url("curation:review_skip", assignment.pk)).status_code == 404


def test_a_label_item_is_its_annotators_in_the_project(place, client_for):
    record = _record(place)
    r1, r2 = place.people["r1"], place.people["r2"]
    for person in (r1, r2):
        CalibrationResultFactory(annotator=person, domain=record.domain)
    claim = claim_next_item(project=place.here, annotator=r1)
    assert claim.assignment is not None and claim.assignment.record_id == record.pk
    url = place.url("answers:item", record.public_id)
    assert client_for(r1).get(url).status_code == 200
    assert client_for(r2).get(url).status_code == 404
    assert client_for(r2).post(url, {"acceptability": "acceptable"}).status_code == 404
    assert client_for(r2).post(place.url("answers:skip", record.public_id)).status_code == 404


@pytest.mark.parametrize("name", LEAD_PAGES)
def test_lead_pages_follow_the_role_in_the_projects_url(place, client_for, name):
    dual, lead = place.people["dual"], place.people["lead"]
    assert client_for(lead).get(place.url(name)).status_code == 200
    # lead in the other project, annotator here: the lead page of here is refused
    assert client_for(dual).get(place.url(name)).status_code == 403
    there = f"/p/{place.there.slug}" + reverse(name)
    assert client_for(dual).get(there).status_code == 200
    # the lead of here is no member there: the project does not exist for them
    assert client_for(lead).get(there).status_code == 404


@pytest.mark.parametrize("name", ANNOTATOR_PAGES)
def test_annotator_pages_follow_the_role_in_the_projects_url(place, client_for, name):
    dual = place.people["dual"]
    assert client_for(dual).get(place.url(name)).status_code == 200
    assert client_for(dual).get(f"/p/{place.there.slug}" + reverse(name)).status_code == 403


def test_adjudication_of_a_projects_record_needs_the_lead_role_there(place, client_for):
    record = _record(place)
    AnswerRecord.objects.filter(pk=record.pk).update(
        status=RecordStatus.NEEDS_ADJUDICATION, adjudication_reason="no_majority"
    )
    url = place.url("answers:adjudicate", record.public_id)
    assert client_for(place.people["lead"]).get(url).status_code == 200
    assert client_for(place.people["dual"]).get(url).status_code == 403
    assert client_for(place.people["dual"]).post(url, {"rationale": "x"}).status_code == 403
    # under the project where the dual person is lead, the record is not there: 404
    there = f"/p/{place.there.slug}" + reverse("answers:adjudicate", args=[record.public_id])
    assert client_for(place.people["dual"]).get(there).status_code == 404
