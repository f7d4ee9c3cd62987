"""Pairwise review in real Chromium: a reviewer judges ten pairs with keys only (one motion per
pair: a preference key, a strength key, Enter; one request each), each pair's answers on the
sides drawn for that reviewer, and no system, run, model or answer-record id anywhere in the DOM
(canaries planted in the systems, runs and records); then a split reaches a lead's blind
adjudication page, where the lead records the final preference with keys and a rationale."""

import re

import pytest

from goldset.models import PairJudgment, PairStatus, PairwisePair
from goldset.rules.pairwise import choice_from_preference, side_for
from goldset.selectors.pairwise import key_of
from tests.goldset.browser.test_accessibility_browser import axe_violations
from tests.goldset.pairwise_support import (
    CANARY_MODEL,
    CANARY_RUNS,
    CANARY_SYSTEMS,
    build_runs,
    judge_next,
    make_task,
    reviewers,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CANARIES = ("CANARYSYS", "CANARYRUN", "CANARYMODEL", *CANARY_SYSTEMS, *CANARY_RUNS, CANARY_MODEL)
# The keys pressed per pair, in turn: left better clearly, right better slightly, tie, both
# unacceptable (a strength key before a tie means nothing and is dropped).
RECORD_ID = re.compile(r"pw-q\d+-s\d+")
MOTIONS = [("1", "c", "Enter"), ("2", "s", "Enter"), ("3", "Enter"), ("4", "Enter")]
EXPECTED_CHOICE = {"1": "left", "2": "right", "3": "tie", "4": "both_unacceptable"}


class Meter:
    def __init__(self, page):
        self.page, self.keys, self.requests = page, 0, []
        page.on("request", self._seen)

    def _seen(self, request):
        if request.resource_type in ("document", "xhr", "fetch"):
            self.requests.append(f"{request.method} {request.url}")

    def press(self, key):
        self.keys += 1
        self.page.keyboard.press(key)

    def reset(self):
        self.keys, self.requests = 0, []


def _shown(page):
    return page.inner_text("#pair-item h1 code")


def _assert_blind(html: str):
    for canary in CANARIES:
        assert canary not in html, canary
    assert not RECORD_ID.search(html), RECORD_ID.search(html).group(0)


def test_a_reviewer_judges_ten_pairs_with_keys_only(browser_login, lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=5)
    task = make_task(runs, actor=lead, name="Keys only", tier="tier_a")
    (reviewer,) = reviewers(1, prefix="pw-keys")
    page = browser_login(reviewer)
    page.goto("/pairwise/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/pairwise/pairs/"))
    assert axe_violations(page) == []  # the judging page: no serious or critical violation
    meter = Meter(page)
    judged = []
    for i in range(10):
        current = _shown(page)
        pair = PairwisePair.objects.select_related("task", "question", "record_a", "record_b").get(
            public_id=current
        )
        left = side_for(seed=task.seed, key=key_of(pair), person_id=reviewer.pk)
        shown_left = pair.record_a if left == "a" else pair.record_b
        assert shown_left.answer in page.inner_text("#answer-left")
        _assert_blind(page.content())
        meter.reset()
        keys = MOTIONS[i % len(MOTIONS)]
        for key in keys:
            meter.press(key)
        page.wait_for_function(
            "id => { const c = document.querySelector('#pair-item h1 code');"
            " return c && c.textContent !== id; }",
            arg=current,
        )
        assert (meter.keys, len(meter.requests)) == (len(keys), 1), meter.requests
        assert page.url.endswith(f"/pairwise/pairs/{_shown(page)}/")
        judged.append((current, left, EXPECTED_CHOICE[keys[0]], keys))
    _assert_blind(page.content())
    assert PairJudgment.objects.filter(reviewer=reviewer).count() == 10
    for public_id, left, choice, keys in judged:
        judgment = PairJudgment.objects.get(pair__public_id=public_id, reviewer=reviewer)
        assert judgment.left == left
        assert choice_from_preference(judgment.preference, left=left) == choice
        assert judgment.strength == {"c": "clearly", "s": "slightly"}.get(keys[1], "")
        assert judgment.active_ms is not None and judgment.server_ms is not None


def test_a_split_reaches_the_leads_blind_adjudication_page(browser_login, lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead, name="Split")
    for person, preference in zip(reviewers(3), ("a", "b", "tie"), strict=True):
        judge_next(person, preference, rationale="Equal." if preference == "tie" else "")
    pair = PairwisePair.objects.get()
    assert pair.status == PairStatus.NEEDS_ADJUDICATION
    page = browser_login(lead)
    page.goto("/pairwise/tasks/")
    page.click(f"a[href$='/pairwise/adjudication/{pair.public_id}/']")
    page.wait_for_selector("#pair-form")
    _assert_blind(page.content())
    assert page.locator("#pair-judgments tbody tr").count() == 3
    assert axe_violations(page) == []
    page.keyboard.press("2")
    page.keyboard.press("s")
    page.keyboard.press("r")
    page.keyboard.type("The right answer cites the governing memo.")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/pairwise/tasks/$"))
    pair.refresh_from_db()
    assert pair.status == PairStatus.ADJUDICATED
    assert pair.adjudication.rationale == "The right answer cites the governing memo."
