"""Issue 17: the agreement dashboard's time-on-item figures are stored by the agreement
recompute (per person, from that person's decisions only) and read back with maintained
counters; they equal what the old per-request aggregation computed, and a change the stored
figures miss marks them stale until the next recompute. Issue 27: figures and counters are per
project — a person who labels in two projects has two sets of figures, each from that
project's decisions, and a change in one marks only that project's figures stale."""

import random
from dataclasses import astuple
from importlib import import_module

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import F, Sum
from django.test.utils import CaptureQueriesContext

from goldset.models import (
    Adjudication,
    DashboardCounter,
    DecisionKind,
    FastDecision,
    Label,
    Project,
    Review,
    TimeOnItemFigure,
)
from goldset.rules.time_on_item import ItemTiming
from goldset.selectors.time_on_item import get_time_on_item_summary, stale_time_figures
from goldset.services.adjudication import record_adjudication
from goldset.services.agreement import recompute_agreement_snapshots
from goldset.services.projects import grant_role
from goldset.services.time_on_item import refresh_time_on_item_figures
from tests.factories import (
    AnswerRecordFactory,
    CalibrationResultFactory,
    DomainFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
)
from tests.goldset import time_on_item_reference as reference
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators
from tests.goldset.curation_support import review, write_triple
from tests.goldset.project_support import default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db

FINAL = {
    "acceptability": "unacceptable",
    "grounding": "partially_grounded",
    "severe_safety": False,
    "primary_failure": "missing_governing_exception",
    "rationale": "The governing exception is omitted.",
}


def _old():
    return [astuple(r) for r in reference.get_time_on_item_summary()]


def _new():
    rows = get_time_on_item_summary(project=default_project())
    assert not any(r.stale for r in rows)
    return [astuple(r)[:-1] for r in rows]


@pytest.fixture
def decisions(make_user, settings):
    """Labels, reviews and adjudications by several people, some fast, some without a time."""
    settings.FAST_DECISION_SECONDS_GOLD = 5
    settings.FAST_DECISION_SECONDS_TRIAGE = 5
    domain = DomainFactory(slug="supply_chain")
    annotators = qualified_annotators(domain, 3)
    lead = make_user(Role.LEAD, username="lead")
    for _ in range(4):  # three labels each, on items that end without a majority
        AnswerRecordFactory(question__domain=domain)
        claim_and_label(annotators[0], **GOOD, timing=ItemTiming(active_ms=1200))
        claim_and_label(annotators[1], **{**GOOD, "grounding": "partially_grounded"})
        claim_and_label(annotators[2], **BAD, timing=ItemTiming(active_ms=40_000))
    for record in {label.record for label in Label.objects.select_related("record")}:
        if record.status == "needs_adjudication":
            record_adjudication(lead=lead, record=record, **FINAL)
    author = make_user(Role.ANNOTATOR, username="author")
    for _ in range(3):
        triple = write_triple(author)
        review(annotators[0], triple, timing=ItemTiming(active_ms=9000))
        review(annotators[1], triple)
    return annotators, lead


def _scatter(rng, model):
    """Give the rows varied active times (ties, odd and even counts, a few without a time)."""
    for pk in model.objects.values_list("pk", flat=True):
        value = None if rng.random() < 0.2 else rng.choice([0, 1, 999, 7000, 7000, 123_456])
        model.objects.filter(pk=pk).update(active_ms=value)


def test_stored_figures_equal_the_old_aggregation_on_varied_data(decisions):
    rng = random.Random(14)
    for model in (Label, Review, Adjudication):
        _scatter(rng, model)
    assert Adjudication.objects.filter(active_ms__isnull=False).exists()
    assert FastDecision.objects.exists()
    refresh_time_on_item_figures()
    assert _new() == _old()
    # a person's last timed decision losing its time: their row goes, as in the old code
    annotators, _ = decisions
    Review.objects.filter(reviewer=annotators[0]).update(active_ms=None)
    FastDecision.objects.filter(kind=DecisionKind.REVIEW).delete()
    refresh_time_on_item_figures()
    assert _new() == _old()
    assert not [r for r in _old() if r[2] == "review" and r[0] == annotators[0].pk]


def test_a_change_marks_only_its_person_stale_until_the_recompute_stores_it(decisions):
    annotators, lead = decisions
    recompute_agreement_snapshots(project=default_project(), full=False)
    assert stale_time_figures() == {}
    # every one of their times changes (times capped at the server's clock may all be equal)
    Label.objects.filter(annotator=annotators[2]).update(active_ms=5)
    stale = {
        (r.kind, r.user_id) for r in get_time_on_item_summary(project=default_project()) if r.stale
    }
    assert stale == {("label", annotators[2].pk)}
    assert [
        astuple(r)[:-1] for r in get_time_on_item_summary(project=default_project())
    ] != _old()  # not yet
    # the recompute reads only the stale person's labels and stores one row
    with CaptureQueriesContext(connection) as ctx:
        assert refresh_time_on_item_figures() == 1
    reads = [q["sql"] for q in ctx.captured_queries if '"goldset_label"' in q["sql"]]
    assert len(reads) == 1 and "annotator_id" in reads[0]
    assert _new() == _old()
    assert refresh_time_on_item_figures() == 0  # idempotent: nothing stale, nothing read


def test_fast_counts_follow_inserts_and_deletes(decisions):
    refresh_time_on_item_figures()
    assert _new() == _old()
    FastDecision.objects.filter(kind=DecisionKind.LABEL).first().delete()
    assert _new() == _old()  # fast counts are live counters, never stale
    counted = DashboardCounter.objects.filter(name="fast").values_list("n", flat=True)
    assert sum(counted) == FastDecision.objects.count()  # the shards of every key summed


