"""Promotion TRIAGE → GOLD (issue 6 item 2): the case gains its missing reviews/labels through
the normal claim services, earlier ones count, the history says who, when and why."""

from decimal import Decimal

import pytest

from goldset.exceptions import GoldsetError
from goldset.models import (
    AnswerRecord,
    FinalSource,
    RecordStatus,
    Resolution,
    Tier,
    Triple,
    TripleState,
)
from goldset.services.labeling import claim_next_item
from goldset.services.promotion import (
    BatchChanged,
    batch_token,
    preview_batch,
    preview_reroute,
    promote_answer_record,
    promote_batch,
    promote_triple,
)
from goldset.services.reviews import (
    claim_next_assignment,
    current_iso_week,
    draw_spot_checks,
    submit_review,
)
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import claim_and_label, qualified_annotators
from tests.goldset.curation_support import review
from tests.goldset.promotion_support import (
    answer_record,
    review_directly,
    reviewers,
    set_rules,
    triage_triple,
)
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def rules(admin_user):
    return set_rules(admin_user, gold_task_types=["factual_qa"])


def test_a_pending_triage_triple_needs_a_second_reviewer_after_promotion(rules, lead, annotator):
    triple = triage_triple(annotator)
    first, second = reviewers(2)
    promote_triple(actor=lead, triple=triple, reason="a release gate depends on it")
    triple.refresh_from_db()
    assert (triple.tier, triple.routing_rule, triple.rules_version) == (
        Tier.GOLD,
        "promoted",
        rules.version,
    )
    assert triple.current_revision.reviewers_needed == 2
    review(first, triple)
    assert triple.state == TripleState.PENDING_REVIEW  # one review is not enough for GOLD
    review(second, triple)
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)


def test_a_triage_triple_gold_on_one_review_goes_back_for_the_missing_review(
    rules, lead, annotator
):
    triple = triage_triple(annotator)
    first, second = reviewers(2)
    earlier = review(first, triple)
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.SINGLE_REVIEW)

    promote_triple(actor=lead, triple=triple, reason="judge calibration needs it")
    triple.refresh_from_db()
    assert (triple.state, triple.resolution, triple.gold_at) == (
        TripleState.PENDING_REVIEW,
        "",
        None,
    )
    assert (
        claim_next_assignment(project=default_project(), reviewer=first) is None
    )  # never twice for the same reviewer
    assignment = claim_next_assignment(project=default_project(), reviewer=second)
    assert assignment.revision_id == triple.current_revision_id and assignment.slot == 2
    assert not assignment.spot_check
    submit_review(reviewer=second, revision=assignment.revision, verdict="confirm")
    triple.refresh_from_db()
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)
    assert set(triple.current_revision.reviews.values_list("pk", flat=True)) >= {earlier.pk}

    event = AuditEvent.objects.get(verb="promoted", object_id=str(triple.pk))
    assert event.actor == lead and event.detail["reason"] == "judge calibration needs it"
    assert event.detail["before"]["state"] == TripleState.GOLD
    assert event.detail["after"]["state"] == TripleState.PENDING_REVIEW
    assert event.detail["reviews_given"] == 1


def test_a_second_flag_after_promotion_opens_the_discussion(rules, lead, annotator):
    triple = triage_triple(annotator)
    first, second = reviewers(2)
    review(first, triple)
    promote_triple(actor=lead, triple=triple, reason="gate")
    review(second, triple, verdict="flag", flags=["answer_not_entailed"])
    assert triple.state == TripleState.IN_DISCUSSION


def test_a_given_spot_check_review_becomes_the_second_gold_review(
    rules, lead, annotator, admin_user, settings
):
    settings.CURATION_SPOT_CHECK_RATE = Decimal("1")
    triple = triage_triple(annotator)
    first, second = reviewers(2)
    review(first, triple)
    year, week = current_iso_week()
    draw_spot_checks(
        project=default_project(), iso_year=year, iso_week=week, actor=admin_user, seed=7
    )
    spot = review(second, triple)
    assert spot.spot_check and triple.state == TripleState.GOLD

    promote_triple(actor=lead, triple=triple, reason="gate")
    triple.refresh_from_db()
    spot.refresh_from_db()
    assert not spot.spot_check
    assert (triple.tier, triple.state, triple.resolution) == (
        Tier.GOLD,
        TripleState.GOLD,
        Resolution.CONSENSUS,
    )
    event = AuditEvent.objects.get(verb="promoted", object_id=str(triple.pk))
    assert event.detail["spot_check_review_counted"] is True


