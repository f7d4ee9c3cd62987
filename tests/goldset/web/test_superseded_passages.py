"""Issue 12 item 1 on the answer pages: a cited or gold passage whose block has a newer version
is badged "superseded" on the label and adjudication pages (for every role that may open them)."""

import pytest
from django.urls import reverse

from goldset.models import Block, LabelAssignment
from goldset.services.labeling import claim_next_item, submit_label
from tests.factories import BlockVersionFactory, DomainFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    assert_blind,
    build_conflict_item,
    default_project,
)

pytestmark = pytest.mark.django_db
BADGE = "superseded: v2 is current"


@pytest.fixture
def item():
    record, annotators = build_conflict_item(DomainFactory(slug="supply_chain"))
    for annotator in annotators:
        claim_next_item(annotator=annotator, project=default_project())
    return record, annotators


def _supersede():
    BlockVersionFactory(
        block=Block.objects.get(block_id="blk-memo-02"), version=2, text="Approval moved."
    )


def test_label_page_badges_superseded_passages_only_when_superseded(client_for, item):
    record, (one, *_) = item
    url = reverse("answers:item", args=[record.public_id])
    assert BADGE not in client_for(one).get(url).content.decode()
    _supersede()
    html = client_for(one).get(url).content.decode()
    assert html.count(BADGE) == 2  # the citation and the gold evidence passage
    assert_blind(html)


def test_adjudication_page_badges_superseded_text_for_leads_and_admins(
    client, client_for, item, lead, admin_user, annotator
):
    record, (one, two, three) = item
    labels = (
        (one, {**GOOD, "rationale": "memo governs"}),
        (two, {**BAD, "severe_safety": True, "rationale": "severe"}),
        (three, BAD),
    )
    for who, fields in labels:
        submit_label(assignment=LabelAssignment.objects.get(annotator=who), **fields)
    _supersede()
    url = reverse("answers:adjudicate", args=[record.public_id])
    assert client.get(url).status_code == 302
    assert client_for(annotator).get(url).status_code == 403
    for user in (lead, admin_user):
        response = client_for(user).get(url)
        assert response.status_code == 200 and BADGE in response.content.decode()
    assert_blind(client_for(lead).get(url).content.decode())