def test_the_dashboard_reads_the_same_number_of_statements_whatever_the_decisions(
    decisions, django_assert_max_num_queries
):
    refresh_time_on_item_figures()
    project = default_project()
    with CaptureQueriesContext(connection) as small:
        get_time_on_item_summary(project=project)
    annotators, _ = decisions
    for _ in range(3):
        AnswerRecordFactory(question__domain=annotators[0].calibration_results.first().domain)
    for user in annotators:
        claim_and_label(user, **GOOD, timing=ItemTiming(active_ms=3000))
    refresh_time_on_item_figures()
    with CaptureQueriesContext(connection) as large:
        get_time_on_item_summary(project=project)
    assert len(small.captured_queries) == len(large.captured_queries) == 5  # + members
    for q in large.captured_queries:
        for table in ("goldset_label", "goldset_review", "goldset_adjudication"):
            assert f'"{table}"' not in q["sql"]
    assert TimeOnItemFigure.objects.count() >= 3


def _counter_writes() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables "
            "WHERE relname = 'goldset_dashboardcounter'"
        )
        return cursor.fetchone()[0]


def _time_changes(key: str) -> int:
    counted = DashboardCounter.objects.filter(name="time_changes", key=key)
    return sum(counted.values_list("n", flat=True))


def test_one_statement_over_a_persons_decisions_writes_their_counter_once(decisions, postgres):
    """0026 bumped the counter once per row (quadratic for a bulk write by one person, as the
    dashboard counters were); 0028 once per statement, with the same totals."""
    annotators, _ = decisions
    person = annotators[0]
    timed = Label.objects.filter(annotator=person, active_ms__isnull=False).count()
    assert timed >= 4
    key = f"{default_project().pk}|label|{person.pk}"
    before, writes = _time_changes(key), _counter_writes()

    Label.objects.filter(annotator=person).update(active_ms=F("active_ms") + 1)

    assert _counter_writes() - writes == 1
    assert _time_changes(key) - before == 2 * timed  # the old and the new time of each row
    writes, fast = _counter_writes(), FastDecision.objects.filter(annotator=person).count()
    assert fast >= 2
    FastDecision.objects.filter(annotator=person).delete()
    assert _counter_writes() - writes <= 2  # one per (person, kind) key
    assert FastDecision.objects.count() == sum(
        DashboardCounter.objects.filter(name="fast").values_list("n", flat=True)
    )


def _label_in(project, annotator, domain, active_ms):
    """One label by ``annotator`` on a fresh record of ``project``, ``active_ms`` long (set
    after the fact: a label submitted at once has its time capped by the server's clock)."""
    tag = f"{project.slug}-{active_ms}"
    system = SystemFactory(project=project, system_id=f"sys-{tag}")
    AnswerRecordFactory(
        project=project,
        question=QuestionFactory(project=project, domain=domain, question_id=f"q-{tag}"),
        run=RunFactory(project=project, run_id=f"run-{tag}", system=system),
    )
    label = claim_and_label(annotator, project=project, **GOOD)
    Label.objects.filter(pk=label.pk).update(active_ms=active_ms)


def test_figures_are_per_project(make_user):
    a = default_project()
    b = Project.objects.create(name="Bravo", slug="bravo")
    domain_a = DomainFactory(slug="supply_chain")
    domain_b = DomainFactory(project=b, slug="bravo_supply_chain")
    (person,) = qualified_annotators(domain_a, 1)
    grant_role(project=b, user=person, role=Role.ANNOTATOR)
    CalibrationResultFactory(annotator=person, domain=domain_b)
    _label_in(a, person, domain_a, 2000)
    _label_in(a, person, domain_a, 4000)
    _label_in(b, person, domain_b, 60_000)
    assert refresh_time_on_item_figures() == 2  # one figure per project
    rows_a = {r.kind: r for r in get_time_on_item_summary(project=a) if r.user_id == person.pk}
    rows_b = {r.kind: r for r in get_time_on_item_summary(project=b) if r.user_id == person.pk}
    assert (rows_a["label"].n, rows_a["label"].median_s) == (2, 3.0)
    assert (rows_b["label"].n, rows_b["label"].median_s) == (1, 60.0)
    # a change in B marks B's figure stale, A's stays fresh; the refresh stores B's only
    Label.objects.filter(record__project=b).update(active_ms=30_000)
    assert set(stale_time_figures()) == {(b.pk, "label", person.pk)}
    assert not any(r.stale for r in get_time_on_item_summary(project=a))
    assert [r.stale for r in get_time_on_item_summary(project=b) if r.user_id == person.pk] == [
        True
    ]
    assert refresh_time_on_item_figures() == 1
    figure = TimeOnItemFigure.objects.get(project=b, kind="label", user_id=person.pk)
    assert (figure.n, figure.median_ms) == (1, 30_000)


def test_the_migration_recounts_every_project_s_changes(decisions, make_user):
    """0038's backfill gives the counts the triggers keep."""
    kept = sorted(
        DashboardCounter.objects.filter(name="time_changes")
        .values("key")
        .annotate(n=Sum("n"))
        .values_list("key", "n")
    )
    assert kept and all(key.startswith(f"{default_project().pk}|") for key, _ in kept)
    migration = import_module("goldset.migrations.0039_time_figures_per_project")
    with connection.schema_editor() as editor:
        migration._counter_triggers.key_time_changes_by_project(apps, editor)
    recounted = sorted(DashboardCounter.objects.filter(name="time_changes").values_list("key", "n"))
    timed = Label.objects.filter(active_ms__isnull=False).count()
    assert sum(n for key, n in recounted if "|label|" in key) == timed
    assert {key for key, _ in recounted} <= {key for key, _ in kept}
