"""Promotion in Chromium: a lead promotes a TRIAGE triple that became gold on one review; a
second reviewer then finds it in their queue, reviews it, and it is gold by consensus."""

import re

import pytest

from goldset.models import Resolution, Tier, TripleState
from tests.goldset.curation_support import review
from tests.goldset.promotion_support import triage_triple
from workbench.models import AuditEvent
from workbench.roles import Role

SHOTS = "/tmp/promotion-shots"


@pytest.fixture
def triple_gold_on_one_review(transactional_db, make_user):
    author = make_user(Role.ANNOTATOR, username="author")
    first = make_user(Role.ANNOTATOR, username="rev1")
    triple = triage_triple(author, question="Which summary of the retention clause is accurate?")
    review(first, triple)
    assert (triple.tier, triple.state) == (Tier.TRIAGE, TripleState.GOLD)
    return triple


def test_lead_promotes_a_triage_triple_and_a_second_reviewer_gets_it(
    triple_gold_on_one_review, browser_login, make_user
):
    triple = triple_gold_on_one_review
    lead = browser_login(make_user(Role.LEAD, username="lead"))
    second = browser_login(make_user(Role.ANNOTATOR, username="rev2"))

    second.goto("/curation/reviews/")
    assert "0 revisions waiting" in second.locator("#next-item").inner_text()

    lead.goto(f"/curation/triples/{triple.pk}/")
    lead.click("#tier-history-link")
    lead.wait_for_url(re.compile(rf".*/promotion/triples/{triple.pk}/$"))
    lead.click("#promote-form button[type=submit]")  # no reason: the browser refuses
    assert lead.url.endswith(f"/promotion/triples/{triple.pk}/")
    lead.fill("#id_reason", "Release gate R-12 depends on this case")
    lead.click("#promote-form button[type=submit]")
    lead.locator(".messages", has_text="is GOLD now").wait_for()
    history = lead.locator("#tier-history").inner_text()
    assert "promoted" in history and "Release gate R-12" in history and "lead" in history
    lead.screenshot(path=f"{SHOTS}/promoted-triple.png", full_page=True)

    triple.refresh_from_db()
    assert (triple.tier, triple.state, triple.routing_rule) == (
        Tier.GOLD,
        TripleState.PENDING_REVIEW,
        "promoted",
    )

    second.goto("/curation/reviews/")
    assert "1 revision waiting" in second.locator("#next-item").inner_text()
    second.keyboard.press("n")  # "Next item"
    second.wait_for_url(re.compile(r".*/curation/reviews/\d+/$"))
    assert "retention clause" in second.content()
    second.keyboard.press("1")  # confirm
    second.keyboard.press("Enter")
    second.locator("#review-card", has_text="Your review is recorded").wait_for()

    triple.refresh_from_db()
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)
    assert AuditEvent.objects.filter(verb="promoted", object_id=str(triple.pk)).count() == 1

    lead.goto("/promotion/")
    lead.screenshot(path=f"{SHOTS}/promotion-index.png", full_page=True)
    assert triple.external_id in lead.locator("#recent-promotions").inner_text()
