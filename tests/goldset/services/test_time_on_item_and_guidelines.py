"""Time on item and guidelines through the real services: what a label, review and adjudication
store about their timing and the guideline in force, fast-decision flags, and guideline
versioning with sanitised Markdown."""

import datetime as dt

import pytest
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    Adjudication,
    DecisionKind,
    FastDecision,
    GuidelineTask,
    GuidelineVersion,
    Label,
    Tier,
)
from goldset.rules.time_on_item import ItemTiming, opening_token, parse_active_ms, read_opening
from goldset.services.adjudication import record_adjudication
from goldset.services.guidelines import render_guideline, save_guideline
from goldset.services.labeling import claim_next_item, submit_label, undo_last_label
from goldset.services.reviews import claim_next_assignment, submit_review
from tests.factories import AnswerRecordFactory, DomainFactory, default_project
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators
from tests.goldset.curation_support import write_triple
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


def _ago(seconds: float) -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=seconds)


def test_a_label_stores_server_and_capped_active_time_and_the_guideline_in_force(
    domain, lead, settings
):
    settings.ACTIVE_TIME_SLACK_MS = 2000
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    v1, _ = save_guideline(
        actor=lead, domain=domain, task=GuidelineTask.ANSWER_LABELING, body="Be strict."
    )
    v2, _ = save_guideline(
        actor=lead, domain=domain, task=GuidelineTask.ANSWER_LABELING, body="Be stricter."
    )
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    label = submit_label(
        assignment=assignment,
        **GOOD,
        timing=ItemTiming(opened_at=_ago(30), active_ms=parse_active_ms("12000")),
    )
    label.refresh_from_db()
    # the claim was a moment ago, so the server clock starts there, not at the older "opening"
    assert label.server_ms is not None and label.server_ms < 5000
    assert label.active_ms <= label.server_ms + 2000  # the client's 12 s is capped
    assert label.guideline_id == v2.pk and v1.pk != v2.pk


@pytest.mark.parametrize("raw", [None, "", "-1", "abc", "1.5", "9" * 400])
def test_garbage_active_time_is_stored_as_null_or_capped_never_an_error(domain, raw):
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    label = submit_label(
        assignment=assignment, **GOOD, timing=ItemTiming(active_ms=parse_active_ms(raw))
    )
    label.refresh_from_db()
    assert label.server_ms is not None
    if raw and raw.isdigit():
        assert label.active_ms <= label.server_ms + 2000
    else:
        assert label.active_ms is None
    assert label.guideline_id is None  # no guideline written for the domain


def test_a_fast_gold_label_is_flagged_undo_withdraws_it_and_a_slow_one_is_not(domain, settings):
    settings.FAST_DECISION_SECONDS_GOLD = 5
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    fast = submit_label(assignment=assignment, **GOOD, timing=ItemTiming(active_ms=1500))
    flag = FastDecision.objects.get()
    assert (flag.kind, flag.label_id, flag.tier) == (DecisionKind.LABEL, fast.pk, Tier.GOLD)
    assert flag.decision_ms <= 1500 and flag.threshold_ms == 5000
    reopened = undo_last_label(annotator=annotator, project=default_project())
    assert not FastDecision.objects.exists() and not Label.objects.exists()
    reopened.claimed_at = _ago(60)
    reopened.save(update_fields=["claimed_at"])
    slow = submit_label(
        assignment=reopened, **GOOD, timing=ItemTiming(opened_at=_ago(40), active_ms=30000)
    )
    slow.refresh_from_db()
    assert 39000 <= slow.server_ms < 45000 and slow.active_ms == 30000
    assert not FastDecision.objects.exists()


def test_triage_threshold_applies_to_triage_items_and_zero_turns_it_off(domain, settings):
    settings.FAST_DECISION_SECONDS_TRIAGE = 0
    AnswerRecordFactory(question__domain=domain, tier=Tier.TRIAGE, labels_required=1)
    (annotator,) = qualified_annotators(domain, 1)
    claim_and_label(annotator)
    assert not FastDecision.objects.exists()


