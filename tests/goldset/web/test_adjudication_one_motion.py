"""A recorded adjudication answers with the next open item of the lead's queue."""

import pytest
from django.urls import reverse

from goldset.models import RecordStatus
from tests.factories import AnswerRecordFactory, DomainFactory
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators

pytestmark = pytest.mark.django_db

HX_ITEM = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "adjudication-item"}
FINAL = {
    "acceptability": "unacceptable",
    "grounding": "partially_grounded",
    "severe_safety": "no",
    "primary_failure": "missing_governing_exception",
    "rationale": "The governing exception is omitted.",
}


def test_adjudication_answers_with_the_next_open_item_then_the_queue(client_for, lead):
    domain = DomainFactory(slug="supply_chain")
    annotators = qualified_annotators(domain, 3)
    records = [AnswerRecordFactory(question__domain=domain) for _ in range(2)]
    for _ in records:
        claim_and_label(annotators[0], **GOOD)
        claim_and_label(annotators[1], **{**GOOD, "grounding": "partially_grounded"})
        claim_and_label(annotators[2], **BAD)
    assert {r.status for r in (r.__class__.objects.get(pk=r.pk) for r in records)} == {
        RecordStatus.NEEDS_ADJUDICATION
    }
    client = client_for(lead)
    first, second = sorted(records, key=lambda r: (r.created_at, r.pk))
    response = client.post(reverse("answers:adjudicate", args=[first.public_id]), FINAL, **HX_ITEM)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="adjudication-item"')
    assert response["HX-Push-Url"] == reverse("answers:adjudicate", args=[second.public_id])
    assert second.public_id in html and f"Item {first.public_id} adjudicated." in html
    last = client.post(reverse("answers:adjudicate", args=[second.public_id]), FINAL, **HX_ITEM)
    assert last["HX-Redirect"] == reverse("answers:adjudication_queue")
