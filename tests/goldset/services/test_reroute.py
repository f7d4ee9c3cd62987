"""Re-route preview and its confirmation (issue 6 item 1): which open cases change tier, nothing
changes before confirmation, exactly the previewed set changes after it, and a changed world is
detected. Demotion never loses a given or claimed review/label."""

from decimal import Decimal

import pytest

from goldset.exceptions import GoldsetError
from goldset.models import (
    AnswerRecord,
    FinalSource,
    RecordStatus,
    Resolution,
    Review,
    Tier,
    Triple,
    TripleState,
)
from goldset.services.labeling import claim_next_item
from goldset.services.promotion import (
    PreviewChanged,
    apply_reroute,
    preview_reroute,
    promote_triple,
)
from goldset.services.reviews import claim_next_assignment, submit_review
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import claim_and_label, qualified_annotators
from tests.goldset.curation_support import claim, review
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
def world(admin_user, annotator):
    """Under rules that send nothing to GOLD: one open TRIAGE triple and one open TRIAGE answer
    record per rule of seed 003 (each matching that rule only), plus one matching none."""
    set_rules(admin_user)
    health = DomainFactory(slug="healthcare_ops")
    cases = {
        "task_type": dict(task_type="factual_qa"),
        "uncertainty": dict(model_uncertainty=Decimal("0.7")),
        "adversarial": dict(adversarial=True),
        "domain": dict(domain=health),
        "none": dict(model_uncertainty=Decimal("0.2")),
    }
    triples = {name: triage_triple(annotator, **fields) for name, fields in cases.items()}
    records = {
        "task_type": answer_record(task_type="factual_qa"),
        "uncertainty": answer_record(uncertainty=Decimal("0.7")),
        "adversarial": answer_record(adversarial=True),
        "domain": answer_record(domain_slug="healthcare_ops"),
        "none": answer_record(uncertainty=Decimal("0.2")),
    }
    assert {t.tier for t in triples.values()} == {Tier.TRIAGE}
    return triples, records


RULES = {
    "task_type": (dict(gold_task_types=["factual_qa"]), "task_type:factual_qa"),
    "uncertainty": (dict(uncertainty_threshold=Decimal("0.65")), "uncertainty>=0.65"),
    "adversarial": (dict(adversarial_routes_gold=True), "adversarial"),
    "domain": (dict(gold_domains=["healthcare_ops"]), "domain:healthcare_ops"),
}


def _changes(preview):
    return {(r.kind, r.pk): r for r in preview.changes}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_rule_fires_on_its_own_in_the_preview(world, admin_user, rule):
    triples, records = world
    rules, fired = RULES[rule]
    set_rules(admin_user, **rules)
    changes = _changes(preview_reroute(project=default_project()))
    assert set(changes) == {("triple", triples[rule].pk), ("answer_record", records[rule].pk)}
    for row in changes.values():
        assert (row.from_tier, row.from_rule, row.to_tier, row.to_rule) == (
            Tier.TRIAGE,
            "default",
            Tier.GOLD,
            fired,
        )
    assert changes[("triple", triples[rule].pk)].required_after == 2
    assert changes[("answer_record", records[rule].pk)].required_after == 3


def test_rules_in_combination_name_the_first_rule_that_fires(world, admin_user, annotator):
    triples, records = world
    both = triage_triple(
        annotator,
        model_uncertainty=Decimal("0.9"),
        adversarial=True,
        domain=triples["domain"].domain,
    )
    set_rules(
        admin_user,
        gold_task_types=["factual_qa"],
        uncertainty_threshold=Decimal("0.65"),
        adversarial_routes_gold=True,
        gold_domains=["healthcare_ops"],
    )
    changes = _changes(preview_reroute(project=default_project()))
    expected = {name: fired for name, (_, fired) in RULES.items()}
    for name, fired in expected.items():
        assert changes[("triple", triples[name].pk)].to_rule == fired
        assert changes[("answer_record", records[name].pk)].to_rule == fired
    assert changes[("triple", both.pk)].to_rule == "uncertainty>=0.65"
    assert ("triple", triples["none"].pk) not in changes
    assert ("answer_record", records["none"].pk) not in changes


def _snapshot():
    return (
        list(Triple.objects.order_by("pk").values_list("tier", "routing_rule", "rules_version")),
        list(
            AnswerRecord.objects.order_by("pk").values_list(
                "tier", "routing_rule", "rules_version", "labels_required"
            )
        ),
        AuditEvent.objects.filter(verb="rerouted").count(),
    )


def test_preview_changes_nothing_until_confirmed(world, admin_user):
    set_rules(admin_user, gold_task_types=["factual_qa"], adversarial_routes_gold=True)
    before = _snapshot()
    preview = preview_reroute(project=default_project())
    assert len(preview.changes) == 4
    assert _snapshot() == before


