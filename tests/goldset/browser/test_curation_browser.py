"""The curation protocol in Chromium: an author writes triples, reviewers in separate browser
contexts review them with the keyboard, a flagged triple is discussed, revised and confirmed."""

import re

import pytest

from goldset.models import Triple, TripleState
from tests.factories import BlockVersionFactory
from workbench.roles import Role


@pytest.fixture
def people(transactional_db, make_user):
    BlockVersionFactory(
        block__block_id="blk-keys-01",
        text="Data encryption keys are rotated every 90 days; rotation events go to the audit trail.",
    )
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 5)},
    }


def write_in_browser(page, question, answer):
    page.goto("/curation/triples/new/")
    page.fill("#id_question", question)
    page.fill("#block-q", "rotated every 90")
    page.click("#block-results button[data-fill-value='blk-keys-01@1']")
    assert page.input_value("#id_block_version") == "blk-keys-01@1"
    page.fill("#id_expected_answer", answer)
    page.select_option("#id_task_type", "factual_qa")
    page.select_option("#id_source", "public_rfp")
    page.click("#triple-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/curation/triples/\d+/$"))
    assert "Pending review" in page.locator("h1").inner_text()
    return Triple.objects.get(current_revision__question=question)


def review_with_keyboard(page, *keys):
    page.goto("/curation/reviews/")
    page.keyboard.press("n")  # "Next item"
    page.wait_for_url(re.compile(r".*/curation/reviews/\d+/$"))
    for key in keys:
        page.keyboard.press(key)
    page.keyboard.press("Enter")  # submit
    page.locator("#review-card", has_text="Your review is recorded").wait_for()


def test_write_review_discuss_revise_confirm_in_the_browser(people, browser_login):
    author = browser_login(people["author"])
    reviewers = {k: browser_login(people[k]) for k in ("r1", "r2", "r3", "r4")}

    first = write_in_browser(
        author, "How often are data encryption keys rotated?", "Every 90 days."
    )
    review_with_keyboard(reviewers["r1"], "1")
    review_with_keyboard(reviewers["r2"], "1")
    first.refresh_from_db()
    assert first.state == TripleState.GOLD
    author.reload()
    assert "Gold" in author.locator("h1").inner_text()
    assert "Consensus" in author.locator("#triple-meta").inner_text()

    second = write_in_browser(
        author, "Where do key rotation events go?", "Every 90 days, to the SIEM."
    )
    review_with_keyboard(reviewers["r1"], "1")
    review_with_keyboard(reviewers["r2"], "2", "5", "7")  # flag: answer not entailed, overstated
    second.refresh_from_db()
    assert second.state == TripleState.IN_DISCUSSION

    author.goto(f"/curation/triples/{second.pk}/")
    assert "In discussion" in author.locator("h1").inner_text()
    author.fill("#id_body", "Is 'audit trail' the block's wording?")
    author.click("#message-form button[type=submit]")
    author.locator("#discussion", has_text="audit trail").wait_for()
    flagger = reviewers["r2"]
    flagger.goto(f"/curation/triples/{second.pk}/")
    flagger.fill("#id_body", "Yes: say 'the audit trail', not SIEM.")
    flagger.click("#message-form button[type=submit]")
    flagger.locator("#discussion", has_text="not SIEM").wait_for()

    author.reload()
    author.click("#triple-actions >> text=Revise")
    author.fill("#id_expected_answer", "Rotation events go to the audit trail.")
    author.click("#revise-form button[type=submit]")
    author.wait_for_url(f"**/curation/triples/{second.pk}/")
    assert "Pending review" in author.locator("h1").inner_text()

    review_with_keyboard(reviewers["r3"], "1")  # fresh reviewers for the new revision
    review_with_keyboard(reviewers["r4"], "1")
    second.refresh_from_db()
    assert (second.state, second.current_revision.number) == (TripleState.GOLD, 2)
    author.reload()
    assert "Gold" in author.locator("h1").inner_text()
    assert "Consensus after revision" in author.locator("#triple-meta").inner_text()
