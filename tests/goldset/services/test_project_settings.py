"""Per-project settings (DESIGN.md §15): a project's admin overrides the installation's protocol
numbers for that project alone, within each tunable's rule, and every change is kept."""

from decimal import Decimal

import pytest

from goldset.conf import PROJECT_TUNABLES, TUNABLES, curation_setting, tunable
from goldset.models import CalibrationStatus, PcsCalibration, Project, ProjectSettingChange, Tier
from goldset.rules.tiers import RECORD, TRIPLE, required_for
from goldset.services.project_settings import (
    SettingRefused,
    list_setting_changes,
    list_settings_in_force,
    parse_setting,
    pcs_calibration_in_use,
    update_project_settings,
)
from goldset.services.projects import create_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(make_user):
    return make_user(Role.ADMIN, username="owner")


@pytest.fixture
def project_a(owner):
    return create_project(name="Customer bot", slug="bot", by=owner)


@pytest.fixture
def project_b(owner):
    return create_project(name="Policy assistant", slug="policy", by=owner)


def _refusal(project, owner, changes) -> SettingRefused:
    with pytest.raises(SettingRefused) as caught:
        update_project_settings(project=project, changes=changes, by=owner)
    return caught.value


@pytest.mark.parametrize(
    ("name", "raw", "rule"),
    [
        ("KAPPA_GATE", "1.5", "a target between 0 and 1"),
        ("KAPPA_GATE", "-0.1", "a target between 0 and 1"),
        ("KAPPA_GATE", "nan", "a target between 0 and 1"),
        ("KAPPA_GATE", "high", "a number"),
        ("AGREEMENT_ALPHA_TARGET", "1.01", "a target between 0 and 1"),
        ("AUDIT_SAMPLE_RATE", "2", "a rate between 0 and 1"),
        ("CURATION_SPOT_CHECK_RATE", "-0.5", "a rate between 0 and 1"),
        ("AUDIT_SAMPLE_SEED", "-1", "an integer seed of at least 0"),
        ("QUEUE_SHUFFLE_SEED", "1.5", "an integer"),
        ("AGREEMENT_MIN_ITEMS", "0", "a count of at least 1"),
        ("PROMOTION_BATCH_MAX", "0", "a count of at least 1"),
        ("LABELING_COST_GOLD", "-0.01", "a cost of at least 0"),
        ("LABELING_COST_TRIAGE", "inf", "a cost of at least 0"),
        ("GOLD_LABELS_PER_ITEM", "4", "a count of labels between 1 and 3"),
        ("GOLD_REVIEWS_PER_TRIPLE", "3", "a count of reviewers between 1 and 2"),
        ("TRIAGE_REVIEWS_PER_TRIPLE", "0", "a count of reviewers between 1 and 2"),
        ("CURATION_FRESH_REVIEWERS_ON_REVISION", "maybe", "true or false"),
        ("CURATION_SOURCE_TARGETS", "[40, 60]", "summing to 100"),
        ("CURATION_SOURCE_TARGETS", '{"public_rfp": 50, "synthetic": 40}', "summing to 100"),
        ("CURATION_SOURCE_TARGETS", '{"public_rfp": 110, "synthetic": -10}', "summing to 100"),
        ("CURATION_SOURCE_TARGETS", "{not json", "a JSON object"),
        ("PCS_CALIBRATION", "-3", "a succeeded PCS calibration of this project"),
        ("PCS_CALIBRATION", "999999", "a succeeded PCS calibration of this project"),
    ],
)
def test_a_value_outside_its_rule_is_refused_naming_the_setting_and_the_rule(
    project_a, owner, name, raw, rule
):
    refused = _refusal(project_a, owner, {name: raw})
    assert refused.name == name
    assert rule in refused.rule
    assert str(refused).startswith(f"{name}: must be ")
    project_a.refresh_from_db()
    assert project_a.settings == {}
    assert not ProjectSettingChange.objects.exists()


@pytest.mark.parametrize(
    ("name", "why"), [("NO_SUCH_SETTING", "unknown"), ("JOB_MAX_ATTEMPTS", "installation-wide")]
)
def test_only_per_project_tunables_can_be_set(project_a, owner, name, why):
    refused = _refusal(project_a, owner, {name: "3"})
    assert (refused.name, refused.rule) == (name, f"a per-project setting (this one is {why})")
    # a reset of such a name is refused too
    assert _refusal(project_a, owner, {name: None}).name == name


def test_one_refused_value_refuses_the_whole_change(project_a, owner):
    refused = _refusal(project_a, owner, {"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_RATE": "7"})
    assert refused.name == "AUDIT_SAMPLE_RATE"
    project_a.refresh_from_db()
    assert project_a.settings == {}
    assert tunable("KAPPA_GATE", project=project_a) == 0.70


