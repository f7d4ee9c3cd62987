"""Benchmark: recompute every agreement figure for 100,000 labelled items × 3 annotators
(4 axes, 4 task types, 12 ISO weeks, 2 tiers, 5 domains, 30 annotators) with 1,000 bootstrap
resamples per figure, against one call of `krippendorff.alpha` on the whole matrix; then the
incremental refresh after one label (the figures its dirty-scope mark names: its α/Fleiss scopes
and its annotator's pairs, computed from the same rows).

Run: .venv/bin/python bench/bench_agreement.py [--items 100000] [--resamples 1000] [--reference]
[--processes 2]
Prints a JSON line with the figures (wall seconds; CPU seconds of this process, of its finished
children and of the forkserver with the agreement processes it forked and reaped; the 1-minute
load average before each step; peak RSS of this process and of the largest child); BENCHMARKS.md
records them. The full recompute is timed twice: the first call in a process also starts the
forkserver (``recompute_s``), as a worker's first recompute does; the second (``recompute_warm_s``)
is what a worker's later recomputes cost. With ``--warm-up`` the process first warms up as a Celery
pool process of the default queue does at its start (``warm_up_s``, off the recompute's clock), so
``recompute_s`` is the first recompute of a worker process that has been up that long. Uses no database: it times the computation the Celery task runs
(goldset.services.agreement.compute_figures). ``--reference`` also times the pre-issue-17
implementation (tests/goldset/agreement_reference.py) on the same rows and checks the figures are
identical.
"""

import argparse
import json
import multiprocessing.forkserver
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings_test")

import django

django.setup()

import krippendorff  # noqa: E402

from goldset.services import agreement  # noqa: E402
from goldset.services.agreement import (  # noqa: E402
    AXES,
    Selection,
    compute_figures,
    spot_check_frame,
)

AXIS_NAMES = ["acceptability", "grounding", "severe_safety", "verdict"]
TASK_TYPES = ["factual_qa", "rag_synthesis", "summarization", "code_generation"]
DOMAINS = [
    "security_questionnaire",
    "federal_it",
    "healthcare_ops",
    "supply_chain",
    "financial_services",
]


def make_rows(n_items: int, seed: int = 20261121) -> pd.DataFrame:
    """The seeded rows (the same values as before; built column-wise, scope columns as
    categoricals, so a million items fit)."""
    rng = np.random.default_rng(seed)
    annotators = np.stack([rng.choice(30, size=3, replace=False) for _ in range(n_items)])
    meta = {
        # A categorical, as the database read builds it (agreement_sources._frame).
        "item": pd.Categorical.from_codes(
            np.arange(n_items), categories=pd.Index(np.arange(n_items).astype(str))
        ),
        "tier": np.where(rng.random(n_items) < 0.4, "tier_b", "tier_a"),
        "task_type": rng.choice(TASK_TYPES, n_items),
        "domain": rng.choice(DOMAINS, n_items),
        "week": np.array([f"2026-W{w:02d}" for w in range(35, 47)])[
            rng.integers(35, 47, n_items) - 35
        ],
    }
    frames = []
    for axis in AXIS_NAMES:
        cats = np.array(AXES[axis].categories)
        truth = rng.integers(0, len(cats), n_items)
        for slot in range(3):
            noisy = np.where(rng.random(n_items) < 0.15, rng.integers(0, len(cats), n_items), truth)
            frames.append(
                pd.DataFrame(
                    {
                        "protocol": "answer_label" if axis != "verdict" else "triple_review",
                        "item": meta["item"],
                        "annotator": annotators[:, slot],
                        "axis": axis,
                        "value": cats[noisy],
                        "tier": meta["tier"],
                        "task_type": meta["task_type"],
                        "domain": meta["domain"],
                        "week": meta["week"],
                    }
                )
            )
    rows = pd.concat(frames, ignore_index=True)
    for column in ("protocol", "axis", "value", "tier", "task_type", "domain", "week"):
        rows[column] = rows[column].astype("category")
    return rows


def one_label_selection(rows: pd.DataFrame, index: int) -> dict:
    """What one label's dirty-scope mark selects (goldset.services.agreement._selection)."""
    r = rows.iloc[index]
    t, k, d, w = str(r["tier"]), str(r["task_type"]), str(r["domain"]), str(r["week"])
    scopes = frozenset(
        {
            ((), ()),
            (("tier",), (t,)),
            (("tier", "task_type"), (t, k)),
            (("tier", "domain"), (t, d)),
            (("tier", "week"), (t, w)),
            (("tier", "task_type", "week"), (t, k, w)),
        }
    )
    pairs = frozenset({((), ()), (("tier",), (t,))})
    return {str(r["protocol"]): Selection(scopes, pairs, frozenset({r["annotator"]}))}