def test_a_review_records_its_time_guideline_and_fast_flag(make_user, lead, settings):
    settings.FAST_DECISION_SECONDS_GOLD = 5
    author = make_user(Role.ANNOTATOR, username="author")
    reviewer = make_user(Role.ANNOTATOR, username="reviewer")
    triple = write_triple(author)
    guideline, _ = save_guideline(
        actor=lead, domain=triple.domain, task=GuidelineTask.TRIPLE_REVIEW, body="# Review"
    )
    assignment = claim_next_assignment(project=default_project(), reviewer=reviewer)
    token = opening_token(
        kind="review", object_id=assignment.pk, user_id=reviewer.pk, now=timezone.now()
    )
    opened = read_opening(token, kind="review", object_id=assignment.pk, user_id=reviewer.pk)
    review = submit_review(
        reviewer=reviewer,
        revision=assignment.revision,
        verdict="confirm",
        timing=ItemTiming(opened_at=opened, active_ms=800),
    )
    review.refresh_from_db()
    assert review.guideline_id == guideline.pk
    assert review.server_ms is not None and review.active_ms <= 800
    assert FastDecision.objects.get().review_id == review.pk


def test_an_adjudication_without_an_opening_has_no_time_but_its_guideline(domain, lead):
    annotators = qualified_annotators(domain, 3)
    record = AnswerRecordFactory(question__domain=domain)
    claim_and_label(annotators[0], **GOOD)
    claim_and_label(annotators[1], **{**GOOD, "grounding": "partially_grounded"})
    claim_and_label(annotators[2], **BAD)
    guideline, _ = save_guideline(
        actor=lead, domain=domain, task=GuidelineTask.ADJUDICATION, body="Adjudicate."
    )
    FastDecision.objects.all().delete()
    adjudication = record_adjudication(
        lead=lead,
        record=record,
        acceptability="unacceptable",
        grounding="misgrounded",
        primary_failure="stale_source_acceptance",
        rationale="Stale source.",
        timing=ItemTiming(active_ms=900),  # no opening token: nothing to check 900 ms against
    )
    adjudication = Adjudication.objects.get(pk=adjudication.pk)
    assert (adjudication.server_ms, adjudication.active_ms) == (None, None)
    assert adjudication.guideline_id == guideline.pk
    assert not FastDecision.objects.exists()


def test_guidelines_are_versioned_never_updated_in_place(domain, lead, admin_user):
    task = GuidelineTask.ANSWER_LABELING
    v1, created = save_guideline(actor=lead, domain=domain, task=task, body="First rubric.")
    assert created and v1.version == 1
    again, created = save_guideline(actor=lead, domain=domain, task=task, body=" First rubric. ")
    assert not created and again.pk == v1.pk  # a double submit is one version
    v2, created = save_guideline(
        actor=admin_user, domain=domain, task=task, body="Second rubric.", note="clearer"
    )
    assert created and v2.version == 2 and v2.note == "clearer"
    v1.refresh_from_db()
    assert v1.body == "First rubric."
    assert list(
        GuidelineVersion.objects.filter(domain=domain, task=task).values_list("version", flat=True)
    ) == [2, 1]
    other, _ = save_guideline(
        actor=lead, domain=domain, task=GuidelineTask.ADJUDICATION, body="Other task."
    )
    assert other.version == 1
    assert AuditEvent.objects.filter(verb="guideline_saved").count() == 3
    for bad in ("", "   "):
        with pytest.raises(GoldsetError):
            save_guideline(actor=lead, domain=domain, task=task, body=bad)
    with pytest.raises(GoldsetError):
        save_guideline(actor=lead, domain=domain, task="labeling", body="x")


def test_guideline_markdown_is_rendered_without_raw_html_and_sanitised(settings):
    html = render_guideline(
        "# Rubric\n\n**Fully grounded** means *every* claim is cited.\n\n"
        "- one\n- two\n\n<script>alert(1)</script>\n\n"
        "[bad](javascript:alert(1)) [good](https://example.org/x)\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert "<h1>Rubric</h1>" in html and "<strong>Fully grounded</strong>" in html
    assert "<li>one</li>" in html and "<table>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html
    assert 'href="https://example.org/x"' in html and "noopener" in html
    settings.FREE_TEXT_MAX_CHARS = 10
    with pytest.raises(GoldsetError):
        save_guideline(actor=None, domain=DomainFactory(), task="adjudication", body="x" * 11)
