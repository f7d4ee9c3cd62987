"""Who may adjudicate has one home, ``adjudicable_records`` (fetch and authorize in one call:
``access_record_for_adjudication``): the queue, the next-item step, the page, the inbox count and
the service all use it, so a person who is both annotator and lead is never sent an item they
may not adjudicate (one they labeled)."""

import pytest
from django.urls import reverse

from goldset.models import RecordStatus
from goldset.selectors.answers import (
    ADJUDICATORS,
    access_record_for_adjudication,
    list_adjudication_queue,
    next_item_for_lead,
)
from goldset.selectors.inbox import get_inbox
from goldset.services.adjudication import AdjudicationRejected, record_adjudication
from goldset.services.projects import grant_role
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    claim_and_label,
    default_project,
    qualified_annotators,
)
from workbench.access import ACCESS
from workbench.roles import Role, forget_roles

pytestmark = pytest.mark.django_db

FINAL = {"acceptability": "acceptable", "grounding": "fully_grounded", "rationale": "Holds."}


@pytest.fixture
def split():
    """A record with no majority whose first labeler has become a lead since."""
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    one, two, three = qualified_annotators(domain, 3)
    claim_and_label(one, **GOOD)
    claim_and_label(two, **{**GOOD, "grounding": "partially_grounded"})
    claim_and_label(three, **{**BAD, "severe_safety": True, "rationale": "Unsafe."})
    # the first labeler is a lead now (one role per project: promoted after labeling)
    grant_role(project=record.project, user=one, role=Role.LEAD)
    forget_roles(one)
    record.refresh_from_db()
    assert record.status == RecordStatus.NEEDS_ADJUDICATION
    return record, one


def _inbox_count(user) -> int:
    return next(
        (
            e.count
            for e in get_inbox(user=user, project=default_project()).entries
            if e.key == "adjudication"
        ),
        0,
    )


def test_an_annotator_lead_is_never_sent_an_item_they_labeled(split, lead, client_for):
    record, both = split
    # another lead gets it everywhere
    assert [
        r.public_id
        for r in list_adjudication_queue(user=lead, size=25, project=default_project()).items
    ] == [record.public_id]
    assert next_item_for_lead(user=lead, project=default_project()).public_id == record.public_id
    assert (
        access_record_for_adjudication(
            user=lead, public_id=record.public_id, project=default_project()
        ).pk
        == record.pk
    )
    assert _inbox_count(lead) == 1
    # the annotator-lead who labeled it: not in the queue, no next item, 404, refused, not counted
    assert list_adjudication_queue(user=both, size=25, project=default_project()).items == []
    assert (
        list_adjudication_queue(
            user=both, include_done=True, size=25, project=default_project()
        ).items
        == []
    )
    assert next_item_for_lead(user=both, project=default_project()) is None
    assert _inbox_count(both) == 0
    c = client_for(both)
    queue = c.get(reverse("answers:adjudication_queue")).content.decode()
    assert record.public_id not in queue
    assert c.get(reverse("answers:adjudicate", args=[record.public_id])).status_code == 404
    with pytest.raises(AdjudicationRejected, match="You labeled this item"):
        record_adjudication(lead=both, record=record, **FINAL)
    assert client_for(lead).get(reverse("answers:adjudication_queue")).status_code == 200
    assert (
        record.public_id
        in client_for(lead).get(reverse("answers:adjudication_queue")).content.decode()
    )


def test_the_access_table_gives_the_adjudication_pages_to_the_adjudicating_roles():
    for name in ("answers:adjudication_queue", "answers:adjudicate"):
        assert ACCESS[name].roles == ADJUDICATORS


def test_the_service_refuses_anyone_without_a_lead_role(split):
    record, _ = split
    annotator = UserFactory(role=Role.ANNOTATOR, username="plain-annotator")
    assert list_adjudication_queue(user=annotator, size=25, project=default_project()).items == []
    with pytest.raises(AdjudicationRejected, match="role"):
        record_adjudication(lead=annotator, record=record, **FINAL)


def test_after_adjudication_the_next_item_skips_what_the_lead_labeled(split, lead, client_for):
    record, both = split
    domain = record.question.domain
    other = AnswerRecordFactory(question__domain=domain)
    a, b, c = qualified_annotators(domain, 3, prefix="second")
    claim_and_label(a, **GOOD)
    claim_and_label(b, **{**GOOD, "grounding": "partially_grounded"})
    claim_and_label(c, **{**BAD, "severe_safety": True, "rationale": "Unsafe."})
    other.refresh_from_db()
    # the annotator-lead adjudicates the other item; the one they labeled is never offered next
    response = client_for(both).post(
        reverse("answers:adjudicate", args=[other.public_id]),
        {**FINAL, "severe_safety": "no"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("answers:adjudication_queue")
