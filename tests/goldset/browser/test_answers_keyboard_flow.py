"""Three annotators label one item with the keyboard, split → adjudication; the lead resolves
it; the admin downloads the adjudication export. Real Chromium against the live server."""

import json
import re

import pytest

from goldset.models import AnswerRecord, RecordStatus
from tests.factories import DomainFactory
from tests.goldset.answers_helpers import SECRETS, build_conflict_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _claim(page):
    page.goto("/answers/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/answers/items/"))
    html = page.content()
    assert not any(secret in html for secret in SECRETS)


def _keys(page, keys):
    for key in keys:
        page.keyboard.press(key)


def test_three_keyboard_labels_split_then_lead_adjudicates_and_admin_exports(
    browser_login, lead, admin_user
):
    record, (one, two, three) = build_conflict_item(DomainFactory(slug="supply_chain"))

    page = browser_login(one)
    _claim(page)
    # acceptable, fully grounded, sufficient, correct, resolved, respected, not severe, no failure
    _keys(page, ["1", "1", "1", "1", "1", "1", "1", "0"])
    page.keyboard.press("Enter")  # the conflict flag makes the rationale required
    page.wait_for_selector("#rationale-errors")
    assert "rule: acceptable despite a conflict flag" in page.inner_text("#rationale-errors")
    # after the htmx error swap focus lands on the axis in error (never on <body>, never in a
    # text field: keys stay keys), and r opens its rationale
    focused = page.evaluate(
        "[document.activeElement.tagName, !!document.activeElement.querySelector('#id_rationale')]"
    )
    assert focused == ["FIELDSET", True]
    page.keyboard.press("r")
    page.keyboard.type("The regional memo is cited and governs the lane.")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/answers/$"))
    assert record.labels.get(annotator=one).rationale.startswith("The regional memo")

    page = browser_login(two)
    _claim(page)
    # acceptable, partially grounded, partial evidence, partly correct, resolved, respected, not severe
    _keys(page, ["1", "2", "2", "2", "1", "1", "1", "9"])
    page.keyboard.press("r")
    page.keyboard.type("Right outcome but omits the escalation path.")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/answers/$"))

    page = browser_login(three)
    _claim(page)
    # unacceptable, misgrounded, insufficient, incorrect, unresolved, over-answered, not severe,
    # primary stale-source (1), secondary wrong-chunk (3)
    _keys(page, ["2", "3", "3", "3", "2", "2", "1", "1", "3"])
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/answers/$"))

    record.refresh_from_db()
    assert record.status == RecordStatus.NEEDS_ADJUDICATION
    assert record.labels.count() == 3

    page = browser_login(lead)
    page.goto("/answers/adjudication/")
    page.click(f"text={record.public_id}")
    page.wait_for_selector("#adjudication-form")
    html = page.content()
    assert "Annotator 1" in html and "omits the escalation path" in html
    assert not any(secret in html for secret in SECRETS) and one.username not in html
    _keys(
        page, ["2", "2", "1", "4"]
    )  # unacceptable, partially grounded, not severe, missing exception
    page.keyboard.press("r")
    page.keyboard.type("The escalation exception is omitted; not acceptable for release.")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/answers/adjudication/$"))
    record.refresh_from_db()
    assert (record.status, record.final_acceptability, record.final_grounding) == (
        RecordStatus.ADJUDICATED,
        "unacceptable",
        "partially_grounded",
    )

    page = browser_login(admin_user)
    page.goto("/answers/export/")
    with page.expect_download() as info:
        page.click("#download-export")
    lines = open(info.value.path(), encoding="utf-8").read().splitlines()
    (row,) = [json.loads(line) for line in lines]
    assert row["item_id"] == record.public_id
    assert row["adjudication"]["primary_failure"] == "missing_governing_exception"
    assert row["labels"][2]["secondary_failures"] == ["wrong_chunk_citation"]
    assert AnswerRecord.objects.get().adjudication.reason == "no_majority"