def test_a_drawn_but_unclaimed_spot_check_slot_becomes_a_regular_gold_review(
    rules, lead, annotator, admin_user, settings
):
    settings.CURATION_SPOT_CHECK_RATE = Decimal("1")
    triple = triage_triple(annotator)
    first, second = reviewers(2)
    review(first, triple)
    year, week = current_iso_week()
    draw_spot_checks(
        project=default_project(), iso_year=year, iso_week=week, actor=admin_user, seed=7
    )
    promote_triple(actor=lead, triple=triple, reason="gate")
    second_review = review(second, triple)
    assert not second_review.spot_check
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)


@pytest.mark.parametrize("reason", ["", "   "])
def test_promotion_needs_a_reason(rules, lead, annotator, reason):
    triple = triage_triple(annotator)
    with pytest.raises(GoldsetError, match="reason"):
        promote_triple(actor=lead, triple=triple, reason=reason)
    triple.refresh_from_db()
    assert triple.tier == Tier.TRIAGE


def test_annotators_cannot_promote(rules, annotator):
    triple = triage_triple(annotator)
    with pytest.raises(GoldsetError, match="lead or an admin"):
        promote_triple(actor=annotator, triple=triple, reason="me")


def test_gold_and_finished_triples_are_not_promotable(rules, lead, annotator):
    gold = triage_triple(annotator, task_type="factual_qa")
    with pytest.raises(GoldsetError, match="already GOLD"):
        promote_triple(actor=lead, triple=gold, reason="r")
    discussed = triage_triple(annotator)
    review_directly(reviewers(1)[0], discussed, verdict="flag", flags=["answer_not_entailed"])
    assert discussed.state == TripleState.IN_DISCUSSION
    with pytest.raises(GoldsetError, match="in discussion"):
        promote_triple(actor=lead, triple=discussed, reason="r")


def test_promoted_cases_are_never_re_routed(rules, lead, annotator, admin_user):
    triple = triage_triple(annotator)
    promote_triple(actor=lead, triple=triple, reason="gate")
    set_rules(admin_user)  # nothing routes to GOLD
    assert [r.pk for r in preview_reroute(project=default_project()).changes] == []


# ---------------------------------------------------------------- answer records


def _not_spot_checked_public_id() -> str:
    """A public id whose seeded TRIAGE spot-check draw this week says no (so one label is final)."""
    from django.utils import timezone

    from goldset.conf import tunable
    from goldset.services.labeling import _iso_week, seeded_draw

    seed, rate = tunable("ANSWER_SPOT_CHECK_SEED"), tunable("ANSWER_SPOT_CHECK_RATE")
    week = _iso_week(timezone.now())
    return next(
        pid
        for pid in (f"{n:016x}" for n in range(1000))
        if seeded_draw(seed=seed, key=f"{week}:{pid}") >= rate
    )


def test_a_final_triage_record_collects_the_missing_labels(rules, lead):
    record = answer_record(domain_slug="legal_ops", public_id=_not_spot_checked_public_id())
    first, second, third = qualified_annotators(record.question.domain, 3)
    claim_and_label(first)
    record.refresh_from_db()
    assert (record.status, record.final_source) == (RecordStatus.FINAL, FinalSource.SINGLE)

    promote_answer_record(actor=lead, record=record, reason="release gate")
    record.refresh_from_db()
    assert (record.tier, record.status, record.labels_required, record.final_source) == (
        Tier.GOLD,
        RecordStatus.LABELING,
        3,
        "",
    )
    assert (
        claim_next_item(annotator=first, project=default_project()).reason == "queue_empty"
    )  # labeled it already
    claim_and_label(second)
    claim_and_label(third)
    record.refresh_from_db()
    assert record.labels.count() == 3
    assert record.final_source == FinalSource.MAJORITY
    event = AuditEvent.objects.get(verb="promoted", object_id=str(record.pk))
    assert event.detail["case"] == record.public_id
    assert event.detail["before"]["status"] == RecordStatus.FINAL
    assert "run" not in str(event.detail) and "system" not in str(event.detail)


def test_a_labeling_triage_record_needs_three_labels(rules, lead):
    record = answer_record(domain_slug="legal_ops")
    promote_answer_record(actor=lead, record=record, reason="gate")
    annotators = qualified_annotators(record.question.domain, 3)
    for a in annotators:
        claim_and_label(a)
    record.refresh_from_db()
    assert record.labels.count() == 3 and record.status in (RecordStatus.FINAL, RecordStatus.AUDIT)


