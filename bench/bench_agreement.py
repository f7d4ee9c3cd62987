"""Benchmark: recompute every agreement figure for 100,000 labelled items × 3 annotators
(4 axes, 4 task types, 12 ISO weeks, 2 tiers, 5 domains, 30 annotators) with 1,000 bootstrap
resamples per figure, against one call of `krippendorff.alpha` on the whole matrix.

Run: .venv/bin/python bench/bench_agreement.py [--items 100000] [--resamples 1000]
Prints a JSON line with the figures; BENCHMARKS.md records them. Uses no database: it times the
computation the Celery task runs (goldset.services.agreement.compute_figures).
"""

import argparse
import json
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

from goldset.services.agreement import AXES, compute_figures, ratings_frame, spot_check_frame  # noqa: E402

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
    rng = np.random.default_rng(seed)
    annotators = np.stack([rng.choice(30, size=3, replace=False) for _ in range(n_items)])
    meta = pd.DataFrame(
        {
            "item": np.arange(n_items).astype(str),
            "tier": np.where(rng.random(n_items) < 0.4, "tier_b", "tier_a"),
            "task_type": rng.choice(TASK_TYPES, n_items),
            "domain": rng.choice(DOMAINS, n_items),
            "week": [f"2026-W{w:02d}" for w in rng.integers(35, 47, n_items)],
        }
    )
    frames = []
    for axis in AXIS_NAMES:
        cats = np.array(AXES[axis].categories)
        truth = rng.integers(0, len(cats), n_items)
        for slot in range(3):
            noisy = np.where(rng.random(n_items) < 0.15, rng.integers(0, len(cats), n_items), truth)
            frame = meta.copy()
            frame["annotator"] = annotators[:, slot]
            frame["value"] = cats[noisy]
            frame["axis"] = axis
            frame["protocol"] = "answer_label" if axis != "verdict" else "triple_review"
            frames.append(frame)
    rows = pd.concat(frames, ignore_index=True)
    return ratings_frame(
        rows[
            [
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
        ].itertuples(index=False, name=None)
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rows = make_rows(args.items)
    started = time.perf_counter()
    figures = compute_figures(rows, spot_check_frame([]), n_resamples=args.resamples)
    recompute = time.perf_counter() - started

    axis = rows[rows["axis"] == "grounding"]
    matrix = (
        axis.pivot(index="annotator", columns="item", values="value")
        .replace({c: i for i, c in enumerate(AXES["grounding"].categories)})
        .to_numpy(dtype=float)
    )
    started = time.perf_counter()
    krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    single = time.perf_counter() - started
    result = {
        "items": args.items,
        "rating_rows": len(rows),
        "resamples": args.resamples,
        "figures": len(figures),
        "recompute_s": round(recompute, 2),
        "single_krippendorff_alpha_s": round(single, 3),
        "ratio_recompute_to_single": round(recompute / single, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
