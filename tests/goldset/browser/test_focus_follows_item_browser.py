"""Issue 25 in Chromium: focus follows the item after every htmx swap (never into the next
item's skip or comment box), Esc leaves a text field and Enter then submits or the page says
why, "a" on an answer citing nothing asks first, "g" opens the guidelines, the "5 of 16"
counters, and adjudication opening on the first item pre-filled from the labels' majority.
Keys per item are printed for the report."""

import re

import pytest

from goldset.models import (
    Adjudication,
    AnswerCitation,
    GuidelineTask,
    Label,
    RecordStatus,
    Review,
    ReviewAssignment,
    ReviewSkip,
    TripleRevision,
)
from goldset.services.guidelines import save_guideline
from tests.factories import AnswerRecordFactory, BlockVersionFactory, DomainFactory
from tests.goldset.answers_helpers import claim_and_label, qualified_annotators
from tests.goldset.browser.test_one_motion_labeling_browser import Meter
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _focused(page) -> dict:
    return page.evaluate(
        "() => { const e = document.activeElement;"
        " return {tag: e.tagName, id: e.id, type: e.type || '', name: e.name || ''}; }"
    )


KEY_NAMES = {"Enter", "Escape", "ArrowDown", "Control+Enter"}


def _keys(meter, keys):
    """Press each key; a longer string that is not a key name is typed (one key a character)."""
    for key in keys:
        if len(key) > 1 and key not in KEY_NAMES:
            meter.type(key)
        else:
            meter.press(key)


def _wait_new_heading(page, selector, before):
    page.wait_for_function(
        "([s, h]) => { const e = document.querySelector(s); return e && e.innerText !== h; }",
        arg=[selector, before],
    )


def test_five_reviews_by_keys_with_a_skip_and_a_commented_flag_each_get_their_decision(
    make_user, browser_login
):
    author = make_user(Role.ANNOTATOR, username="author")
    reviewer = make_user(Role.ANNOTATOR, username="reviewer")
    for n in range(5):
        write_triple(author, question=f"How often are keys rotated, case {n}?")

    page = browser_login(reviewer)
    page.goto("/curation/reviews/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r".*/curation/reviews/\d+/$"))
    assert page.inner_text("#queue-position") == "1 of 5 reviews today"
    meter = Meter(page)

    # what each item gets, by keys only; the skip and the commented flag sit in the middle,
    # each followed by an item whose first key must be a key, not text
    plan = [
        ("confirm", ["1", "Enter"]),
        ("skip", ["s", "not my domain", "Enter"]),
        ("flag", ["2", "3", "c", "The question is contrived.", "Escape", "Enter"]),
        ("confirm", ["1", "Enter"]),
        ("confirm", ["1", "Enter"]),
    ]
    shown, per_item = [], []
    for n, (_, keys) in enumerate(plan):
        heading = page.inner_text("#review-item h1")
        shown.append(page.url.rstrip("/").rsplit("/", 1)[1])
        # the item opens with focus on its verdict, never in a text field
        assert _focused(page) == {"tag": "INPUT", "id": "", "type": "radio", "name": "verdict"}
        if n == 1:
            assert page.inner_text("#queue-position") == "2 of 5 reviews today"
        meter.reset()
        _keys(meter, keys)
        if n < len(plan) - 1:
            _wait_new_heading(page, "#review-item h1", heading)
        else:
            page.wait_for_selector("#review-card >> text=Your review is recorded")
        per_item.append((meter.keys, len(meter.requests)))
    print(
        f"\nreview keys/requests per item (confirm, skip, flag+comment, confirm, confirm): {per_item}"
    )
    assert [r for _, r in per_item] == [1, 1, 1, 1, 1]

    for (decision, _), pk in zip(plan, shown, strict=True):
        revision = TripleRevision.objects.get(assignments__pk=pk) if decision != "skip" else None
        if decision == "skip":
            skip = ReviewSkip.objects.get(reviewer=reviewer)
            assert skip.reason == "not my domain"
            assert not Review.objects.filter(reviewer=reviewer, revision=skip.revision).exists()
            assert not ReviewAssignment.objects.filter(pk=pk).exists()
            continue
        (review,) = Review.objects.filter(reviewer=reviewer, revision=revision)
        if decision == "confirm":
            assert (review.verdict, review.flags, review.comment) == ("confirm", [], "")
        else:
            assert (review.verdict, review.flags, review.comment) == (
                "flag",
                ["question_unrealistic"],
                "The question is contrived.",
            )
    assert Review.objects.filter(reviewer=reviewer).count() == 4
    assert ReviewSkip.objects.filter(reviewer=reviewer).count() == 1


def test_label_page_rationale_escape_enter_submits_or_says_why_and_all_clear_asks(
    browser_login,
):
    domain = DomainFactory(slug="supply_chain")
    for _ in range(5):  # answers that cite nothing
        AnswerRecordFactory(question__domain=domain, question__conflict_flag=False)
    (annotator,) = qualified_annotators(domain, 1)
    save_guideline(
        actor=annotator,
        domain=domain,
        task=GuidelineTask.ANSWER_LABELING,
        body="## Grounding\n\n*Fully grounded*: every claim has a citation.",
    )
    page = browser_login(annotator)
    page.goto("/answers/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/answers/items/"))
    meter = Meter(page)
    assert page.inner_text("#queue-position") == "1 of 5 labels today"
    assert _focused(page)["name"] == "acceptability"

    # g opens and closes the guidelines; focus stays on the axis, nothing is sent
    page.keyboard.press("g")
    page.wait_for_selector("#guideline-panel[open]")
    page.keyboard.press("g")
    page.wait_for_selector("#guideline-panel:not([open])")
    assert _focused(page)["name"] == "acceptability" and meter.requests == []

    # r, typing, Esc, Enter with no axis chosen: one POST, and the page says why
    first = page.inner_text("#label-item h1 code")
    _keys(meter, ["r", "Looks fine", "Escape"])
    assert _focused(page)["name"] == "acceptability"  # Esc left the rationale for the form
    meter.press("Enter")
    page.wait_for_selector("#label-item .axis-error")
    assert [r.split(" ")[0] for r in meter.requests] == ["POST"]
    assert "required" in page.inner_text("#label-item .axis-error").lower()
    assert _focused(page)["tag"] == "FIELDSET"  # the axis in error, not a text field
    assert not Label.objects.exists()
    # the same item, now chosen by digits: Enter submits with the rationale typed before
    _keys(meter, ["1"] * 7 + ["0", "Enter"])
    _wait_new_heading(page, "#label-item h1 code", first)
    assert Label.objects.get(record__public_id=first).rationale == "Looks fine"
    assert page.inner_text("#queue-position") == "2 of 5 labels today"

    # the brief's path on a fresh item: digits, r, typing, Esc, Enter → one label, one POST
    second = page.inner_text("#label-item h1 code")
    meter.reset()
    _keys(meter, ["1"] * 7 + ["0", "r", "Cited and right.", "Escape", "Enter"])
    _wait_new_heading(page, "#label-item h1 code", second)
    print(
        f"\nlabel keys/requests, digits + rationale + Esc + Enter: {(meter.keys, len(meter.requests))}"
    )
    assert len(meter.requests) == 1
    assert Label.objects.get(record__public_id=second).rationale == "Cited and right."
    assert _focused(page)["name"] == "acceptability"

    # "a" on an answer that cites nothing asks first; another key takes the question back
    third = page.inner_text("#label-item h1 code")
    meter.reset()
    meter.press("a")
    page.wait_for_selector("#all-clear-confirm", state="visible")
    assert "cites nothing" in page.inner_text("#all-clear-confirm") and meter.requests == []
    meter.press("ArrowDown")
    page.wait_for_selector("#all-clear-confirm", state="hidden")
    meter.reset()
    meter.press("a")
    meter.press("a")
    _wait_new_heading(page, "#label-item h1 code", third)
    print(
        f"label keys/requests, all clear on an answer citing nothing: {(meter.keys, len(meter.requests))}"
    )
    assert (meter.keys, len(meter.requests)) == (2, 1)
    assert Label.objects.get(record__public_id=third).grounding == "fully_grounded"


