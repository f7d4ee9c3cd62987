"""Benchmark the PCS calibration grid (not a test; figures in BENCHMARKS.md).

Usage: python bench/bench_calibration.py [--questions 2400] [--systems 8] [--repeat 3]

Builds a seeded synthetic benchmark shaped like seed 004 §3.2 (3 domains × 4 task families,
paraphrase groups of three, conflict and freshness flags, regulated-advice items), one answer per
question and system configuration with a quality level per system, and adjudicated labels.
Then, each repeat in a fresh process: ``scoring.probe.score_answers`` on every answer record,
the seeded 60/20/20 split and the full A.7 grid (``scoring.calibration.calibrate``) — the work
the calibration Celery job does after loading rows. Prints wall/CPU seconds per stage and the
median; writes bench/out/calibration.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))


def build(n_questions: int, n_systems: int, seed: int = 11):
    import numpy as np

    rng = np.random.default_rng(seed)
    domains = ("supply_chain", "healthcare_ops", "financial_services")
    questions, answers, labels = [], [], []
    for i in range(n_questions):
        group = i // 3
        domain = domains[group % 3]
        conflict = group % 5 == 0
        regulated = domain == "financial_services" and group % 4 == 0
        gold = [
            {
                "passage_id": f"p{i}-gov",
                "label": "sufficient",
                "authority": 0.95,
                "effective": "2026-01-01",
            },
            {
                "passage_id": f"p{i}-gen",
                "label": "conflicting" if conflict else "partial",
                "authority": 0.7,
                "effective": "2025-01-01",
            },
            {
                "passage_id": f"p{i}-old",
                "label": "superseded",
                "authority": 0.6,
                "effective": "2024-01-01/2024-12-31",
            },
        ]
        questions.append(
            {
                "question_id": f"q{group:05d}-p{i % 3}",
                "paraphrase_group": f"g{group:05d}",
                "domain": domain,
                "task_family": f"family{(group // 3) % 4}",
                "flags": ["conflict"] if conflict else [],
                "safety_flags": ["regulated_advice_boundary"] if regulated else [],
                "as_of": "2026-04-17",
                "gold_evidence": gold,
                "near_miss": [{"passage_id": f"p{i}-near", "reason": "superseded"}],
            }
        )
        for s in range(n_systems):
            quality = 0.55 + 0.05 * s
            good = rng.random() < quality
            ranked = (
                [f"p{i}-gov", f"p{i}-gen", f"p{i}-near"]
                if good
                else [f"p{i}-near", f"p{i}-old", f"p{i}-gen"]
            )
            cites = [f"p{i}-gov", f"p{i}-gen"] if good else [f"p{i}-old"]
            answers.append(
                {
                    "question_id": questions[-1]["question_id"],
                    "system_id": f"sys{s}",
                    "retrieved_passages": [
                        {"passage_id": p, "rank": r + 1} for r, p in enumerate(ranked)
                    ],
                    "citations": cites,
                    "answer": "…",
                    "latency_s": float(rng.uniform(1, 8)),
                    "cost_usd": float(rng.uniform(0.01, 0.03)),
                }
            )
            leak = rng.random() < 0.03
            label = {
                "question_id": questions[-1]["question_id"],
                "system_id": f"sys{s}",
                "acceptability": "acceptable" if good and not leak else "unacceptable",
                "grounding": "fully_grounded" if good else "misgrounded",
                "conflict_handling": "resolved" if good else "unresolved",
                "protected_data_control": 0.0 if leak else 1.0,
                "primary_failure": "protected_data_exposure"
                if leak
                else ("" if good else "stale_source_acceptance"),
            }
            labels.append(label)
    return questions, answers, labels


def once(n_questions: int, n_systems: int) -> dict:
    from scoring import calibration, probe
    from scoring.report import gold_unsafe

    questions, answers, labels = build(n_questions, n_systems)
    t0, c0 = time.perf_counter(), time.process_time()
    scored = probe.score_answers(questions, answers, labels=labels)
    t1, c1 = time.perf_counter(), time.process_time()
    split = calibration.split_questions(
        [
            {
                "question_id": q["question_id"],
                "paraphrase_group": q["paraphrase_group"],
                "domain": q["domain"],
                "task_family": q["task_family"],
                "conflict": bool(q["flags"]),
                "answerable": True,
            }
            for q in questions
        ]
    )
    gold = {
        (lab["question_id"], lab["system_id"]): {
            "acceptable": lab["acceptability"] == "acceptable",
            "unsafe": gold_unsafe(lab),
        }
        for lab in labels
    }
    items = calibration.items_from_scores(scored.answers, gold)
    result = calibration.calibrate(items, split)
    t2, c2 = time.perf_counter(), time.process_time()
    return {
        "answer_records": len(answers),
        "probe_wall_s": t1 - t0,
        "probe_cpu_s": c1 - c0,
        "grid_wall_s": t2 - t1,
        "grid_cpu_s": c2 - c1,
        "total_wall_s": t2 - t0,
        "candidates": result.n_candidates,
        "rejected_weight_sets": result.n_rejected,
        "selected": result.selected.__dict__,
        "heldout_f1": result.heldout.unsafe_f1,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_1m": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=2400)
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(once(args.questions, args.systems), default=str))
        return
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--questions",
                str(args.questions),
                "--systems",
                str(args.systems),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout))
        r = runs[-1]
        print(
            f"{r['answer_records']} records: probe {r['probe_wall_s']:.1f} s wall, grid "
            f"{r['grid_wall_s']:.1f} s wall / {r['grid_cpu_s']:.1f} s CPU, total "
            f"{r['total_wall_s']:.1f} s, {r['candidates']:,} candidates, load {r['load_1m']:.1f}"
        )
    median = statistics.median(r["total_wall_s"] for r in runs)
    print(f"median total {median:.1f} s")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "calibration.json").write_text(
        json.dumps({"runs": runs, "median_total_s": median}, indent=2, default=str)
    )


if __name__ == "__main__":
    main()
