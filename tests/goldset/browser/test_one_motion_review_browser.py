"""One motion per review in Chromium: a confirming review is one key plus Enter and one request,
the next revision arrives in the same response; `c` opens the comment and Ctrl+Enter submits
from it; Enter on a focused link follows the link instead of submitting."""

import re

import pytest

from goldset.models import Review
from tests.goldset.browser.test_one_motion_labeling_browser import Meter
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _heading(page):
    return page.inner_text("#review-item h1")


def test_confirming_reviews_take_one_key_plus_submit_and_one_request(make_user, browser_login):
    author = make_user(Role.ANNOTATOR, username="author")
    reviewer = make_user(Role.ANNOTATOR, username="reviewer")
    for n in range(4):
        write_triple(author, question=f"How often are keys rotated, case {n}?")

    page = browser_login(reviewer)
    page.goto("/curation/reviews/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r".*/curation/reviews/\d+/$"))
    meter = Meter(page)

    figures = []
    for _ in range(2):
        before = _heading(page)
        meter.reset()
        meter.press("1")  # confirm
        meter.press("Enter")  # submit
        page.wait_for_function(
            "h => document.querySelector('#review-item h1').innerText !== h", arg=before
        )
        figures.append((meter.keys, len(meter.requests)))
    print(f"\nkeys/requests per confirming review: {figures}")
    assert figures == [(2, 1), (2, 1)]
    assert Review.objects.filter(reviewer=reviewer, verdict="confirm").count() == 2

    # c opens the comment; Ctrl+Enter submits from it
    before = _heading(page)
    page.keyboard.press("1")
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.id") == "id_comment"
    page.keyboard.type("Clear and grounded.")
    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        "h => document.querySelector('#review-item h1').innerText !== h", arg=before
    )
    assert Review.objects.get(comment="Clear and grounded.").verdict == "confirm"

    # Enter on a focused link navigates; nothing is submitted
    count = Review.objects.count()
    page.keyboard.press("1")
    page.focus("a[href='/curation/reviews/']")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/curation/reviews/$"))
    assert Review.objects.count() == count