def test_records_with_a_lead_are_not_promotable(rules, lead):
    record = answer_record(status=RecordStatus.NEEDS_ADJUDICATION)
    with pytest.raises(GoldsetError, match="needs adjudication"):
        promote_answer_record(actor=lead, record=record, reason="r")


# ---------------------------------------------------------------- batches


def test_a_batch_promotes_exactly_the_filtered_cases(rules, lead, annotator):
    health = DomainFactory(slug="healthcare_ops")
    in_batch = [triage_triple(annotator, domain=health) for _ in range(2)]
    other_domain = triage_triple(annotator)
    other_task = triage_triple(annotator, domain=health, task_type="code_generation")
    token = batch_token("triple", [t.pk for t in in_batch])
    result = promote_batch(
        actor=lead,
        kind="triple",
        domain="healthcare_ops",
        task_type="summarization",
        reason="healthcare gate",
        token=token,
        project=default_project(),
    )
    assert sorted(result.cases) == sorted(t.external_id for t in in_batch)
    tiers = dict(Triple.objects.values_list("pk", "tier"))
    assert [tiers[t.pk] for t in in_batch] == [Tier.GOLD, Tier.GOLD]
    assert tiers[other_domain.pk] == tiers[other_task.pk] == Tier.TRIAGE
    batch_ids = set(
        AuditEvent.objects.filter(verb="promoted").values_list("detail__batch", flat=True)
    )
    assert batch_ids == {result.batch}


def test_a_batch_whose_matching_set_changed_promotes_nothing(rules, lead, annotator):
    first = triage_triple(annotator)
    token = batch_token("triple", [first.pk])
    triage_triple(annotator)  # a new match appears before the confirmation
    with pytest.raises(BatchChanged, match="2 match now"):
        promote_batch(actor=lead, kind="triple", reason="r", token=token, project=default_project())
    assert not Triple.objects.filter(tier=Tier.GOLD).exists()


def test_a_record_batch_by_domain(rules, lead):
    a = answer_record(domain_slug="legal_ops")
    b = answer_record(domain_slug="supply_chain")
    promote_batch(
        actor=lead,
        kind="answer_record",
        domain="legal_ops",
        reason="r",
        token=batch_token("answer_record", [a.pk]),
        project=default_project(),
    )
    assert AnswerRecord.objects.get(pk=a.pk).tier == Tier.GOLD
    assert AnswerRecord.objects.get(pk=b.pk).tier == Tier.TRIAGE


def test_a_batch_promotes_at_most_the_batch_size_first_by_id(rules, lead, annotator, settings):
    """A filter matching more cases than a batch holds promotes the first by id; the preview
    names them and says more match, and the next batch promotes the rest (issue 17: the page
    never reads every matching case)."""
    settings.PROMOTION_BATCH_MAX = 2
    cases = sorted((triage_triple(annotator) for _ in range(3)), key=lambda t: t.pk)
    preview = preview_batch(kind="triple", project=default_project())
    assert (preview.ids, preview.more, preview.count) == ([c.pk for c in cases[:2]], True, 2)
    result = promote_batch(
        actor=lead, kind="triple", reason="first", token=preview.token, project=default_project()
    )
    assert result.cases == [c.external_id for c in cases[:2]]
    assert Triple.objects.get(pk=cases[2].pk).tier == Tier.TRIAGE
    rest = preview_batch(kind="triple", project=default_project())
    assert (rest.ids, rest.more) == ([cases[2].pk], False)
    promote_batch(
        actor=lead, kind="triple", reason="rest", token=rest.token, project=default_project()
    )
    assert not Triple.objects.filter(tier=Tier.TRIAGE).exists()


def test_a_stale_capped_batch_promotes_nothing(rules, lead, annotator, settings):
    settings.PROMOTION_BATCH_MAX = 2
    first, second = triage_triple(annotator), triage_triple(annotator)
    token = preview_batch(kind="triple", project=default_project()).token
    Triple.objects.filter(pk=first.pk).update(tier=Tier.GOLD)  # leaves the filter
    triage_triple(annotator)  # the first two by id are now another pair
    with pytest.raises(BatchChanged):
        promote_batch(actor=lead, kind="triple", reason="r", token=token, project=default_project())
    assert Triple.objects.get(pk=second.pk).tier == Tier.TRIAGE
