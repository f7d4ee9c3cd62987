"""Agreement figures for both protocols (DESIGN.md §8, seed 003), adapted for `scoring.agreement`.

Input is long-format rating rows — one row per (protocol, item, annotator, axis) with the scope
columns tier, task_type, domain and ISO week — and spot-check rows (did the second look agree?).
Each protocol contributes rows through a source function listed in ``RATING_SOURCES`` /
``SPOT_CHECK_SOURCES``. The figures:

* Krippendorff's α per axis (nominal or ordinal per the axis' scale; missing ratings allowed) and
  Fleiss' κ over the items that carry exactly three ratings, for every scope in ``SCOPES``;
* Cohen's κ per annotator pair (linear weights on ordinal axes), overall and per tier;
* the weekly TRIAGE spot-check disagreement rate;

each with a bootstrap 95 % CI (``AGREEMENT_BOOTSTRAP_RESAMPLES`` resamples of the scope's items,
seed 8821). Results are stored as :class:`~goldset.models.AgreementSnapshot` rows keyed on the
scope and stamped with a data version (a hash of the input rows), so a recompute over unchanged
data is a no-op and dashboards never compute.

Everything is per project: a project's figures are computed from its own reviews and labels
only, with its own settings, stored as its snapshots, from its own dirty-scope marks; recompute
requests (outbox messages) carry the project and coalesce per project.
"""

import datetime as dt
import hashlib
import multiprocessing
import multiprocessing.forkserver
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import chain

import django
import numpy as np
import pandas as pd
from django.db import connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from pandas.api.types import union_categoricals

from goldset.conf import tunable
from goldset.models import (
    AgreementDirtyScope,
    AgreementSnapshot,
    Domain,
    OutboxMessage,
    Project,
    Tier,
    WebhookEvent,
)
from goldset.models.projects import default_project_id
from goldset.rules.axes import AXES
from goldset.rules.calendar import iso_week
from goldset.rules.jobs import AGREEMENT_DEBOUNCE_KEY, AGREEMENT_OUTBOX_KIND
from goldset.selectors.agreement import list_agreement_alerts
from goldset.services import outbox, webhooks
from goldset.services.agreement_sources import FRAME_SOURCES
from goldset.services.time_on_item import refresh_time_on_item_figures
from scoring.agreement import (
    cohen_kappa_tables,
    fleiss_kappa_counts,
    krippendorff_alpha_counts,
    percent_agreement_counts,
)
from workbench.dispatch import tasks_run_inline

RATING_COLUMNS = [
    "protocol",
    "item",
    "annotator",
    "axis",
    "value",
    "tier",
    "task_type",
    "domain",
    "week",
]
SPOT_CHECK_COLUMNS = ["protocol", "item", "week", "agree"]
FACT_COLUMNS = ["protocol", "metric", "annotator", "value", "n_items"]
# Scopes every axis is cut by (empty tuple = all data). Trend charts read the week scopes.
SCOPES: tuple[tuple[str, ...], ...] = (
    (),
    ("tier",),
    ("tier", "task_type"),
    ("tier", "domain"),
    ("tier", "week"),
    ("tier", "task_type", "week"),
)
PAIR_SCOPES: tuple[tuple[str, ...], ...] = ((), ("tier",))


# The Celery task that runs recompute_agreement_snapshots (goldset.tasks).
RECOMPUTE_TASK = "goldset.recompute_agreement"

# Protocol adapters (goldset.services.agreement_sources): callables returning iterables of tuples
# in RATING_COLUMNS / SPOT_CHECK_COLUMNS / FACT_COLUMNS order.
# (protocol, source) pairs.
RATING_SOURCES = [
    ("triple_review", "goldset.services.agreement_sources.triple_review_ratings"),
    ("answer_label", "goldset.services.agreement_sources.answer_label_ratings"),
]
SPOT_CHECK_SOURCES = [
    ("triple_review", "goldset.services.agreement_sources.triple_spot_checks"),
    ("answer_label", "goldset.services.agreement_sources.answer_spot_checks"),
]
FACT_SOURCES = ["goldset.services.agreement_sources.annotator_facts"]


def bootstrap_resamples(*, project=None) -> int:
    return tunable("AGREEMENT_BOOTSTRAP_RESAMPLES", project=project)


def bootstrap_seed(*, project=None) -> int:
    return tunable("AGREEMENT_BOOTSTRAP_SEED", project=project)


# ---------------------------------------------------------------- computing (no database)


def ratings_frame(rows) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=RATING_COLUMNS)
    for column in ("tier", "task_type", "domain", "week"):
        frame[column] = frame[column].fillna("").astype(str)
    return frame


def spot_check_frame(rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=SPOT_CHECK_COLUMNS)


def facts_frame(rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=FACT_COLUMNS)


@dataclass
class Figure:
    protocol: str
    axis: str
    metric: str
    value: float | None
    reason: str
    n_items: int
    n_annotators: int
    ci: tuple[float, float] | None = None
    scope: dict = field(default_factory=dict)
    subject: str = ""

    def as_snapshot(self, version: str, *, project) -> AgreementSnapshot:
        low, high = self.ci if self.ci else (None, None)
        return AgreementSnapshot(
            project=project,
            protocol=self.protocol,
            axis=self.axis,
            metric=self.metric,
            subject=self.subject,
            tier=self.scope.get("tier", ""),
            task_type=self.scope.get("task_type", ""),
            domain=self.scope.get("domain", ""),
            week=self.scope.get("week", ""),
            value=self.value,
            reason=(self.reason or "")[:200],
            ci_low=low,
            ci_high=high,
            n_items=self.n_items,
            n_annotators=self.n_annotators,
            data_version=version,
        )


def _count_table(sub: pd.DataFrame, n_categories: int) -> np.ndarray:
    items = pd.factorize(sub["item"])[0]
    flat = np.bincount(
        items * n_categories + sub["code"].to_numpy(), minlength=(items.max() + 1) * n_categories
    )
    return flat.reshape(-1, n_categories)


@dataclass(frozen=True)
class Selection:
    """Which figures of one protocol to compute (an incremental recompute): ``scopes`` holds
    ``(dims, values)`` keys of the α/Fleiss scopes (``((), ())`` is all data), ``pair_scopes``
    ``(dims, values)`` keys of the pair scopes and ``annotators`` whose pairs are wanted there.
    ``None`` means every one."""

    scopes: frozenset | None = None
    pair_scopes: frozenset | None = None
    annotators: frozenset | None = None