def test_lead_opens_the_first_item_with_one_key_prefilled_from_the_majority(
    make_user, browser_login
):
    domain = DomainFactory(slug="federal_it")
    record = AnswerRecordFactory(question__domain=domain, question__conflict_flag=False)
    AnswerCitation.objects.create(
        record=record, block_version=BlockVersionFactory(), passage_ref="p", position=0
    )
    one, two, three = qualified_annotators(domain, 3)
    named = dict(
        primary_failure="citation_coverage_gap", secondary_failures=["wrong_chunk_citation"]
    )
    claim_and_label(one)
    claim_and_label(two, grounding="partially_grounded", **named)
    claim_and_label(
        three,
        acceptability="unacceptable",
        grounding="partially_grounded",
        severe_safety=True,
        rationale="Leaks an account number.",
        **named,
    )
    record.refresh_from_db()
    assert record.status == RecordStatus.NEEDS_ADJUDICATION  # a severe label

    page = browser_login(make_user(Role.LEAD, username="lead"))
    page.goto("/answers/adjudication/")
    meter = Meter(page)
    meter.press("n")  # the first open item, without Tabs or a click
    page.wait_for_url(re.compile(rf"/answers/adjudication/{record.public_id}/$"))
    assert page.inner_text("#queue-position") == "1 of 1 adjudications today"
    assert _focused(page) == {
        "tag": "INPUT",
        "id": "id_acceptability_0",
        "type": "radio",
        "name": "acceptability",
    }
    checked = page.eval_on_selector_all(
        "#adjudication-form input:checked", "els => els.map(e => [e.name, e.value])"
    )
    # the majority per axis (2 of 3 each): acceptable, partially grounded, not severe,
    # citation coverage gap, wrong chunk as secondary
    assert sorted(checked) == sorted(
        [
            ["acceptability", "acceptable"],
            ["grounding", "partially_grounded"],
            ["severe_safety", "no"],
            ["primary_failure", "citation_coverage_gap"],
            ["secondary_failures", "wrong_chunk_citation"],
        ]
    )
    assert page.inner_text("#prefill-note").startswith("Pre-filled from the majority")
    assert page.input_value("#id_rationale") == ""

    # the rationale stays required: Enter without one records nothing and says why
    meter.press("Enter")
    page.wait_for_selector("#adjudication-form .errorlist, #adjudication-errors")
    assert not Adjudication.objects.exists()
    # confirm the majority: r, the rationale, Ctrl+Enter
    meter.reset()
    meter.press("r")
    meter.type("Majority stands; the leak claim is not borne out.")
    meter.press("Control+Enter")
    page.wait_for_url(re.compile(r"/answers/adjudication/$"))
    print(
        f"\nadjudication keys/requests to confirm the pre-fill: {(meter.keys, len(meter.requests))}"
    )
    adjudication = Adjudication.objects.get(record=record)
    assert (
        adjudication.acceptability,
        adjudication.grounding,
        adjudication.severe_safety,
        adjudication.primary_failure,
        adjudication.secondary_failures,
    ) == (
        "acceptable",
        "partially_grounded",
        False,
        "citation_coverage_gap",
        ["wrong_chunk_citation"],
    )