def test_every_change_is_kept_with_old_and_new_value_who_and_an_audit_event(project_a, owner):
    update_project_settings(
        project=project_a, changes={"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_SEED": "77"}, by=owner
    )
    update_project_settings(project=project_a, changes={"KAPPA_GATE": " 0.85 "}, by=owner)
    # the same text again changes nothing and is not recorded
    update_project_settings(project=project_a, changes={"KAPPA_GATE": "0.85"}, by=owner)

    project_a.refresh_from_db()
    assert project_a.settings == {"KAPPA_GATE": "0.85", "AUDIT_SAMPLE_SEED": "77"}
    history = [
        (c.name, c.old_value, c.new_value, c.changed_by)
        for c in list_setting_changes(project=project_a)
    ]
    assert history[0] == ("KAPPA_GATE", "0.8", "0.85", owner)
    assert sorted(history[1:]) == [
        ("AUDIT_SAMPLE_SEED", None, "77", owner),
        ("KAPPA_GATE", None, "0.8", owner),
    ]
    events = AuditEvent.objects.filter(verb="project.settings").order_by("pk")
    assert [e.project for e in events] == [project_a, project_a]
    assert events[1].detail == {"KAPPA_GATE": {"old": "0.8", "new": "0.85"}}
    assert events[1].actor == owner


def test_none_or_empty_resets_to_the_installation_default(project_a, owner, settings):
    settings.KAPPA_GATE = 0.72  # the installation's value
    update_project_settings(
        project=project_a,
        changes={"KAPPA_GATE": "0.9", "CURATION_SPOT_CHECK_RATE": "0.3"},
        by=owner,
    )
    assert tunable("KAPPA_GATE", project=project_a) == 0.9
    assert curation_setting("SPOT_CHECK_RATE", project=project_a) == Decimal("0.3")

    update_project_settings(
        project=project_a, changes={"KAPPA_GATE": None, "CURATION_SPOT_CHECK_RATE": "  "}, by=owner
    )
    project_a.refresh_from_db()
    assert project_a.settings == {}
    assert tunable("KAPPA_GATE", project=project_a) == 0.72
    assert curation_setting("SPOT_CHECK_RATE", project=project_a) == Decimal("0.10")
    resets = ProjectSettingChange.objects.filter(project=project_a, new_value__isnull=True)
    assert sorted((c.name, c.old_value) for c in resets) == [
        ("CURATION_SPOT_CHECK_RATE", "0.3"),
        ("KAPPA_GATE", "0.9"),
    ]
    # resetting a value that is the default already records nothing
    before = ProjectSettingChange.objects.count()
    update_project_settings(project=project_a, changes={"KAPPA_GATE": None}, by=owner)
    assert ProjectSettingChange.objects.count() == before


def test_changing_project_a_leaves_project_b_and_the_installation_untouched(
    project_a, project_b, owner
):
    update_project_settings(
        project=project_a,
        changes={
            "KAPPA_GATE": "0.8",
            "CURATION_SOURCE_TARGETS": '{"public_rfp": 50, "synthetic": 50}',
            "GOLD_LABELS_PER_ITEM": "2",
            "GOLD_REVIEWS_PER_TRIPLE": "1",
            "CURATION_FRESH_REVIEWERS_ON_REVISION": "false",
        },
        by=owner,
    )
    project_b.refresh_from_db()
    assert project_b.settings == {}
    assert not ProjectSettingChange.objects.filter(project=project_b).exists()
    assert tunable("KAPPA_GATE", project=project_a) == 0.8
    assert tunable("KAPPA_GATE", project=project_b) == tunable("KAPPA_GATE") == 0.70
    assert curation_setting("SOURCE_TARGETS", project=project_a) == {
        "public_rfp": 50,
        "synthetic": 50,
    }
    assert curation_setting("SOURCE_TARGETS", project=project_b)["public_rfp"] == 40
    assert curation_setting("FRESH_REVIEWERS_ON_REVISION", project=project_a) is False
    assert curation_setting("FRESH_REVIEWERS_ON_REVISION", project=project_b) is True
    # the tier rules read the project's counts
    assert required_for(RECORD, Tier.GOLD, project=project_a) == 2
    assert required_for(RECORD, Tier.GOLD, project=project_b) == 3
    assert required_for(TRIPLE, Tier.GOLD, project=project_a) == 1
    assert required_for(TRIPLE, Tier.GOLD, project=project_b) == 2
    assert required_for(TRIPLE, Tier.TRIAGE, project=project_a) == 1