def cpu_seconds() -> float:
    """User + system CPU of this process, of its finished children and of the forkserver that
    forks the processes computing figures, with those processes (the server reaps them, so their
    CPU is the server's children's; the server is this process's child, reaped only at exit)."""
    me, children = os.times(), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.user + me.system + children.ru_utime + children.ru_stime + forkserver_cpu_seconds()


def forkserver_cpu_seconds() -> float:
    """User + system CPU of the running forkserver and of its reaped children (Linux's
    ``/proc``); 0 before the server is started."""
    pid = multiprocessing.forkserver._forkserver._forkserver_pid
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime: fields 14-17 of proc(5), counted from the state (field 3).
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def warm_up_like_a_worker() -> float:
    """Seconds until the warm-up a worker's pool process starts at its start has finished: the
    call (statsmodels imported here, the server started), then the server's preloading, done
    when its CPU time has stopped growing for a second."""
    from tests.waiting import wait_until

    started = time.perf_counter()
    agreement.warm_up()
    seen = {"cpu": -1.0, "since": time.monotonic()}

    def preloaded() -> bool:
        cpu = forkserver_cpu_seconds()
        if cpu != seen["cpu"]:
            seen.update(cpu=cpu, since=time.monotonic())
        return time.monotonic() - seen["since"] >= 1.0

    wait_until(preloaded, timeout=300, what="the agreement server to finish preloading")
    return round(time.perf_counter() - started - 1.0, 2)


def timed(fn):
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), cpu_seconds()
    out = fn()
    return out, round(time.perf_counter() - wall, 2), round(cpu_seconds() - cpu, 2), load


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--warm-up",
        action="store_true",
        help="first warm up as a Celery pool process of the default queue does at its start "
        "(goldset.services.agreement.warm_up), so recompute_s is the first recompute of a "
        "worker process that has been up for warm_up_s",
    )
    args = parser.parse_args()
    rows = make_rows(args.items)
    spot = spot_check_frame([])
    warm_up_s = None
    if args.warm_up:
        warm_up_s = warm_up_like_a_worker()
    figures, recompute, recompute_cpu, load_full = timed(
        lambda: compute_figures(rows, spot, n_resamples=args.resamples, processes=args.processes)
    )
    again, recompute_warm, recompute_warm_cpu, load_warm = timed(
        lambda: compute_figures(rows, spot, n_resamples=args.resamples, processes=args.processes)
    )
    assert again == figures
    only = one_label_selection(rows, len(rows) // 2)
    part, incremental, incremental_cpu, load_inc = timed(
        lambda: compute_figures(
            rows, spot, n_resamples=args.resamples, only=only, processes=args.processes
        )
    )
    assert all(f in figures for f in part)
    reference = {}
    if args.reference:
        # Imported here: only --reference needs the test-suite copy of the old implementation.
        from tests.goldset import agreement_reference

        old, wall, cpu, load = timed(
            lambda: agreement_reference.compute_figures(rows, spot, n_resamples=args.resamples)
        )
        reference = {
            "reference_s": wall,
            "reference_cpu_s": cpu,
            "reference_load": load,
            "identical_to_reference": old == figures,
        }

    # The baseline's annotators × items matrix, built from the codes (a pivot turned into
    # strings took minutes at 1M items: 30M cells).
    axis = rows[rows["axis"] == "grounding"]
    order = {c: i for i, c in enumerate(AXES["grounding"].categories)}
    lookup = np.array([order.get(c, np.nan) for c in axis["value"].cat.categories], dtype=float)
    annotators = axis["annotator"].to_numpy()
    matrix = np.full((annotators.max() + 1, len(axis["item"].cat.categories)), np.nan)
    matrix[annotators, axis["item"].cat.codes.to_numpy()] = lookup[axis["value"].cat.codes]
    started = time.perf_counter()
    krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    single = time.perf_counter() - started
    result = {
        "items": args.items,
        "rating_rows": len(rows),
        "resamples": args.resamples,
        "figures": len(figures),
        "warm_up_s": warm_up_s,
        "recompute_s": recompute,
        "recompute_cpu_s": recompute_cpu,
        "load_before_recompute": load_full,
        "recompute_warm_s": recompute_warm,
        "recompute_warm_cpu_s": recompute_warm_cpu,
        "load_before_recompute_warm": load_warm,
        "incremental_figures": len(part),
        "incremental_s": incremental,
        "incremental_cpu_s": incremental_cpu,
        "load_before_incremental": load_inc,
        **reference,
        "single_krippendorff_alpha_s": round(single, 3),
        "ratio_recompute_to_single": round(recompute / single, 1),
        "processes": args.processes,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "peak_rss_child_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
