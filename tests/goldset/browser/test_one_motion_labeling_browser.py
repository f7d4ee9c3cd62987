"""One motion per item in real Chromium: five routine labels with keys only (keys and requests
counted per item), undo, skip with a reason, the help overlay, and Enter on a focused link; the
guidelines panel opens from its focused summary without submitting, and labels submitted in the
browser carry the active time measured by app.js."""

import re

import pytest

from goldset.models import AnswerCitation, GuidelineTask, ItemSkip, Label, LabelAssignment
from goldset.services.guidelines import save_guideline
from tests.factories import AnswerRecordFactory, BlockVersionFactory, DomainFactory
from tests.goldset.answers_helpers import qualified_annotators

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Meter:
    """Counts the keys pressed and the page/XHR requests sent (static files excluded)."""

    def __init__(self, page):
        self.page, self.keys, self.requests = page, 0, []
        page.on("request", self._seen)

    def _seen(self, request):
        if request.resource_type in ("document", "xhr", "fetch"):
            self.requests.append(f"{request.method} {request.url}")

    def press(self, key):
        self.keys += 1
        self.page.keyboard.press(key)

    def type(self, text):
        self.keys += len(text)
        self.page.keyboard.type(text)

    def reset(self):
        self.keys, self.requests = 0, []


def _shown(page):
    return page.inner_text("#label-item h1 code")


def _wait_for_other_item(page, public_id):
    page.wait_for_function(
        "id => { const c = document.querySelector('#label-item h1 code');"
        " return c && c.textContent !== id; }",
        arg=public_id,
    )


def test_five_routine_labels_by_keys_then_undo_skip_help_and_link(browser_login):
    domain = DomainFactory(slug="supply_chain")
    for _ in range(9):
        record = AnswerRecordFactory(question__domain=domain, question__conflict_flag=False)
        # answers that cite something: "all clear" on one that cites nothing asks first
        AnswerCitation.objects.create(
            record=record, block_version=BlockVersionFactory(), passage_ref="p", position=0
        )
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

    # the guidelines panel: its summary takes focus, Enter opens it and submits nothing
    assert page.is_visible("#guideline-panel summary")
    assert not page.is_visible("#guideline-panel .guideline-body em")
    page.focus("#guideline-panel summary")
    page.keyboard.press("Enter")
    page.wait_for_selector("#guideline-panel[open]")
    assert page.inner_text("#guideline-panel .guideline-body em") == "Fully grounded"
    assert not Label.objects.exists() and meter.requests == []

    per_item, labeled, sent = [], [], []
    for _ in range(5):
        current = _shown(page)
        meter.reset()
        meter.press("a")  # all clear: the routine label, submitted at once
        _wait_for_other_item(page, current)
        assert page.url.endswith(f"/answers/items/{_shown(page)}/")  # the URL follows
        per_item.append((meter.keys, len(meter.requests)))
        sent.append(meter.requests)
        labeled.append(current)
    print(f"\nkeys/requests per routine label (all clear): {per_item}")
    assert per_item == [(1, 1)] * 5, sent
    assert sorted(Label.objects.values_list("record__public_id", flat=True)) == sorted(labeled)
    assert set(Label.objects.values_list("grounding", flat=True)) == {"fully_grounded"}
    # each label carries the browser's active time, checked against the server's clock
    timed = Label.objects.order_by("created_at").values_list("active_ms", "server_ms", "guideline")
    print(f"active/server ms per label: {[(a, s) for a, s, _ in timed]}")
    assert all(a is not None and s is not None and a <= s + 2000 for a, s, _ in timed), timed
    assert timed[0][0] > 0  # the first item's time includes reading the guidelines
    assert len({g for _, _, g in timed}) == 1 and timed[0][2] is not None

    # a non-routine label by digits: unacceptable, misgrounded, insufficient, incorrect,
    # unresolved, over-answered, not severe, primary failure 1 (stale source), then Enter
    current = _shown(page)
    meter.reset()
    for key in ["2", "3", "3", "3", "2", "2", "1", "1", "Enter"]:
        meter.press(key)
    _wait_for_other_item(page, current)
    print(f"keys/requests for a full label by digits: {(meter.keys, len(meter.requests))}")
    assert (meter.keys, len(meter.requests)) == (9, 1)
    assert Label.objects.get(record__public_id=current).acceptability == "unacceptable"

    # undo: the last label is withdrawn and its item comes back, in one key and one request
    meter.reset()
    meter.press("u")
    page.wait_for_function(
        "id => document.querySelector('#label-item h1 code').textContent === id", arg=current
    )
    assert (meter.keys, len(meter.requests)) == (1, 1)
    assert page.url.endswith(f"/answers/items/{current}/")
    assert not Label.objects.filter(record__public_id=current).exists()
    meter.press("a")
    _wait_for_other_item(page, current)

    # skip with a reason: s, the reason, Enter
    skipped = _shown(page)
    meter.reset()
    meter.press("s")
    meter.type("outside my expertise")
    meter.press("Enter")
    _wait_for_other_item(page, skipped)
    assert len(meter.requests) == 1
    assert ItemSkip.objects.get().record.public_id == skipped
    assert not LabelAssignment.objects.filter(record__public_id=skipped).exists()

    # ? opens the help overlay
    page.keyboard.press("?")
    page.wait_for_selector("#key-help[open]")
    assert "Undo your last label" in page.inner_text("#key-help")
    page.keyboard.press("?")
    page.wait_for_selector("#key-help:not([open])")

    # the idle rule, with the page's clock in the test's hands: 600 ms of input, a 90 s pause
    # (over the 60 s cut-off: left out), 200 ms, 30 s with the page hidden (left out), 300 ms
    timed = _shown(page)
    page.evaluate(
        """() => {
        let now = performance.now();
        performance.now = () => now;
        const move = ms => { now += ms; document.dispatchEvent(new PointerEvent("pointermove")); };
        const show = state => {
          Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
          document.dispatchEvent(new Event("visibilitychange"));
        };
        move(600); move(90000);
        now += 200; show("hidden");
        now += 30000; show("visible");
        now += 300;
      }"""
    )
    page.keyboard.press("a")
    _wait_for_other_item(page, timed)
    label = Label.objects.get(record__public_id=timed)
    print(
        f"active ms with a 90 s idle gap and 30 s hidden: {label.active_ms} (server {label.server_ms})"
    )
    # 1,100 ms of input plus the real time before the clock override; counting the 90 s pause
    # would give at least the 60 s cap, counting the hidden 30 s at least 30 s: a range, not a
    # measured duration, so a slow machine cannot fail it
    assert 1100 <= label.active_ms < 30_000
    assert label.active_ms < label.server_ms + 2000

    # Enter on a focused link follows the link, never submits the form
    before = Label.objects.count()
    page.focus("a[href='/answers/']")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/answers/$"))
    assert Label.objects.count() == before