def test_the_new_per_project_numbers_default_to_the_constants_of_before():
    assert {
        name: TUNABLES[name].default
        for name in (
            "GOLD_REVIEWS_PER_TRIPLE",
            "TRIAGE_REVIEWS_PER_TRIPLE",
            "GOLD_LABELS_PER_ITEM",
            "TRIAGE_LABELS_PER_ITEM",
            "QUEUE_SHUFFLE_SEED",
            "PCS_CALIBRATION",
        )
    } == {
        "GOLD_REVIEWS_PER_TRIPLE": 2,
        "TRIAGE_REVIEWS_PER_TRIPLE": 1,
        "GOLD_LABELS_PER_ITEM": 3,
        "TRIAGE_LABELS_PER_ITEM": 1,
        "QUEUE_SHUFFLE_SEED": 6601,
        "PCS_CALIBRATION": 0,
    }
    assert [required_for(k, t) for k in (TRIPLE, RECORD) for t in (Tier.GOLD, Tier.TRIAGE)] == [
        2,
        1,
        3,
        1,
    ]
    # every per-project tunable has a rule its values must keep
    assert all(
        TUNABLES[n].check is not None or isinstance(TUNABLES[n].default, bool)
        for n in PROJECT_TUNABLES
    )


def test_every_installation_default_keeps_its_own_rule(project_a):
    for name in PROJECT_TUNABLES:
        text = str(TUNABLES[name].default)
        if isinstance(TUNABLES[name].default, dict):
            import json

            text = json.dumps(TUNABLES[name].default)
        parse_setting(name, text, project=project_a)


def test_the_pcs_calibration_in_use_must_be_a_succeeded_one_of_the_project(
    project_a, project_b, owner
):
    theirs = PcsCalibration.objects.create(
        project=project_b, name="b", version=1, status=CalibrationStatus.SUCCEEDED
    )
    running = PcsCalibration.objects.create(
        project=project_a, name="a", version=1, status=CalibrationStatus.RUNNING
    )
    ours = PcsCalibration.objects.create(
        project=project_a, name="a", version=2, status=CalibrationStatus.SUCCEEDED
    )
    for other in (theirs, running):
        refused = _refusal(project_a, owner, {"PCS_CALIBRATION": str(other.pk)})
        assert refused.name == "PCS_CALIBRATION"
    assert pcs_calibration_in_use(project=project_a) is None
    update_project_settings(project=project_a, changes={"PCS_CALIBRATION": str(ours.pk)}, by=owner)
    assert pcs_calibration_in_use(project=project_a) == ours
    assert pcs_calibration_in_use(project=project_b) is None


def test_the_settings_list_shows_default_own_value_and_value_in_force(project_a, owner):
    update_project_settings(project=project_a, changes={"AUDIT_SAMPLE_RATE": "0.2"}, by=owner)
    rows = {r.name: r for r in list_settings_in_force(project=Project.objects.get(slug="bot"))}
    assert set(rows) == PROJECT_TUNABLES
    audit = rows["AUDIT_SAMPLE_RATE"]
    assert (audit.default, audit.own, audit.value, audit.overridden) == (0.05, "0.2", 0.2, True)
    gate = rows["KAPPA_GATE"]
    assert (gate.default, gate.own, gate.value, gate.overridden) == (0.70, None, 0.70, False)
    assert gate.doc == TUNABLES["KAPPA_GATE"].doc


def test_the_project_reviewer_count_moves_the_revision_and_its_resolution(make_user):
    """A GOLD triple of a project whose GOLD_REVIEWS_PER_TRIPLE is 1 needs one review (its
    revision is created with one reviewer slot) and is gold after one confirm."""
    from goldset.models.projects import default_project_id
    from tests.goldset.curation_support import review, write_triple

    project = Project.objects.get(pk=default_project_id())
    author = make_user(Role.ANNOTATOR, username="author")
    reviewer = make_user(Role.ANNOTATOR, username="rev1")
    before = write_triple(author, gold=True)
    assert before.current_revision.reviewers_needed == 2
    review(reviewer, before)
    update_project_settings(project=project, changes={"GOLD_REVIEWS_PER_TRIPLE": "1"}, by=author)
    after = write_triple(author, gold=True)
    assert (after.tier, after.current_revision.reviewers_needed) == (Tier.GOLD, 1)
    review(reviewer, after)
    assert after.state == "gold"
    # the revision of before keeps the two reviews it was created with
    before.refresh_from_db()
    assert (before.state, before.current_revision.reviewers_needed) == ("pending_review", 2)