def test_confirm_applies_exactly_the_previewed_set(world, admin_user, annotator):
    triples, records = world
    finished = triage_triple(annotator, task_type="factual_qa")
    review_directly(reviewers(1, "fin")[0], finished)
    assert finished.state == TripleState.GOLD
    promoted_gold = triage_triple(annotator, adversarial=True)
    promote_triple(actor=admin_user, triple=promoted_gold, reason="release gate")
    final_record = answer_record(task_type="factual_qa", status=RecordStatus.FINAL)
    rules = set_rules(admin_user, gold_task_types=["factual_qa"], adversarial_routes_gold=True)

    preview = preview_reroute(project=default_project())
    applied = apply_reroute(actor=admin_user, token=preview.token, project=default_project())

    assert [r.key() for r in applied.changes] == [r.key() for r in preview.changes]
    changed = {(r.kind, r.pk) for r in preview.changes}
    assert changed == {
        ("triple", triples["task_type"].pk),
        ("triple", triples["adversarial"].pk),
        ("answer_record", records["task_type"].pk),
        ("answer_record", records["adversarial"].pk),
    }
    t = Triple.objects.select_related("current_revision").get(pk=triples["task_type"].pk)
    assert (t.tier, t.routing_rule, t.rules_version) == (
        Tier.GOLD,
        "task_type:factual_qa",
        rules.version,
    )
    assert t.current_revision.reviewers_needed == 2
    r = AnswerRecord.objects.get(pk=records["adversarial"].pk)
    assert (r.tier, r.routing_rule, r.rules_version, r.labels_required) == (
        Tier.GOLD,
        "adversarial",
        rules.version,
        3,
    )
    # Finished, promoted and non-matching cases kept their tier.
    finished.refresh_from_db()
    final_record.refresh_from_db()
    assert (finished.tier, finished.rules_version) == (Tier.TRIAGE, 2)
    assert final_record.tier == Tier.TRIAGE
    assert Triple.objects.get(pk=promoted_gold.pk).routing_rule == "promoted"
    assert Triple.objects.get(pk=triples["uncertainty"].pk).tier == Tier.TRIAGE
    events = AuditEvent.objects.filter(verb="rerouted")
    assert events.count() == 4
    event = events.get(object_type="goldset.triple", object_id=str(t.pk))
    assert event.actor == admin_user
    assert event.detail["before"] == {
        "tier": Tier.TRIAGE,
        "routing_rule": "default",
        "rules_version": 2,
        "reviewers_needed": 1,
    }
    assert (
        event.detail["after"]["tier"] == Tier.GOLD
        and event.detail["after"]["reviewers_needed"] == 2
    )
    assert preview_reroute(project=default_project()).changes == []


def test_a_rules_edit_between_preview_and_confirm_is_detected(world, admin_user):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    preview = preview_reroute(project=default_project())
    set_rules(admin_user, gold_task_types=["factual_qa"], adversarial_routes_gold=True)
    before = _snapshot()
    with pytest.raises(PreviewChanged) as exc:
        apply_reroute(actor=admin_user, token=preview.token, project=default_project())
    assert _snapshot() == before
    assert len(exc.value.preview.changes) == 4
    apply_reroute(actor=admin_user, token=exc.value.preview.token, project=default_project())
    assert _snapshot() != before


def test_a_case_finishing_between_preview_and_confirm_is_detected(world, admin_user):
    triples, _ = world
    set_rules(admin_user, gold_task_types=["factual_qa"])
    preview = preview_reroute(project=default_project())
    review_directly(
        reviewers(1)[0], triples["task_type"]
    )  # TRIAGE: one review → gold, no longer open
    with pytest.raises(PreviewChanged) as exc:
        apply_reroute(actor=admin_user, token=preview.token, project=default_project())
    assert [r.pk for r in exc.value.preview.changes if r.kind == "triple"] == []
    assert Triple.objects.get(pk=triples["task_type"].pk).tier == Tier.TRIAGE


def test_a_claim_between_preview_and_confirm_is_detected(admin_user, annotator):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    triple = triage_triple(annotator, task_type="factual_qa")
    first, second = reviewers(2)
    claim(first, triple)
    set_rules(admin_user)
    preview = preview_reroute(project=default_project())
    assert [r.pk for r in preview.changes] == [triple.pk]
    claim(second, triple)  # now two reviewers hold slots: demoting would strand one
    with pytest.raises(PreviewChanged) as exc:
        apply_reroute(actor=admin_user, token=preview.token, project=default_project())
    assert exc.value.preview.changes == [] and [r.pk for r in exc.value.preview.held] == [triple.pk]
    triple.refresh_from_db()
    assert triple.tier == Tier.GOLD


def test_only_admins_apply_a_re_route(world, lead, admin_user):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    with pytest.raises(GoldsetError):
        apply_reroute(
            actor=lead,
            token=preview_reroute(project=default_project()).token,
            project=default_project(),
        )


