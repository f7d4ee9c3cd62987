"""Issue 17, agreement that scales: the vectorised computation equals the per-scope pandas
implementation it replaced bit for bit, a selection computes exactly the same figures as a full
run, and the recompute task's incremental refresh (dirty-scope marks written by the real label,
review and undo services) stores exactly what a full recompute stores."""

import hashlib
import os
import threading
import warnings
from functools import partial
from itertools import chain
from pathlib import Path

import billiard
import numpy as np
import pandas as pd
import pytest

from goldset.models import AgreementDirtyScope, AgreementSnapshot
from goldset.services.agreement import (
    AXES,
    FACT_COLUMNS,
    MASKED_GROUPS_MAX,
    PER_PROTOCOL_METRICS,
    RATING_COLUMNS,
    SPOT_CHECK_COLUMNS,
    AgreementWorkerError,
    Figure,
    Selection,
    _factorize_sorted,
    _protocol_versions,
    _run_jobs,
    _selection,
    collect_rows,
    compute_figures,
    facts_frame,
    ratings_frame,
    recompute_agreement_snapshots,
    spot_check_frame,
)
from goldset.services.agreement_sources import (
    answer_label_frame,
    answer_label_ratings,
    triple_review_frame,
    triple_review_ratings,
)
from goldset.services.labeling import undo_last_label
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset import agreement_reference as reference
from tests.goldset.answers_helpers import (
    BAD,
    claim_and_label,
    default_project,
    qualified_annotators,
)
from tests.goldset.curation_support import review, write_triple
from tests.waiting import wait_until
from workbench.roles import Role

AXIS_NAMES = ["acceptability", "grounding", "severe_safety", "verdict"]


