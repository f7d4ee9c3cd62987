"""Issue 12 item 2: the re-route preview names the cases that resolve at once when applied —
and applying does exactly what the preview said (the protocol's own decision functions)."""

import pytest

from goldset.models import RecordStatus, Tier, TripleState
from goldset.services.promotion import apply_reroute, preview_reroute
from goldset.services.resolution import resolution_outcome
from tests.goldset.answers_helpers import (
    BAD,
    claim_and_label,
    default_project,
    qualified_annotators,
)
from tests.goldset.promotion_support import answer_record, reviewers, set_rules, triage_triple
from tests.goldset.promotion_support import review_directly as review

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(admin_user):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    return admin_user


def _demote(admin):
    set_rules(admin)  # nothing routes to GOLD any more
    return preview_reroute(project=default_project())


def _rows(preview):
    return {(r.kind, r.pk): r for r in preview.changes}


@pytest.mark.parametrize(
    "tier,verdicts,awaiting,expected",
    [
        (Tier.GOLD, ["confirm"], False, None),
        (Tier.TRIAGE, [], False, None),
        (Tier.TRIAGE, ["confirm"], False, TripleState.GOLD),
        (Tier.TRIAGE, ["confirm"], True, TripleState.PENDING_REVIEW),
        (Tier.TRIAGE, ["flag"], False, TripleState.IN_DISCUSSION),
        (Tier.GOLD, ["confirm", "confirm"], False, TripleState.GOLD),
        (Tier.GOLD, ["confirm", "flag"], False, TripleState.IN_DISCUSSION),
        (Tier.GOLD, ["flag", "flag"], False, TripleState.DROPPED),
    ],
)
def test_resolution_outcome_is_the_protocol(tier, verdicts, awaiting, expected):
    assert resolution_outcome(tier=tier, verdicts=verdicts, awaiting_human=awaiting) == expected


def test_preview_names_a_triple_that_becomes_gold_at_once_and_applying_does_it(admin, annotator):
    confirmed = triage_triple(annotator, task_type="factual_qa")
    flagged = triage_triple(annotator, task_type="factual_qa")
    untouched = triage_triple(annotator, task_type="factual_qa")
    r1, r2 = reviewers(2)
    review(r1, confirmed, "confirm")
    review(r2, flagged, "flag", ["question_unrealistic"])
    assert untouched.state == TripleState.PENDING_REVIEW
    preview = _demote(admin)
    rows = _rows(preview)
    gold = rows[("triple", confirmed.pk)]
    assert gold.resolves_to == TripleState.GOLD and gold.finalises
    assert gold.resolves == "becomes gold at once (TRIAGE single review)"
    discussion = rows[("triple", flagged.pk)]
    assert discussion.resolves_to == TripleState.IN_DISCUSSION and not discussion.finalises
    assert rows[("triple", untouched.pk)].resolves_to == ""
    assert [r.pk for r in preview.resolving] == [confirmed.pk, flagged.pk]
    apply_reroute(actor=admin, token=preview.token, project=default_project())
    for triple in (confirmed, flagged, untouched):
        triple.refresh_from_db()
    assert confirmed.state == TripleState.GOLD
    assert flagged.state == TripleState.IN_DISCUSSION
    assert untouched.state == TripleState.PENDING_REVIEW


def test_an_unverified_llm_triple_is_not_named_as_resolving(admin, annotator):
    triple = triage_triple(annotator, task_type="factual_qa", source="llm_generated")
    review(reviewers(1)[0], triple, "confirm")
    preview = _demote(admin)
    (row,) = preview.changes
    assert row.resolves_to == "" and preview.resolving == []
    apply_reroute(actor=admin, token=preview.token, project=default_project())
    triple.refresh_from_db()
    assert (triple.tier, triple.state) == (Tier.TRIAGE, TripleState.PENDING_REVIEW)


def test_promotion_to_gold_names_nothing(admin_user, annotator):
    set_rules(admin_user)
    triple = triage_triple(annotator, task_type="factual_qa")
    set_rules(admin_user, gold_task_types=["factual_qa"])
    preview = preview_reroute(project=default_project())
    (row,) = preview.changes
    assert (row.to_tier, row.given, row.resolves_to) == (Tier.GOLD, 0, "")
    assert triple.state == TripleState.PENDING_REVIEW


def test_demoted_records_are_named_with_the_outcome_applying_gives(admin):
    """Each demoted record with one label settles at once — final, adjudication (a severe label)
    or drawn for the weekly spot-check — and the preview says which, record by record."""
    records = [
        answer_record(tier=Tier.GOLD, task_type="factual_qa", domain_slug=f"d{i}")
        for i in range(12)
    ]
    for i, record in enumerate(records):
        (who,) = qualified_annotators(record.question.domain, 1, prefix=f"a{i}-")
        if i == 0:
            claim_and_label(who, **{**BAD, "severe_safety": True, "rationale": "unsafe"})
        else:
            claim_and_label(who)
    preview = _demote(admin)
    rows = _rows(preview)
    predicted = {r.pk: rows[("answer_record", r.pk)].resolves_to for r in records}
    assert set(predicted.values()) <= {
        RecordStatus.FINAL,
        RecordStatus.NEEDS_ADJUDICATION,
        "spot_check",
    }
    assert RecordStatus.FINAL in predicted.values()  # 11 draws at 10 %: one is not drawn
    assert predicted[records[0].pk] in (RecordStatus.NEEDS_ADJUDICATION, "spot_check")
    apply_reroute(actor=admin, token=preview.token, project=default_project())
    for record in records:
        record.refresh_from_db()
        if predicted[record.pk] == "spot_check":
            assert record.spot_check and record.labels_required == 2
            assert record.status == RecordStatus.LABELING
        else:
            assert record.status == predicted[record.pk]


@pytest.mark.parametrize("n", [2, 12])
def test_outcomes_cost_a_constant_number_of_queries(
    n, admin, annotator, django_assert_max_num_queries
):
    for i in range(n):
        triple = triage_triple(annotator, task_type="factual_qa")
        review(reviewers(1, prefix=f"r{i}-")[0], triple, "confirm")
        record = answer_record(tier=Tier.GOLD, task_type="factual_qa", domain_slug=f"d{i}")
        (who,) = qualified_annotators(record.question.domain, 1, prefix=f"a{i}-")
        claim_and_label(who)
    set_rules(admin)
    project = default_project()  # the caller's (the request's): not counted
    with django_assert_max_num_queries(5):
        preview = preview_reroute(project=project)
    assert len([r for r in preview.changes if r.kind == "triple" and r.resolves_to]) == n
