"""Issue 14 in Chromium, in one browser session: (1) a reviewer flags a triple, the author
replies, and the reviewer's inbox shows the reply, whose link opens the discussion; (2) an
annotator fails calibration, asks for a retake, a lead grants it, and the retake is a fresh draw
of the set."""

import re

import pytest

from goldset.models import CalibrationRetake, LabelAssignment, RetakeStatus, TripleState
from tests.factories import BlockVersionFactory
from tests.goldset.curation_support import review, write_triple
from tests.goldset.inbox_support import (
    add_items,
    calibration_domain,
    fail_calibration,
    label_pending,
)
from workbench.roles import Role

pytestmark = [pytest.mark.browser]


def test_inbox_reply_and_calibration_retake_in_the_browser(
    transactional_db, browser_login, make_user
):
    # ---- (1) flag → reply → the reviewer's inbox → the discussion
    author_user = make_user(Role.ANNOTATOR, username="author")
    r1, r2 = (make_user(Role.ANNOTATOR, username=f"rev{i}") for i in (1, 2))
    version = BlockVersionFactory(
        block__block_id="blk-keys-01",
        text="Data encryption keys are rotated every 90 days; rotation events go to the audit trail.",
    )
    triple = write_triple(
        author_user,
        version=version,
        question="Where do key rotation events go?",
        expected_answer="To the SIEM.",
    )
    review(r1, triple, "confirm")

    reviewer = browser_login(r2)
    reviewer.goto("/curation/reviews/")
    reviewer.keyboard.press("n")  # next item
    reviewer.wait_for_url(re.compile(r".*/curation/reviews/\d+/$"))
    for key in ("2", "5"):  # flag: answer not entailed
        reviewer.keyboard.press(key)
    reviewer.keyboard.press("Enter")
    reviewer.locator("#review-card", has_text="Your review is recorded").wait_for()
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION

    author = browser_login(author_user)
    author.goto("/")
    author.click("#inbox a:has-text('A reviewer flagged your triple')")
    author.wait_for_url(re.compile(rf".*/curation/triples/{triple.pk}/#discussion$"))
    author.fill("#id_body", "The block says audit trail; I will revise.")
    author.click("#message-form button[type=submit]")
    author.locator("#discussion", has_text="I will revise").wait_for()

    reviewer.goto("/")
    reviewer.locator("#notification-badge .unread-count", has_text="1").wait_for()
    assert reviewer.locator("#inbox-replies .inbox-count").inner_text() == "1"
    reply = reviewer.locator("#inbox .inbox-unread a", has_text="The author replied")
    assert "Where do key rotation events go?" in reply.inner_text()
    reply.click()
    reviewer.wait_for_url(re.compile(rf".*/curation/triples/{triple.pk}/#discussion$"))
    assert "I will revise" in reviewer.locator("#discussion").inner_text()
    reviewer.goto("/")
    reviewer.locator("#notification-badge").wait_for()
    assert reviewer.locator("#inbox-replies").count() == 0  # read now

    # ---- (2) failed calibration → retake request → the lead grants → a fresh draw
    lead_user = make_user(Role.LEAD, username="lead")
    domain = calibration_domain(lead_user)
    learner = make_user(Role.ANNOTATOR, username="learner")
    fail_calibration(learner, domain)
    first = set(
        LabelAssignment.objects.filter(annotator=learner).values_list("record_id", flat=True)
    )
    add_items(lead_user, domain)  # six more items: a fresh draw can avoid the first six

    page = browser_login(learner)
    page.goto("/")
    failed = page.locator(f"#failed-calibration-{domain.slug}")
    assert "calibration not passed" in failed.inner_text()
    failed.locator("textarea").fill("I misread the grounding scale.")
    failed.locator("button", has_text="Request a retake").click()
    page.wait_for_url(re.compile(r".*/answers/calibration/"))
    page.locator(f"#calibration-{domain.slug} .retake-pending").wait_for()

    boss = browser_login(lead_user)
    boss.goto("/")
    boss.click("#inbox-retakes a")
    boss.wait_for_url(re.compile(r".*/inbox/retakes/$"))
    request = boss.locator(".retake-request", has_text="learner")
    assert "I misread the grounding scale." in request.inner_text()
    request.locator("input[value=grant]").check()
    request.locator("textarea").fill("Fine: read the grounding guide first.")
    request.locator("button[type=submit]").click()
    boss.locator(".messages", has_text="Retake granted").wait_for()
    retake = CalibrationRetake.objects.get(annotator=learner)
    assert retake.status == RetakeStatus.GRANTED and retake.decided_by == lead_user

    page.goto("/")
    assert page.locator(".inbox-unread a", has_text="granted your").count() == 1
    page.goto("/answers/calibration/")
    section = page.locator(f"#calibration-{domain.slug}")
    assert "0 of 6 labeled" in section.inner_text()
    section.locator("a.button", has_text="Continue").click()
    page.wait_for_url(re.compile(r".*/answers/items/\w+/$"))
    public_id = page.url.rstrip("/").rsplit("/", 1)[1]
    assert public_id in retake.drawn_items
    drawn = set(
        LabelAssignment.objects.filter(annotator=learner).values_list("record_id", flat=True)
    )
    assert len(drawn) == 6 and drawn.isdisjoint(first)
    assert label_pending(learner, domain, right=True).passed
    page.goto("/answers/calibration/")
    assert page.locator(f"#calibration-{domain.slug} .ok", has_text="qualified").count() == 1