def random_rows(seed: int, n_items: int = 240) -> pd.DataFrame:
    """Uneven data: 1–4 ratings per item (missing ratings, items no one else rated), empty and
    repeated scope values, ratings of one item in different weeks, 7 annotators."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        axes = ["verdict"] if item % 3 == 0 else ["acceptability", "grounding", "severe_safety"]
        protocol = "triple_review" if item % 3 == 0 else "answer_label"
        tier = str(rng.choice(["tier_a", "tier_b", ""]))
        task = str(rng.choice(["factual_qa", "summarization"]))
        domain = str(rng.choice(["d1", "d2", "d3"]))
        raters = rng.choice(7, size=int(rng.integers(1, 5)), replace=False)
        for axis in axes:
            cats = AXES[axis].categories
            truth = int(rng.integers(0, len(cats)))
            for who in raters:
                value = truth if rng.random() < 0.7 else int(rng.integers(0, len(cats)))
                week = f"2026-W{int(rng.integers(40, 44)):02d}"
                rows.append(
                    (
                        protocol,
                        f"i{item}",
                        int(who) + 1,
                        axis,
                        cats[value],
                        tier,
                        task,
                        domain,
                        week,
                    )
                )
    order = rng.permutation(len(rows))
    return ratings_frame([rows[i] for i in order])


SPOT = spot_check_frame(
    [("triple_review", f"s{i}", f"2026-W4{i % 3}", i % 4 != 0) for i in range(30)]
    + [("answer_label", f"t{i}", "2026-W41", i % 5 != 0) for i in range(20)]
)


@pytest.mark.parametrize("seed", [1, 2])
def test_vectorised_figures_equal_the_per_scope_implementation_bit_for_bit(seed):
    rows = random_rows(seed)
    old = reference.compute_figures(rows, SPOT, n_resamples=120)
    new = compute_figures(rows, SPOT, n_resamples=120, processes=3)
    assert len(new) > 300
    assert new == old  # values, CIs, counts, scopes, subjects, order: exactly
    assert compute_figures(rows, SPOT, n_resamples=120, processes=1) == old


def test_a_selection_computes_exactly_the_figures_a_full_run_computes_for_it():
    rows = random_rows(3)
    full = compute_figures(rows, SPOT, n_resamples=80)
    selection = Selection(
        scopes=frozenset({((), ()), (("tier", "week"), ("tier_a", "2026-W41"))}),
        pair_scopes=frozenset({(("tier",), ("tier_b",))}),
        annotators=frozenset({3}),
    )
    part = compute_figures(rows, SPOT, n_resamples=80, only={"answer_label": selection})
    assert part and all(f in full for f in part)
    assert {f.protocol for f in part} == {"answer_label"}
    pairs = [f for f in part if f.metric == "cohen_kappa"]
    assert pairs and all(
        "3" in f.subject.split("|") and f.scope == {"tier": "tier_b"} for f in pairs
    )
    scopes = {tuple(sorted(f.scope.items())) for f in part if f.metric == "krippendorff_alpha"}
    assert scopes == {(), (("tier", "tier_a"), ("week", "2026-W41"))}


def stored_figures() -> set[tuple]:
    return set(
        AgreementSnapshot.objects.values_list(
            "protocol",
            "axis",
            "metric",
            "tier",
            "task_type",
            "domain",
            "week",
            "subject",
            "value",
            "ci_low",
            "ci_high",
            "n_items",
            "n_annotators",
            "reason",
            "data_version",
        )
    )


@pytest.mark.django_db
def test_incremental_refresh_stores_what_a_full_recompute_stores(
    django_capture_on_commit_callbacks, settings
):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 60
    domain = DomainFactory(slug="incremental")
    annotators = qualified_annotators(domain, 3, prefix="inc")
    reviewers = [UserFactory(role=Role.ANNOTATOR, username=f"inc-rev{i}") for i in range(3)]
    author = UserFactory(role=Role.ANNOTATOR, username="inc-author")
    # One record first, so the three first labels land on it whatever the queues' shuffled
    # order; the others after, so the undone label is on a record still being labeled.
    AnswerRecordFactory(question__domain=domain)
    with django_capture_on_commit_callbacks(execute=False):
        for i, annotator in enumerate(annotators):  # the first record, three labels
            claim_and_label(annotator, **(BAD if i == 2 else {}))
        first = write_triple(author)
        for reviewer in reviewers[:2]:
            review(reviewer, first)
    recompute_agreement_snapshots(project=default_project())
    assert not AgreementDirtyScope.objects.exists()
    before = set(AgreementSnapshot.objects.values_list("pk", flat=True))
    for _ in range(3):
        AnswerRecordFactory(question__domain=domain)

    with django_capture_on_commit_callbacks(execute=False):
        claim_and_label(annotators[0], **BAD)
        undo_last_label(annotator=annotators[0], project=default_project())
        for annotator in annotators:
            claim_and_label(annotator)
        review(reviewers[2], write_triple(author, question="Which key length protects backups?"))
    assert AgreementDirtyScope.objects.filter(kind="rating").count() == 6

    recompute_agreement_snapshots(project=default_project(), full=False)
    assert not AgreementDirtyScope.objects.exists()
    incremental = stored_figures()
    kept = AgreementSnapshot.objects.filter(pk__in=before).count()
    assert 0 < kept < AgreementSnapshot.objects.count()  # some figures were not recomputed

    AgreementSnapshot.objects.all().delete()
    recompute_agreement_snapshots(project=default_project())
    assert stored_figures() == incremental


def per_axis_rows(frame: pd.DataFrame) -> dict:
    out: dict = {}
    for row in frame.astype(str).itertuples(index=False, name=None):
        out.setdefault((row[0], row[3]), []).append(row)
    return out


@pytest.mark.postgres
@pytest.mark.django_db
def test_columnar_reads_give_the_adapters_rows_in_their_order(
    postgres, django_capture_on_commit_callbacks
):
    domain = DomainFactory(slug="columnar")
    annotators = qualified_annotators(domain, 3, prefix="col")
    for _ in range(2):
        AnswerRecordFactory(question__domain=domain)
    author = UserFactory(role=Role.ANNOTATOR, username="col-author")
    with django_capture_on_commit_callbacks(execute=False):
        for i, annotator in enumerate(annotators * 2):
            claim_and_label(
                annotator,
                **{
                    **(BAD if i % 3 == 1 else {}),
                    "severe_safety": i == 4,
                    "rationale": "unsafe" if i == 4 else "",
                },
            )
        triple = write_triple(author)
        for i in range(2):
            review(
                UserFactory(role=Role.ANNOTATOR, username=f"col-rev{i}"),
                triple,
                "flag",
                flags=["question_unrealistic"],
            )
    fast = pd.concat(
        [
            triple_review_frame(project=default_project()),
            answer_label_frame(project=default_project()),
        ],
        ignore_index=True,
    )
    slow = ratings_frame(
        chain(
            triple_review_ratings(project=default_project()),
            answer_label_ratings(project=default_project()),
        )
    )
    assert len(fast) == len(slow) == 6 * 3 + 2
    assert per_axis_rows(fast) == per_axis_rows(slow)
    collected = collect_rows(project=default_project())[
        0
    ]  # both protocols, text columns kept as categoricals
    assert per_axis_rows(collected) == per_axis_rows(slow)
    text = ("protocol", "item", "axis", "value", "tier", "task_type", "domain", "week")
    assert all(isinstance(collected[c].dtype, pd.CategoricalDtype) for c in text)


def test_one_and_two_processes_compute_the_same_figures():
    rows = random_rows(4)
    selection = {
        "answer_label": Selection(
            scopes=frozenset({((), ()), (("tier",), ("tier_b",))}),
            pair_scopes=frozenset({((), ()), (("tier",), ("tier_b",))}),
            annotators=frozenset({2, 5}),
        )
    }
    for only in (None, selection):
        alone = compute_figures(rows, SPOT, n_resamples=90, only=only, processes=1)
        shared = compute_figures(rows, SPOT, n_resamples=90, only=only, processes=2)
        assert len(alone) > 20
        assert shared == alone  # same figures, same order, bit for bit


def _fails_in_a_child(parent: int, child_ran: str):
    if os.getpid() != parent:
        Path(child_ran).touch()
        raise ValueError("no such scale")
    wait_until(Path(child_ran).exists, timeout=60, what="a child to take a job")
    return "ok"


def _lost_in_a_child(parent: int, child_ran: str):
    if os.getpid() != parent:
        Path(child_ran).touch()
        os._exit(3)
    wait_until(Path(child_ran).exists, timeout=60, what="a child to take a job")
    return "ok"


@pytest.mark.parametrize(
    ("job", "message"),
    [(_fails_in_a_child, "ValueError: no such scale"), (_lost_in_a_child, "was lost")],
)
def test_a_process_that_fails_or_is_lost_fails_the_computation(job, message, tmp_path):
    child_ran = tmp_path / "child-ran"
    child_ran.touch()
    jobs = [partial(job, os.getpid(), str(child_ran)) for _ in range(400)]
    assert _run_jobs(jobs, 1) == ["ok"] * 400
    child_ran.unlink()
    with pytest.raises(AgreementWorkerError, match=message):
        _run_jobs(jobs, 2)


def test_the_processes_start_safely_while_this_process_runs_other_threads():
    """The recompute task runs beside its heartbeat thread: the children are not forked from
    this process (no fork-with-threads warning), and they do take jobs."""
    stop = threading.Event()
    beside = threading.Thread(target=stop.wait, daemon=True)
    beside.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pids = _run_jobs([os.getpid] * 400, 2)
    finally:
        stop.set()
        beside.join()
    assert not [w for w in caught if "fork" in str(w.message)]
    assert os.getpid() in pids and set(pids) - {os.getpid()}


def _pids_in_a_pool_process() -> tuple[int, list[int]]:
    return os.getpid(), _run_jobs([os.getpid] * 200, 2)


def test_a_celery_prefork_pool_process_starts_the_processes_too():
    """Celery's prefork pool processes (billiard's) are daemonic, carry billiard's
    authentication key and may be forked after their parent started a server: the recompute
    task starts its processes there all the same."""
    assert len(set(_run_jobs([os.getpid] * 200, 2))) == 2  # this process's server runs
    with billiard.Pool(1) as pool:
        parent, pids = pool.apply(_pids_in_a_pool_process)
    assert parent in pids and set(pids) - {parent}


def _random_marks(rows: pd.DataFrame, seed: int, n: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    picked = rows.iloc[rng.choice(len(rows), size=n, replace=False)]
    return [
        {
            "kind": AgreementDirtyScope.RATING,
            "tier": r.tier,
            "task_type": r.task_type,
            "domain": r.domain,
            "week": r.week,
            "annotator_id": r.annotator,
        }
        for r in picked.itertuples()
    ]


def _touched(figure: Figure, selection: Selection) -> bool:
    """Whether a full run's figure is one the selection names (scopes by their dims, so an
    empty scope value is a scope of its own)."""
    if figure.axis == "annotator" or figure.metric in PER_PROTOCOL_METRICS:
        return True
    key = (tuple(figure.scope), tuple(figure.scope.values()))
    if figure.metric == "cohen_kappa":
        pair = {int(a) for a in figure.subject.split("|")}
        return key in selection.pair_scopes and bool(pair & selection.annotators)
    return key in selection.scopes


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_the_scopes_one_or_two_labels_touch_equal_a_full_recompute_of_those_scopes(seed):
    rows = random_rows(seed)
    full = compute_figures(rows, SPOT, n_resamples=70)
    for n_marks in (1, 2):
        marks = _random_marks(rows[rows["protocol"] == "answer_label"], seed, n_marks)
        selection = _selection(marks)
        part = compute_figures(rows, SPOT, n_resamples=70, only={"answer_label": selection})
        expected = [f for f in full if f.protocol == "answer_label" and _touched(f, selection)]
        assert len(expected) > 10
        assert part == expected  # exactly the full run's figures for those scopes, in its order


def test_a_refresh_over_many_scopes_groups_by_sorting_and_gives_the_full_runs_figures():
    """Many labels' marks (more groups of one scope kind than are picked out by masks) take
    the full recompute's sorted grouping: never more work than it, the same figures."""
    rows = random_rows(8)
    full = compute_figures(rows, SPOT, n_resamples=50)
    marks = _random_marks(rows[rows["protocol"] == "answer_label"], 8, 40)
    selection = _selection(marks)
    by_dims: dict = {}
    for dims, values in selection.scopes:
        by_dims.setdefault(dims, set()).add(values)
    assert max(len(v) for v in by_dims.values()) > MASKED_GROUPS_MAX
    part = compute_figures(rows, SPOT, n_resamples=50, only={"answer_label": selection})
    assert part == [f for f in full if f.protocol == "answer_label" and _touched(f, selection)]