def test_re_routed_to_gold_cases_gain_reviews_and_labels_through_the_normal_queues(
    world, admin_user, annotator
):
    triples, _ = world
    triple = triples["task_type"]
    record = answer_record(task_type="factual_qa", domain_slug="legal_ops")  # its own queue
    first, second = reviewers(2)
    held = claim(first, triple)  # the TRIAGE review slot is taken, not yet submitted
    set_rules(admin_user, gold_task_types=["factual_qa"])
    apply_reroute(
        actor=admin_user,
        token=preview_reroute(project=default_project()).token,
        project=default_project(),
    )

    other = claim_next_assignment(project=default_project(), reviewer=second)
    assert other.revision_id == triple.current_revision_id and other.slot == 2
    submit_review(reviewer=first, revision=held.revision, verdict="confirm")
    triple.refresh_from_db()
    assert triple.state == TripleState.PENDING_REVIEW  # GOLD waits for the second review
    submit_review(reviewer=second, revision=other.revision, verdict="confirm")
    triple.refresh_from_db()
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)

    annotators = qualified_annotators(record.question.domain, 3)
    for a in annotators:
        claim_and_label(a)
    record.refresh_from_db()
    assert record.labels.count() == 3
    assert (record.status, record.final_source) == (RecordStatus.FINAL, FinalSource.MAJORITY) or (
        record.status == RecordStatus.AUDIT
    )


# ---------------------------------------------------------------- demotion GOLD → TRIAGE


@pytest.fixture
def gold_world(admin_user, annotator):
    """Default seed-003 rules: factual_qa goes to GOLD."""
    set_rules(admin_user, gold_task_types=["factual_qa"])
    return admin_user


def test_demotion_counts_a_given_review_and_resolves_on_it(gold_world, annotator):
    triple = triage_triple(annotator, task_type="factual_qa")
    assert triple.tier == Tier.GOLD
    given = review(reviewers(1)[0], triple)
    set_rules(gold_world)  # nothing to GOLD any more
    preview = preview_reroute(project=default_project())
    (row,) = preview.changes
    assert (row.to_tier, row.assigned, row.given, row.required_after) == (Tier.TRIAGE, 1, 1, 1)
    apply_reroute(actor=gold_world, token=preview.token, project=default_project())
    triple.refresh_from_db()
    assert (triple.tier, triple.state, triple.resolution) == (
        Tier.TRIAGE,
        TripleState.GOLD,
        Resolution.SINGLE_REVIEW,
    )
    assert Review.objects.filter(pk=given.pk).exists()


def test_demotion_is_held_while_two_reviewers_are_assigned(gold_world, annotator):
    triple = triage_triple(annotator, task_type="factual_qa")
    first, second = reviewers(2)
    review(first, triple)
    pending = claim(second, triple)
    set_rules(gold_world)
    preview = preview_reroute(project=default_project())
    assert preview.changes == []
    (held,) = preview.held
    assert held.pk == triple.pk and "2 reviewers already assigned" in held.held_reason
    apply_reroute(actor=gold_world, token=preview.token, project=default_project())
    triple.refresh_from_db()
    assert triple.tier == Tier.GOLD and triple.current_revision.reviewers_needed == 2
    submit_review(reviewer=second, revision=pending.revision, verdict="confirm")
    triple.refresh_from_db()
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)
    assert triple.current_revision.reviews.count() == 2


def test_record_demotion_settles_on_its_given_label_and_holds_with_two_claims(gold_world):
    one = answer_record(tier=Tier.GOLD, task_type="factual_qa", domain_slug="supply_chain")
    two = answer_record(tier=Tier.GOLD, task_type="factual_qa", domain_slug="healthcare_ops")
    (a1,) = qualified_annotators(one.question.domain, 1, prefix="sc")
    a2, a3 = qualified_annotators(two.question.domain, 2, prefix="hc")
    claim_and_label(a1)  # `one`: one label given
    assert claim_next_item(annotator=a2, project=default_project()).assignment.record_id == two.pk
    assert claim_next_item(annotator=a3, project=default_project()).assignment.record_id == two.pk
    set_rules(gold_world)
    preview = preview_reroute(project=default_project())
    assert [r.pk for r in preview.changes] == [one.pk]
    assert [r.pk for r in preview.held] == [two.pk]
    apply_reroute(actor=gold_world, token=preview.token, project=default_project())
    one.refresh_from_db()
    two.refresh_from_db()
    assert one.tier == Tier.TRIAGE and one.labels.count() == 1
    # Settled on its one label as TRIAGE: final, or drawn for the seeded spot-check.
    assert one.status == RecordStatus.FINAL or (one.spot_check and one.labels_required == 2)
    assert (two.tier, two.labels_required, two.assignments.count()) == (Tier.GOLD, 3, 2)


def test_demoted_record_without_labels_needs_one_label(gold_world):
    record = answer_record(tier=Tier.GOLD, task_type="factual_qa")
    set_rules(gold_world)
    apply_reroute(
        actor=gold_world,
        token=preview_reroute(project=default_project()).token,
        project=default_project(),
    )
    record.refresh_from_db()
    assert (record.tier, record.labels_required, record.routing_rule) == (Tier.TRIAGE, 1, "default")
    (a,) = qualified_annotators(record.question.domain, 1)
    claim_and_label(a)
    record.refresh_from_db()
    assert record.status in (RecordStatus.FINAL, RecordStatus.LABELING)
    assert record.labels.count() == 1
