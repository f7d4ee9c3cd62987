"""Who may act on a project's object is decided by the roles held in *that* project, wherever
the call comes from (issue 27: roles are per project). A person who is lead in A and annotator
in B adjudicates nothing of B — asked from a task, from a page of A or from B's own pages."""

import pytest

from goldset.models import Project
from goldset.selectors.answers import adjudicable_records
from goldset.services.projects import grant_role, remove_member
from tests.factories import (
    AnswerRecordFactory,
    DomainFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
    UserFactory,
)
from workbench.roles import Role, hold_roles, roles_in, roles_of

pytestmark = pytest.mark.django_db


def _record(project):
    domain = DomainFactory(project=project, slug=f"dom-{project.slug}")
    return AnswerRecordFactory(
        project=project,
        status="needs_adjudication",
        question=QuestionFactory(project=project, domain=domain, question_id=f"q-{project.slug}"),
        run=RunFactory(
            project=project,
            run_id=f"run-{project.slug}",
            system=SystemFactory(project=project, system_id=f"sys-{project.slug}"),
        ),
    )


@pytest.fixture
def two_projects():
    a = Project.objects.create(name="Alpha", slug="alpha")
    b = Project.objects.create(name="Bravo", slug="bravo")
    person = UserFactory(username="lead-a-ann-b")
    grant_role(project=a, user=person, role=Role.LEAD)
    grant_role(project=b, user=person, role=Role.ANNOTATOR)
    record_a, record_b = _record(a), _record(b)
    return a, b, person, record_a, record_b


def test_roles_in_names_the_role_of_each_project(two_projects):
    a, b, person, *_ = two_projects
    assert roles_in(person, a) == {Role.LEAD.value}
    assert roles_in(person, b.pk) == {Role.ANNOTATOR.value}
    assert roles_of(person) == {Role.LEAD.value, Role.ANNOTATOR.value}  # installation pages


def test_a_lead_of_a_adjudicates_nothing_of_b_from_anywhere(two_projects):
    a, b, person, record_a, record_b = two_projects
    # outside a request (a task, a command): roles of every project are held, yet B's are used
    assert list(adjudicable_records(user=person, project=b)) == []
    assert list(adjudicable_records(user=person, project=a)) == [record_a]
    # inside a request of A (the middleware holds A's roles): still nothing of B
    hold_roles(person, a, frozenset({Role.LEAD.value}))
    assert list(adjudicable_records(user=person, project=b)) == []


def test_a_role_change_is_seen_at_once(two_projects):
    a, b, person, _record_a, record_b = two_projects
    assert roles_in(person, b) == {Role.ANNOTATOR.value}
    grant_role(project=b, user=person, role=Role.LEAD)
    assert list(adjudicable_records(user=person, project=b)) == [record_b]
    remove_member(project=b, user=person)
    assert roles_in(person, b) == frozenset()