EVERYTHING = Selection()


def _factorize_sorted(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(column, sort=True)``; categoricals and small non-negative integers are
    coded by counting (no hashing of millions of values)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        raw, values = column.cat.codes.to_numpy(), column.cat.categories
    elif column.dtype.kind in "iu" and len(column) and 0 <= column.min() < 2**26 > column.max():
        raw, values = column.to_numpy(), None
    else:
        raw = None
    if raw is None or (raw < 0).any():
        codes, uniques = pd.factorize(column, sort=True)
        return codes.astype(np.int64), np.asarray(uniques, dtype=object)
    # The values that occur, in code order: a categorical's sort order is its categories'.
    used = np.flatnonzero(np.bincount(raw))
    recode = np.zeros(used[-1] + 1, dtype=np.int64)
    recode[used] = np.arange(len(used))
    uniques = np.empty(len(used), dtype=object)
    uniques[:] = used.tolist() if values is None else list(values[used])
    return recode[raw], uniques


def _runs(keys: np.ndarray):
    """(key, start, stop) of each run of equal values in an already sorted array."""
    if not len(keys):
        return
    edges = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate([[0], edges])
    stops = np.concatenate([edges, [len(keys)]])
    yield from zip(keys[starts].tolist(), starts.tolist(), stops.tolist(), strict=True)


@dataclass
class _Encoded:
    """The rating rows as integer codes (scope columns and annotators coded in sorted order, so
    code order is the order pandas' sorted groupby gave; items in order of first appearance)."""

    item: np.ndarray
    annotator: np.ndarray
    annotators: np.ndarray
    scope: dict  # column -> (codes, uniques)

    @property
    def n_items(self) -> int:
        return int(self.item.max()) + 1 if len(self.item) else 0


def _encode(ratings: pd.DataFrame) -> _Encoded:
    scope = {c: _factorize_sorted(ratings[c]) for c in ("tier", "task_type", "domain", "week")}
    annotator, annotators = _factorize_sorted(ratings["annotator"])
    item = ratings["item"]
    if isinstance(item.dtype, pd.CategoricalDtype):
        # Any one-to-one coding of items will do: counts re-code the items of each scope in
        # order of first appearance, and pair tables and per-item sums do not depend on it.
        item_codes = item.cat.codes.to_numpy().astype(np.int64)
    else:
        item_codes = pd.factorize(item)[0].astype(np.int64)
    return _Encoded(item=item_codes, annotator=annotator, annotators=annotators, scope=scope)


def _scope_key(enc: _Encoded, rows: np.ndarray, dims: tuple[str, ...]) -> np.ndarray:
    key = np.zeros(len(rows), dtype=np.int64)
    for dim in dims:
        codes, uniques = enc.scope[dim]
        key = key * len(uniques) + codes[rows]
    return key


def _scope_values(enc: _Encoded, dims: tuple[str, ...], key: int) -> tuple[str, ...]:
    values = []
    for dim in reversed(dims):
        uniques = enc.scope[dim][1]
        key, code = divmod(key, len(uniques))
        values.append(uniques[code])
    return tuple(reversed(values))


def _key_of(enc: _Encoded, dims: tuple[str, ...], values: tuple) -> int | None:
    """The ``_scope_key`` of a scope's values; None when a value does not occur."""
    key = 0
    for dim, value in zip(dims, values, strict=True):
        uniques = enc.scope[dim][1]
        found = np.flatnonzero(uniques == value)
        if not len(found):
            return None
        key = key * len(uniques) + int(found[0])
    return key


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` (a stable order is unique), as a radix sort when the
    keys fit in 16 bits."""
    if len(keys) and 0 <= keys.min() and keys.max() < 2**16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


# Above this many wanted groups of one scope kind a refresh groups by sorting, as the full
# recompute does, so it is never more work than the full recompute (issue 26).
MASKED_GROUPS_MAX = 6


def _scope_groups(enc: _Encoded, rows: np.ndarray, dims: tuple[str, ...], wanted=None):
    """(values, rows) per group of ``rows`` by ``dims``, groups in sorted order, rows in their
    original order (what ``groupby(dims, sort=True)`` yields); only groups in ``wanted``."""
    if not dims:
        if wanted is None or ((), ()) in wanted:
            yield (), rows
        return
    if wanted is not None:
        keys = sorted(
            k for d, values in wanted if d == dims and (k := _key_of(enc, dims, values)) is not None
        )
        if not keys:
            return
        if len(keys) <= MASKED_GROUPS_MAX:
            # A few groups out of millions of rows: pick each out with a mask, no sort.
            key = _scope_key(enc, rows, dims)
            for k in keys:
                group = rows[key == k]
                if len(group):
                    yield _scope_values(enc, dims, k), group
            return
        # Many groups (labels over many weeks or domains): one pass over every row per group
        # would cost more than the full recompute's single sort, so sort once as it does.
    key = _scope_key(enc, rows, dims)
    order = _stable_order(key)
    ordered = rows[order]
    for k, start, stop in _runs(key[order]):
        values = _scope_values(enc, dims, k)
        if wanted is None or (dims, values) in wanted:
            yield values, ordered[start:stop]


def _counts(items: np.ndarray, codes: np.ndarray, n_categories: int) -> np.ndarray:
    """The items × categories count table of rows given by their item and category codes,
    items in order of first appearance (``_count_table``)."""
    items = pd.factorize(items)[0]
    flat = np.bincount(items * n_categories + codes, minlength=(items.max() + 1) * n_categories)
    return flat.reshape(-1, n_categories)


def compute_figures(
    ratings: pd.DataFrame,
    spot_checks: pd.DataFrame,
    facts: pd.DataFrame | None = None,
    *,
    n_resamples: int,
    seed: int | None = None,
    only: dict[str, Selection] | None = None,
    processes: int | None = None,
) -> list[Figure]:
    """Every figure for the given rows (pure: no database); with ``only`` just the figures of
    those protocols that the selection names (and their per-annotator and spot-check figures).

    Each figure is computed from exactly the rows and with exactly the calls of the per-scope
    pandas implementation it replaced (a test compares the two), so a figure does not depend on
    which other figures are computed with it, nor on which process computes it. The independent
    figures run on ``processes`` processes (``AGREEMENT_PROCESSES``; see :func:`_run_jobs`)."""

    seed = bootstrap_seed() if seed is None else seed

    def wanted(protocol) -> Selection | None:
        return EVERYTHING if only is None else only.get(protocol)

    figures: list[Figure] = []
    if facts is not None:
        figures += [
            Figure(p, "annotator", m, float(v), "", int(n), 1, None, {}, subject=str(a))
            for p, m, a, v, n in facts.itertuples(index=False)
            if wanted(p) is not None
        ]
    jobs = []
    if len(ratings):
        enc = _encode(ratings)
        protocols, protocol_names = _factorize_sorted(ratings["protocol"])
        axes, axis_names = _factorize_sorted(ratings["axis"])
        split = protocols * len(axis_names) + axes
        annotator_ids = ratings["annotator"].to_numpy()
        for key in np.flatnonzero(np.bincount(split)).tolist():
            protocol, axis = (
                protocol_names[key // len(axis_names)],
                axis_names[key % len(axis_names)],
            )
            selection = wanted(protocol)
            if selection is None:
                continue
            rows = np.flatnonzero(split == key)  # in their original order
            scale = AXES[axis]
            codes = np.zeros(len(ratings), dtype=np.int64)
            codes[rows] = _scale_codes(protocol, axis, ratings["value"], rows)
            jobs += _scope_jobs(
                enc, protocol, axis, scale, rows, codes, selection, n_resamples, seed
            )
            jobs += _pair_jobs(
                enc, protocol, axis, scale, rows, codes, selection, n_resamples, seed
            )
            if axis == "severe_safety":
                slim = pd.DataFrame(
                    {
                        "item": enc.item[rows],
                        "annotator": annotator_ids[rows],
                        "value": np.asarray(scale.categories, dtype=object)[codes[rows]],
                    }
                )
                jobs.append(partial(_severe_rate_gaps, protocol, slim))
    results = _run_jobs(jobs, processes or _default_processes())
    figures += [f for batch in results for f in batch]
    if only is not None:
        spot_checks = spot_checks[spot_checks["protocol"].isin(list(only))]
    figures += _spot_check_figures(spot_checks)
    return figures


class AgreementWorkerError(RuntimeError):
    """A process computing agreement figures failed or was lost."""


def _default_processes() -> int:
    return tunable("AGREEMENT_PROCESSES")


def _run_jobs(jobs: list, processes: int) -> list:
    """Each job's result, in job order, computed by ``processes`` processes: this one and
    ``processes - 1`` children, each taking every ``processes``-th chunk of jobs.

    Processes, not threads: ``Generator.multinomial`` holds the GIL while it draws (two threads
    drawing took as long as one after the other), so a thread pool never overlapped the
    bootstrap. The children are started by the ``forkserver`` method: forked from a server
    process started for them (single-threaded, Django set up, no database connection, see
    :mod:`goldset.services.agreement_children`), never from this process, which may run other
    threads (the recompute task's heartbeat, a web server's threads) — forking a threaded
    process can leave the child waiting forever on a lock another thread held. So they may run
    whatever this process runs. Jobs are picklable (partials of module functions); each child's
    share is sent in one pickle, so data its jobs share (the encoded ratings) is sent once. A
    job's result depends only on its own inputs and seed, so which process ran it changes
    nothing; a child that fails or is lost fails the call."""
    processes = min(processes, len(jobs))
    if processes <= 1:
        return [job() for job in jobs]
    chunk = max(1, len(jobs) // (processes * 64))
    # Small chunks dealt round-robin: neighbouring jobs cost about the same, so each process
    # gets an even share.
    shares = [
        [
            (i, jobs[i])
            for start in range(worker * chunk, len(jobs), processes * chunk)
            for i in range(start, min(start + chunk, len(jobs)))
        ]
        for worker in range(processes)
    ]
    results: list = [None] * len(jobs)
    context = _children_context()
    pool = ProcessPoolExecutor(
        max_workers=processes - 1, mp_context=context, initializer=django.setup
    )
    try:
        with _allowed_to_start_children():
            children = [pool.submit(_run_share, share) for share in shares[1:]]
        for i, result in _run_share(shares[0]):
            results[i] = result
        for child in children:
            try:
                payload = child.result()
            except BrokenProcessPool as exc:
                raise AgreementWorkerError("an agreement process was lost") from exc
            except Exception as exc:
                raise AgreementWorkerError(
                    f"an agreement process failed: {type(exc).__name__}: {exc}"
                ) from exc
            for i, result in payload:
                results[i] = result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def _children_context() -> multiprocessing.context.BaseContext:
    """The ``forkserver`` context the agreement processes come from, its server preloading
    :mod:`goldset.services.agreement_children`."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["goldset.services.agreement_children"])
    return context


def warm_up() -> None:
    """Do now what a process's first recompute would otherwise do on its clock: start the
    forkserver (the server then imports Django, NumPy, pandas and statsmodels on its own while
    this process waits for work) and import statsmodels' inter-rater module here, for the share
    this process computes. Called in a background thread of each Celery pool process that takes
    the default queue (``goldset.tasks.warm_agreement_at_start``): at 100k items the first
    recompute of a pool process took 8.7 s against 4.2 s for the next ones (issue 26)."""
    if _default_processes() > 1:
        _children_context()
        multiprocessing.forkserver.ensure_running()
    from statsmodels.stats import inter_rater  # noqa: F401 - loaded for the first κ


@contextmanager
def _allowed_to_start_children() -> Iterator[None]:
    """Lets a Celery prefork pool process start the children. Those processes are daemonic, and
    multiprocessing refuses to start children from a daemonic process, lest they outlive it;
    ours do not (the call waits for them, and one whose parent is gone ends at its next read of
    the job queue). And their authentication key is billiard's, which refuses to be pickled for
    the forkserver: the children get the same key as the standard library's type."""
    current = multiprocessing.current_process()
    daemon, authkey = current.daemon, current.authkey
    current.daemon = False
    current._config["authkey"] = multiprocessing.process.AuthenticationString(authkey)
    try:
        yield
    finally:
        current.daemon = daemon
        current._config["authkey"] = authkey  # as it was, whatever its type


def _forget_the_parents_forkserver() -> None:
    """A process forked from one that had started the forkserver (Celery forks its pool
    processes from its main process) inherits the server's bookkeeping but is not its parent:
    it starts a server of its own when it needs one."""
    server = multiprocessing.forkserver._forkserver
    if server._forkserver_pid is not None:
        os.close(server._forkserver_alive_fd)
        server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None


os.register_at_fork(after_in_child=_forget_the_parents_forkserver)


def _run_share(share: list) -> list:
    """One process's share of the jobs: ``[(index, result)]``."""
    return [(i, job()) for i, job in share]


def _coded(protocol: str, axis: str, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with ``code``, each value's position on the axis' scale (ValueError when a value
    is not on it)."""
    scale = AXES[axis]
    on_scale = rows["value"].isin(scale.categories)
    if not on_scale.all():
        unknown = sorted(set(rows["value"][~on_scale].astype(str)))
        raise ValueError(
            f"{protocol}/{axis}: values {unknown} are not on the scale {scale.categories}"
        )
    codes = pd.Categorical(rows["value"], categories=scale.categories).codes
    return rows.assign(code=codes.astype(np.int64))


def _scale_codes(protocol: str, axis: str, values: pd.Series, rows: np.ndarray) -> np.ndarray:
    """``_coded``'s codes of ``values[rows]``; a categorical column is mapped through its
    categories (a few strings) instead of value by value."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        positions = pd.Index(AXES[axis].categories).get_indexer(values.cat.categories)
        mapped = np.append(positions, -1)[values.cat.codes.to_numpy()[rows]]
        if (mapped >= 0).all():
            return mapped.astype(np.int64)
    return _coded(protocol, axis, values.iloc[rows].to_frame("value"))["code"].to_numpy()


def _result(result) -> dict:
    return {
        "value": result.value,
        "ci": list(result.ci) if result.ci else None,
        "reason": result.reason or "",
        "n_items": result.n_items,
    }


def summary_figures(
    ratings: pd.DataFrame, *, n_resamples: int | None = None, seed: int | None = None
) -> dict:
    """Overall (unscoped) agreement of these rating rows per protocol and axis — Krippendorff's
    α at the axis' level of measurement and percent agreement (share of agreeing rating pairs
    per item), each with a percentile bootstrap 95 % CI resampling items (``seed``, else ``AGREEMENT_BOOTSTRAP_SEED``) — as a
    JSON-ready dict ``{protocol: {axis: {...}}}``. Pure; ``scoring.agreement`` computes."""
    n = n_resamples or bootstrap_resamples()
    seed = bootstrap_seed() if seed is None else seed
    out: dict = {}
    for (protocol, axis), rows in ratings.groupby(["protocol", "axis"], sort=True):
        scale = AXES[axis]
        rows = _coded(protocol, axis, rows)
        counts = _count_table(rows, len(scale.categories))
        n_annotators = int(rows["annotator"].nunique())
        options = {"ci": True, "n_resamples": n, "seed": seed, "n_annotators": n_annotators}
        alpha = krippendorff_alpha_counts(
            counts, categories=scale.categories, level=scale.level, **options
        )
        percent = percent_agreement_counts(counts, **options)
        values = counts.sum(axis=0)
        out.setdefault(protocol, {})[axis] = {
            "ratings": len(rows),
            "items": len(counts),
            "annotators": n_annotators,
            "values": {c: int(v) for c, v in zip(scale.categories, values, strict=True) if v},
            "krippendorff_alpha": {"level": scale.level, **_result(alpha)},
            "percent_agreement": _result(percent),
        }
    return out


def _scope_jobs(enc, protocol, axis, scale, rows, codes, selection, n_resamples, seed):
    groups = [
        (dict(zip(dims, values, strict=True)), group)
        for dims in SCOPES
        for values, group in _scope_groups(enc, rows, dims, selection.scopes)
    ]
    # A scoped refresh asks for a few scopes: each job then carries its own rows' three columns,
    # and a child process is sent those instead of the encoding of every rating (seven columns),
    # when they are fewer values.
    own_rows = 3 * sum(len(group) for _, group in groups) <= 7 * len(enc.item)
    return [
        partial(
            _scope_job,
            (enc.item[group], enc.annotator[group], codes[group]) if own_rows else None,
            None if own_rows else (enc, group, codes),
            protocol,
            axis,
            scale,
            scope,
            n_resamples,
            seed,
        )
        for scope, group in groups
    ]


def _scope_job(columns, encoded, protocol, axis, scale, scope, n_resamples, seed):
    """The figures of one scope, from its rows' ``columns`` (items, annotators, codes) or from
    ``encoded`` (the encoding, the scope's rows and the codes), the same values either way."""
    if columns is None:
        enc, group, codes = encoded
        columns = (enc.item[group], enc.annotator[group], codes[group])
    items, annotators, codes = columns
    n_categories = len(scale.categories)
    return _scope_figures(
        protocol,
        axis,
        scale,
        _counts(items, codes, n_categories),
        int(np.count_nonzero(np.bincount(annotators))),
        scope,
        n_resamples,
        seed,
    )


def _scope_figures(protocol, axis, scale, counts, n_annotators, scope, n_resamples, seed):
    alpha = krippendorff_alpha_counts(
        counts,
        categories=scale.categories,
        level=scale.level,
        ci=True,
        n_resamples=n_resamples,
        seed=seed,
        n_annotators=n_annotators,
    )
    out = [
        Figure(
            protocol,
            axis,
            "krippendorff_alpha",
            alpha.value,
            alpha.reason or "",
            alpha.n_items,
            n_annotators,
            alpha.ci,
            scope,
        )
    ]
    three = counts[counts.sum(axis=1) == 3]
    if len(three):
        fleiss = fleiss_kappa_counts(
            three, ci=True, n_resamples=n_resamples, seed=seed, n_annotators=n_annotators
        )
        out.append(
            Figure(
                protocol,
                axis,
                "fleiss_kappa",
                fleiss.value,
                fleiss.reason or "",
                fleiss.n_items,
                n_annotators,
                fleiss.ci,
                scope,
            )
        )
    return out


def _pair_tables(enc: _Encoded, rows: np.ndarray, codes: np.ndarray, v: int):
    """Cohen tables of every annotator pair over ``rows``: (pair keys a·N + b with a < b in
    sorted annotator order, (pairs, v, v) counts) — one table per pair, counted at once."""
    n = len(enc.annotators)
    order = _stable_order(enc.item[rows])
    item, who, code = enc.item[rows][order], enc.annotator[rows][order], codes[rows][order]
    firsts, seconds, cells_a, cells_b = [], [], [], []
    for k in range(1, len(item)):
        same = item[:-k] == item[k:]
        if not same.any():
            break
        a, b = who[:-k][same], who[k:][same]
        ca, cb = code[:-k][same], code[k:][same]
        swap = a > b
        keep = a != b
        firsts.append(np.where(swap, b, a)[keep])
        seconds.append(np.where(swap, a, b)[keep])
        cells_a.append(np.where(swap, cb, ca)[keep])
        cells_b.append(np.where(swap, ca, cb)[keep])
    if not firsts:
        return np.zeros(0, dtype=np.int64), np.zeros((0, v, v), dtype=np.int64)
    keys = np.concatenate(firsts) * n + np.concatenate(seconds)
    # Keys are below n², a few hundred: count them instead of sorting them (np.unique).
    present = np.bincount(keys, minlength=n * n) > 0
    pair_keys = np.flatnonzero(present)
    pair_index = (np.cumsum(present) - 1)[keys]
    cells = pair_index * v * v + np.concatenate(cells_a) * v + np.concatenate(cells_b)
    tables = np.bincount(cells, minlength=len(pair_keys) * v * v).reshape(-1, v, v)
    return pair_keys, tables


def _rows_of_items_rated_by(enc: _Encoded, rows: np.ndarray, annotators: np.ndarray):
    """The rows (in their order) of the items any of ``annotators`` (codes) rated: all that the
    Cohen tables of their pairs count."""
    theirs = np.zeros(enc.n_items, dtype=bool)
    items = enc.item[rows]
    theirs[items[np.isin(enc.annotator[rows], annotators)]] = True
    return rows[theirs[items]]


def _pair_jobs(enc, protocol, axis, scale, rows, codes, selection, n_resamples, seed):
    """Cohen's κ for every annotator pair (or the pairs of ``selection.annotators``)."""
    jobs = []
    v = len(scale.categories)
    n = len(enc.annotators)
    chosen = None
    if selection.annotators is not None:
        chosen = {i for i, name in enumerate(enc.annotators) if name in selection.annotators}
    if chosen is not None:
        rows = _rows_of_items_rated_by(enc, rows, np.fromiter(chosen, dtype=np.int64))
    for dims in PAIR_SCOPES:
        for values, group in _scope_groups(enc, rows, dims, selection.pair_scopes):
            scope = dict(zip(dims, values, strict=True))
            pair_keys, tables = _pair_tables(enc, group, codes, v)
            wanted = [
                (i, f"{enc.annotators[key // n]}|{enc.annotators[key % n]}")
                for i, key in enumerate(pair_keys.tolist())
                if chosen is None or key // n in chosen or key % n in chosen
            ]
            for start in range(0, len(wanted), PAIRS_PER_JOB):
                batch = wanted[start : start + PAIRS_PER_JOB]
                jobs.append(
                    partial(
                        _pair_figures,
                        protocol,
                        axis,
                        scale,
                        tables,
                        batch,
                        scope,
                        n_resamples,
                        seed,
                    )
                )
    return jobs


# Cohen figures per job: their bootstrap κ are computed in one NumPy call, and jobs stay small
# enough to share out evenly between processes.
PAIRS_PER_JOB = 24


def _pair_figures(protocol, axis, scale, tables, batch, scope, n_resamples, seed):
    kappas = cohen_kappa_tables(
        tables[[i for i, _ in batch]],
        weights=scale.pair_weights,
        ci=True,
        n_resamples=n_resamples,
        seed=seed,
    )
    return [
        Figure(
            protocol,
            axis,
            "cohen_kappa",
            kappa.value,
            kappa.reason or "",
            kappa.n_items,
            2,
            kappa.ci,
            scope,
            subject=subject,
        )
        for (_, subject), kappa in zip(batch, kappas, strict=True)
    ]


def _severe_rate_gaps(protocol, rows) -> list[Figure]:
    """Each annotator's severe-label rate minus their co-annotators' rate on the same items."""
    marks = rows.assign(yes=(rows["value"] == "yes").astype(float))
    per_item = marks.groupby("item")["yes"].agg(["sum", "size"])
    marks = marks.join(per_item, on="item")
    marks = marks[marks["size"] >= 2]
    marks = marks.assign(co=(marks["sum"] - marks["yes"]) / (marks["size"] - 1))
    out = []
    for annotator, own in marks.groupby("annotator", sort=True):
        gap = float(own["yes"].mean() - own["co"].mean())
        out.append(
            Figure(
                protocol,
                "annotator",
                "severe_rate_gap",
                gap,
                "",
                len(own),
                1,
                None,
                {},
                subject=str(annotator),
            )
        )
    return out


def _spot_check_figures(spot_checks: pd.DataFrame) -> list[Figure]:
    out = []
    for (protocol, week), rows in spot_checks.groupby(["protocol", "week"], sort=True):
        n = len(rows)
        disagreements = int((~rows["agree"].astype(bool)).sum())
        out.append(
            Figure(
                protocol,
                "spot_check",
                "spot_check_disagreement",
                disagreements / n,
                "",
                n,
                0,
                None,
                {"tier": Tier.TRIAGE.value, "week": week},
                subject=str(disagreements),
            )
        )
    return out


# ---------------------------------------------------------------- storing


def collect_rows(protocols=None, *, project) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Rating, spot-check and fact rows of the project in every protocol (or in
    ``protocols``)."""

    def gather(sources):
        return chain.from_iterable(
            import_string(path)(project=project)
            for p, path in sources
            if protocols is None or p in protocols
        )

    facts = facts_frame(
        chain.from_iterable(import_string(path)(project=project) for path in FACT_SOURCES)
    )
    if protocols is not None:
        facts = facts[facts["protocol"].isin(list(protocols))].reset_index(drop=True)
    if connection.vendor == "postgresql":  # columnar COPY reads: millions of rows, no tuples
        frames = [
            FRAME_SOURCES[p](project=project)
            for p, _ in RATING_SOURCES
            if protocols is None or p in protocols
        ]
        frames = [f for f in frames if len(f)]
        ratings = _concat(frames) if frames else ratings_frame([])
    else:
        ratings = ratings_frame(gather(RATING_SOURCES))
    return ratings, spot_check_frame(gather(SPOT_CHECK_SOURCES)), facts


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames one after the other, categorical columns staying categorical (``pd.concat``
    turns categoricals with different categories into text, one string per row)."""
    if len(frames) == 1:
        return frames[0]
    return pd.DataFrame(
        {
            c: union_categoricals([f[c] for f in frames], sort_categories=True)
            if all(isinstance(f[c].dtype, pd.CategoricalDtype) for f in frames)
            else pd.concat([f[c] for f in frames], ignore_index=True)
            for c in frames[0].columns
        }
    )


def _protocol_versions(ratings, spot_checks, facts) -> dict[str, str]:
    """A data version per protocol: a hash of its rows, whatever their order."""
    facts = facts if facts is not None else facts_frame([])
    names = {p for f in (ratings, spot_checks, facts) for p in f["protocol"].unique()}
    out = {}
    for protocol in sorted(names):
        digest = hashlib.sha256()
        for frame, columns in (
            (ratings, RATING_COLUMNS),
            (spot_checks, SPOT_CHECK_COLUMNS),
            (facts, FACT_COLUMNS),
        ):
            mine = frame["protocol"] == protocol
            rows = frame if mine.all() else frame[mine]
            text = pd.DataFrame({c: _as_text(rows[c]) for c in columns})
            hashed = pd.util.hash_pandas_object(text, index=False).to_numpy()
            digest.update(np.sort(hashed).tobytes())
            digest.update(b"|")
        out[protocol] = digest.hexdigest()
    return out


def _as_text(column: pd.Series) -> pd.Series:
    """What ``column.astype(str)`` hashes as: a categorical or integer column becomes a
    categorical of its distinct values' text, which pandas hashes exactly as it hashes the text
    row by row (through the categories), without building a string per row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, uniques = column.cat.codes.to_numpy(), column.cat.categories
    elif column.dtype.kind in "iub":
        codes, uniques = pd.factorize(column)
    else:
        return column.astype(str)
    text = pd.Index(uniques).astype(str)
    if (codes < 0).any() or text.hasnans or not text.is_unique:
        return column.astype(str)
    return pd.Series(pd.Categorical.from_codes(codes, categories=text), index=column.index)


def data_version(
    ratings: pd.DataFrame, spot_checks: pd.DataFrame, facts: pd.DataFrame | None = None
) -> str:
    """One version for all rows (the per-protocol versions combined)."""
    versions = _protocol_versions(ratings, spot_checks, facts)
    return _combined(versions)


def _combined(versions: dict[str, str]) -> str:
    return hashlib.sha256(
        "|".join(f"{p}={v}" for p, v in sorted(versions.items())).encode()
    ).hexdigest()


def _lock_snapshots(project_id: int) -> None:
    """Two recomputes of a project store one after the other (each reads what to replace under
    the lock), so they never insert the same figure twice; other projects' recomputes do not
    wait. PostgreSQL only: SQLite writes one at a time."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s)", [_lock_key(SNAPSHOT_LOCK, project_id)]
            )


# pg_advisory_xact_lock key of the snapshot store ("agreement" in ASCII, as a number).
SNAPSHOT_LOCK = 0x61677265656D


def _lock_key(base: int, project_id: int) -> int:
    """A project's advisory lock key: ``base`` (even) plus four times the project id, so the
    snapshot (``SNAPSHOT_LOCK``) and recompute (``RECOMPUTE_LOCK``, odd) keys of every project
    differ."""
    return base + 4 * project_id


def _stored_versions(project) -> dict[str, str]:
    return dict(
        AgreementSnapshot.objects.filter(project=project)
        .order_by()
        .values_list("protocol", "data_version")
        .distinct()
    )


def _count(project) -> int:
    return AgreementSnapshot.objects.filter(project=project).count()


def store_agreement_snapshots(
    *,
    project,
    ratings: pd.DataFrame,
    spot_checks: pd.DataFrame,
    facts: pd.DataFrame | None = None,
    n_resamples: int | None = None,
) -> tuple[str, int]:
    """Replace the project's stored figures with those of these rows (the project's), protocol
    by protocol: a protocol whose data version is the one already stored is left as it is
    (unchanged data: a no-op). Returns (data version, number of the project's snapshot rows)."""
    versions = _protocol_versions(ratings, spot_checks, facts)
    stored = _stored_versions(project)
    redo = {p for p, v in versions.items() if stored.get(p) != v}
    gone = set(stored) - set(versions)
    if redo:
        figures = compute_figures(
            ratings,
            spot_checks,
            facts,
            n_resamples=n_resamples or bootstrap_resamples(project=project),
            seed=bootstrap_seed(project=project),
            only={p: EVERYTHING for p in redo},
        )
    else:
        figures = []
    if not (redo or gone):
        return _combined(versions), _count(project)
    watch_alerts = webhooks.wants(WebhookEvent.ALERT_RAISED, project=project)
    with transaction.atomic():
        _lock_snapshots(project.pk)
        before = _alerts_by_key(project) if watch_alerts else {}
        AgreementSnapshot.objects.filter(project=project, protocol__in=redo | gone).delete()
        AgreementSnapshot.objects.bulk_create(
            (f.as_snapshot(versions[f.protocol], project=project) for f in figures),
            batch_size=2000,
        )
        if watch_alerts:
            _emit_raised_alerts(before, project)
    return _combined(versions), _count(project)


def _alerts_by_key(project) -> dict:
    return {
        webhooks.alert_key(kind=a.kind, title=a.title, numbers=a.numbers): a
        for a in list_agreement_alerts(project=project)
    }


def _emit_raised_alerts(before: dict, project) -> None:
    """An ``alert.raised`` webhook event for each alert the new figures raise that the old
    ones did not (an alert still raised is not announced again)."""
    for key, alert in _alerts_by_key(project).items():
        if key not in before:
            webhooks.emit(
                WebhookEvent.ALERT_RAISED,
                webhooks.alert_data(
                    project=project,
                    kind=alert.kind,
                    title=alert.title,
                    key=key,
                    numbers=alert.numbers,
                ),
                project=project,
            )


def _selection(marks: list[dict]) -> Selection:
    """The figures a protocol's ``rating`` marks touch: each changed rating row's α/Fleiss
    scopes (all data, its tier, tier × task type, × domain, × week, × task type × week) and
    the rater's pairs overall and in the tier."""
    scopes, pair_scopes, annotators = set(), set(), set()
    for m in marks:
        if m["kind"] != AgreementDirtyScope.RATING:
            continue
        t, k, d, w = m["tier"], m["task_type"], m["domain"], m["week"]
        scopes |= {
            ((), ()),
            (("tier",), (t,)),
            (("tier", "task_type"), (t, k)),
            (("tier", "domain"), (t, d)),
            (("tier", "week"), (t, w)),
            (("tier", "task_type", "week"), (t, k, w)),
        }
        pair_scopes |= {((), ()), (("tier",), (t,))}
        if m["annotator_id"] is not None:
            annotators.add(m["annotator_id"])
    return Selection(frozenset(scopes), frozenset(pair_scopes), frozenset(annotators))


def _selected(row: dict, selection: Selection) -> bool:
    """Whether a stored snapshot row is one of the figures ``selection`` recomputes."""
    if row["axis"] == "annotator" or row["metric"] in PER_PROTOCOL_METRICS:
        return True
    values = {k: row[k] for k in ("tier", "task_type", "domain", "week")}
    if row["metric"] == "cohen_kappa":
        dims = ("tier",) if row["tier"] else ()
        if (dims, tuple(values[d] for d in dims)) not in selection.pair_scopes:
            return False
        first, _, second = row["subject"].partition("|")
        return bool({first, second} & {str(a) for a in selection.annotators})
    dims = tuple(d for d in ("tier", "task_type", "domain", "week") if values[d])
    return (dims, tuple(values[d] for d in dims)) in selection.scopes


# Figures recomputed whole whenever a protocol has any change (cheap, and each depends on
# many items: co-annotators' rates, weekly spot checks).
PER_PROTOCOL_METRICS = ("severe_rate_gap", "spot_check_disagreement")


def _refresh(project, marks: list[dict], n_resamples: int) -> tuple[str, int]:
    """Recompute the project's figures its marks touch, protocol by protocol; every other
    stored figure stays. A protocol with an ``all`` mark, or without stored figures, is
    recomputed whole."""
    slugs = dict(
        Domain.objects.filter(project=project, pk__in={m["domain_id"] for m in marks}).values_list(
            "pk", "slug"
        )
    )
    by_protocol: dict[str, list[dict]] = {}
    for m in marks:
        by_protocol.setdefault(m["protocol"], []).append(
            m | {"domain": slugs.get(m["domain_id"], "")}
        )
    stored = _stored_versions(project)
    only = {
        p: EVERYTHING
        if p not in stored or any(m["kind"] == AgreementDirtyScope.ALL for m in ms)
        else _selection(ms)
        for p, ms in by_protocol.items()
    }
    ratings, spot_checks, facts = collect_rows(set(only), project=project)
    versions = _protocol_versions(ratings, spot_checks, facts)
    figures = compute_figures(
        ratings,
        spot_checks,
        facts,
        n_resamples=n_resamples,
        seed=bootstrap_seed(project=project),
        only=only,
    )
    watch_alerts = webhooks.wants(WebhookEvent.ALERT_RAISED, project=project)
    with transaction.atomic():
        _lock_snapshots(project.pk)
        before = _alerts_by_key(project) if watch_alerts else {}
        for protocol, selection in only.items():
            rows = AgreementSnapshot.objects.filter(project=project, protocol=protocol)
            if selection is not EVERYTHING:
                existing = rows.values(
                    "pk", "axis", "metric", "tier", "task_type", "domain", "week", "subject"
                )
                rows = AgreementSnapshot.objects.filter(
                    pk__in=[r["pk"] for r in existing if _selected(r, selection)]
                )
            rows.delete()
            if protocol in versions:
                AgreementSnapshot.objects.filter(project=project, protocol=protocol).update(
                    data_version=versions[protocol]
                )
        AgreementSnapshot.objects.bulk_create(
            (f.as_snapshot(versions[f.protocol], project=project) for f in figures),
            batch_size=2000,
        )
        if watch_alerts:
            _emit_raised_alerts(before, project)
    return _combined(_stored_versions(project)), _count(project)


def recompute_agreement_snapshots(*, project, full: bool = True, requests=()) -> tuple[str, int]:
    """Bring the project's stored figures up to date (idempotent). ``full``, or a request in
    ``requests`` (outbox message ids) that asked for it, or no stored figures at all: collect
    every protocol's rows and recompute what changed (:func:`store_agreement_snapshots`).
    Otherwise only the figures the dirty-scope marks name (a label at a million items
    recomputes its scopes, not everything); no marks, nothing to do. The marks taken into
    account are deleted with the new figures stored. The time-on-item figures that miss a
    change are refreshed on every run (:func:`refresh_time_on_item_figures`)."""
    refresh_time_on_item_figures()
    full = (
        full
        or OutboxMessage.objects.filter(pk__in=list(requests), payload__full=True).exists()
        or not AgreementSnapshot.objects.filter(project=project).exists()
    )
    marks = list(
        AgreementDirtyScope.objects.filter(project=project)
        .order_by("id")
        .values("id", "protocol", "kind", "tier", "task_type", "domain_id", "week", "annotator_id")
    )
    n_resamples = bootstrap_resamples(project=project)
    if full or any(m["kind"] == AgreementDirtyScope.ALL and not m["protocol"] for m in marks):
        ratings, spot, facts = collect_rows(project=project)
        result = store_agreement_snapshots(
            project=project,
            ratings=ratings,
            spot_checks=spot,
            facts=facts,
            n_resamples=n_resamples,
        )
    elif marks:
        result = _refresh(project, marks, n_resamples)
    else:
        return _combined(_stored_versions(project)), _count(project)
    AgreementDirtyScope.objects.filter(pk__in=[m["id"] for m in marks]).delete()
    return result


def mark_dirty(
    *,
    project_id: int,
    protocol: str = "",
    kind: str = AgreementDirtyScope.RATING,
    tier: str = "",
    task_type: str = "",
    domain_id: int | None = None,
    at=None,
    annotator_id: int | None = None,
) -> None:
    """Record, in the caller's transaction, that figures of ``protocol`` in the project no
    longer match the data (see :class:`~goldset.models.AgreementDirtyScope`); ``at`` is the
    changed rating's time (its ISO week is a scope)."""
    AgreementDirtyScope.objects.create(
        project_id=project_id,
        protocol=protocol,
        kind=kind,
        tier=tier or "",
        task_type=task_type or "",
        domain_id=domain_id,
        week=iso_week(at) if at is not None else "",
        annotator_id=annotator_id,
    )


def _debounce_key(project_id: int) -> str:
    return f"{AGREEMENT_DEBOUNCE_KEY}:{project_id}"


def schedule_agreement_recompute(
    *, project_id: int, now: bool = False, dirty: dict | None = None
) -> bool:
    """Ask for a recompute of the project's figures (``project_id``: the project of the change),
    recorded in the outbox inside the caller's transaction (no cache,
    no broker: a label or review commits when Redis is down, and the recompute is published when
    it returns). ``dirty`` (keyword arguments of :func:`mark_dirty`) says what changed; without
    it every figure is recomputed. Changes within the debounce window
    (``AGREEMENT_DEBOUNCE_SECONDS``, 30 s) of one project share one request, which runs when
    the window ends and so sees all of them; ``now=True`` (a lead's button) skips the window and
    recomputes everything of the project. Returns True when a new request was recorded. In the
    embedded mode the task runs in-process at commit."""
    mark_dirty(project_id=project_id, **(dirty or {"kind": AgreementDirtyScope.ALL}))
    payload = {"project_id": project_id}
    if now:
        message = outbox.enqueue(kind=AGREEMENT_OUTBOX_KIND, payload=payload | {"full": True})
        return message is not None
    delay = tunable("AGREEMENT_DEBOUNCE_SECONDS")
    return (
        outbox.enqueue(
            kind=AGREEMENT_OUTBOX_KIND,
            payload=payload,
            dedupe_key=_debounce_key(project_id),
            delay=delay,
        )
        is not None
    )


# pg_try_advisory_lock key of "a recompute is running" (the snapshot store's key plus one).
RECOMPUTE_LOCK = SNAPSHOT_LOCK + 1


def recompute_lock_key(project_id: int) -> int:
    """The advisory lock key held while the project's figures are recomputed."""
    return _lock_key(RECOMPUTE_LOCK, project_id)


class _RecomputeLock:
    """A session-level advisory lock held while one worker recomputes a project (PostgreSQL; a
    lost worker's connection closes and the lock goes with it): recomputes of different
    projects run side by side. Elsewhere — SQLite, whose embedded mode runs tasks in-process
    one at a time — it is always free."""

    def __init__(self, project_id: int):
        self.key = recompute_lock_key(project_id)

    def acquire(self) -> bool:
        if connection.vendor != "postgresql":
            return True
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [self.key])
            return bool(cursor.fetchone()[0])

    def release(self) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [self.key])


def _requests_waiting(project_id: int) -> bool:
    """A due recompute request of the project nobody has started: one whose task found a
    recompute of the project running."""
    return OutboxMessage.objects.filter(
        kind=AGREEMENT_OUTBOX_KIND,
        payload__project_id=project_id,
        done_at__isnull=True,
        started_at__isnull=True,
        available_at__lte=timezone.now(),
    ).exists()


@contextmanager
def _reads_on_one_core() -> Iterator[None]:
    """The recompute's statements run without PostgreSQL's parallel workers: a refresh's reads
    at 1M items (the time-on-item aggregates join every label to its record) each took three
    processes, both cores of the database machine for a second, beside the people labeling on
    it, whose statements then waited for a CPU. Background reads take one core; the web keeps
    the others (issue 26). The session's setting is restored after."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET max_parallel_workers_per_gather = 0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET max_parallel_workers_per_gather")


def _budget_wait(project_id: int, message_id: int | None) -> float:
    """Seconds a debounced request (labels, reviews) must still wait so that the project's
    refreshes take at most ``AGREEMENT_REFRESH_BUDGET`` of the time: a refresh that ran ``d``
    seconds is followed by ``d × (1 / budget − 1)`` seconds without one. Background work then
    cannot take more than its share of a small machine from the people labeling on it (issue
    26: at 1M items a 3–7 s refresh every 30 s doubled the submit's p95). A request that asks
    for everything (a lead's "Recompute now") never waits."""
    budget = tunable("AGREEMENT_REFRESH_BUDGET")
    if message_id is None or not 0 < budget < 1 or tasks_run_inline():
        return 0.0  # (in-process tasks: the embedded mode's small data needs no budget)
    request = OutboxMessage.objects.filter(pk=message_id).values("payload").first()
    if request is None or request["payload"].get("full"):
        return 0.0
    last = (
        OutboxMessage.objects.filter(
            kind=AGREEMENT_OUTBOX_KIND,
            payload__project_id=project_id,
            started_at__isnull=False,
            done_at__isnull=False,
        )
        .order_by("-pk")  # the newest first, by the primary key's index: done rows are kept
        .values("started_at", "done_at")
        .first()
    )
    if last is None:
        return 0.0
    ran = (last["done_at"] - last["started_at"]).total_seconds()
    quiet_until = last["done_at"] + dt.timedelta(seconds=ran * (1 / budget - 1))
    return max(0.0, (quiet_until - timezone.now()).total_seconds())


# Passes one task makes at most (a request some other transaction holds locked is left to its
# own task or the reconciler, not spun on).
MAX_RECOMPUTE_PASSES = 5


def project_of_request(message_id: int | None) -> int:
    """The project a recompute request (outbox message) names; a request recorded before
    projects names none and is the default project's."""
    payload = (
        OutboxMessage.objects.filter(pk=message_id).values_list("payload", flat=True).first()
        if message_id
        else None
    )
    return (payload or {}).get("project_id") or default_project_id()


def run_agreement_recompute(
    *, project_id: int | None = None, message_id: int | None = None, heartbeat: bool = True
) -> dict:
    """Serve a project's recompute requests one recompute at a time per project (coalesced;
    ``project_id`` defaults to the project ``message_id`` names): when another worker is
    recomputing the project, return at once (``{"coalesced": True}``) and leave this request open; the
    running recompute picks it up after its current pass (it loops while due requests nobody
    started are waiting, re-checking after it lets go of the lock, so a request skipped at that
    moment is not stranded; the reconciler re-sends any that still is). Each pass marks every
    open request started, recomputes what the dirty-scope marks name (everything when a request
    asked for it) and marks the requests done once the snapshots are stored; while a pass runs
    the requests' heartbeat is stamped."""
    if project_id is None:
        project_id = project_of_request(message_id)
    wait = _budget_wait(project_id, message_id)
    if wait > 0 and outbox.postpone(message_id, seconds=wait):
        return {"postponed": round(wait, 1), "project_id": project_id}
    project = Project.objects.get(pk=project_id)
    lock = _RecomputeLock(project_id)
    result: dict = {"coalesced": True, "project_id": project_id}
    passes = 0
    while passes < MAX_RECOMPUTE_PASSES and lock.acquire():
        try:
            while passes < MAX_RECOMPUTE_PASSES:
                passes += 1
                covered = outbox.start_all_of_kind(
                    kind=AGREEMENT_OUTBOX_KIND,
                    message_id=message_id,
                    payload={"project_id": project_id},
                )
                message_id = None
                with outbox.beating(covered, heartbeat=heartbeat), _reads_on_one_core():
                    version, rows = recompute_agreement_snapshots(
                        project=project, full=False, requests=covered
                    )
                outbox.mark_done(covered)
                result = {"data_version": version, "snapshots": rows, "project_id": project_id}
                if not _requests_waiting(project_id):
                    break
        finally:
            lock.release()
        if not _requests_waiting(project_id):
            break
    return result