def test_categorical_items_and_values_give_the_same_figures_as_text():
    """The database read hands over items and values as categoricals."""
    rows = random_rows(8)
    coded = rows.assign(
        item=rows["item"].astype("category"), value=rows["value"].astype("category")
    )
    assert compute_figures(coded, SPOT, n_resamples=50) == compute_figures(
        rows, SPOT, n_resamples=50
    )


def _old_protocol_versions(ratings, spot_checks, facts) -> dict[str, str]:
    """The data version as it was hashed before (every column as text, row by row)."""
    names = set(ratings["protocol"]) | set(spot_checks["protocol"]) | set(facts["protocol"])
    out = {}
    for protocol in sorted(names):
        digest = hashlib.sha256()
        for frame, columns in (
            (ratings, RATING_COLUMNS),
            (spot_checks, SPOT_CHECK_COLUMNS),
            (facts, FACT_COLUMNS),
        ):
            rows = frame[frame["protocol"] == protocol][columns].astype(str)
            hashed = pd.util.hash_pandas_object(rows, index=False).to_numpy()
            digest.update(np.sort(hashed).tobytes())
            digest.update(b"|")
        out[protocol] = digest.hexdigest()
    return out


def test_the_data_version_is_hashed_as_before_from_text_or_categorical_columns():
    rows = random_rows(9)
    facts = facts_frame(
        [("answer_label", "volume", 3, 12.0, 12), ("triple_review", "x", 1, 0.5, 2)]
    )
    coded = rows.assign(
        **{c: rows[c].astype("category") for c in ("protocol", "item", "axis", "value", "week")}
    )
    before = _old_protocol_versions(rows, SPOT, facts)
    assert _protocol_versions(rows, SPOT, facts) == before
    assert _protocol_versions(coded, SPOT, facts) == before
    changed = rows.copy()
    changed.loc[5, "value"] = (
        "unacceptable" if rows.loc[5, "value"] != "unacceptable" else "acceptable"
    )
    assert _protocol_versions(changed, SPOT, facts) != before


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(pd.Categorical(["b", "a", "c", "a"], categories=["c", "b", "a", "z"])),
        pd.Series(pd.Categorical(["2026-W41", "2026-W40", "", "2026-W41"])),
        pd.Series(pd.Categorical(["a", None])),
        pd.Series([5, 3, 3, 9, 0]),
        pd.Series([3, -1, 2]),
        pd.Series(["x", "a", "x"]),
    ],
)
def test_coding_by_counting_gives_what_pandas_sorted_factorize_gives(column):
    codes, uniques = pd.factorize(column, sort=True)
    fast_codes, fast_uniques = _factorize_sorted(column)
    assert fast_codes.tolist() == codes.tolist()
    assert fast_uniques.tolist() == list(uniques)
    assert [type(u) for u in fast_uniques] == [type(u) for u in np.asarray(uniques, dtype=object)]


def test_no_fork_while_this_process_runs_other_threads(monkeypatch):
    """The embedded mode computes figures inside the web server's threads, the recompute task
    beside its heartbeat thread; a fork there could leave the child waiting on a lock another
    thread held, so the processes come from the forkserver, never from a fork of this one."""
    forks = []

    def refuse_fork():
        forks.append(os.getpid())
        raise AssertionError("forked while another thread was running")

    monkeypatch.setattr(os, "fork", refuse_fork)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        figures = compute_figures(random_rows(4), SPOT, n_resamples=90)
    finally:
        stop.set()
        other.join()
    assert not forks
    assert figures == compute_figures(random_rows(4), SPOT, n_resamples=90, processes=1)
