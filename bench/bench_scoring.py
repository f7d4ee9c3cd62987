"""Benchmark the scoring library against pytrec_eval and ranx (not a test; figures in BENCHMARKS.md).

Usage: python bench/bench_scoring.py [--queries 100000] [--depth 100] [--resamples 1000]

Generates a seeded TREC run (queries x depth results) and qrels (1-5 relevant per query) into
bench/out/, then in one invocation measures, each tool in its own subprocess (so peak RSS is per
tool):

* end to end = read both files + recall/precision/hit/mrr/ndcg @10:
  ``python -m scoring retrieval``, pytrec_eval (parse_qrel/parse_run + RelevanceEvaluator) and
  ranx (Qrels/Run.from_file + evaluate);
* the metric stage alone: ``scoring.retrieval.compute`` vs a plain NumPy computation on the same
  prepared arrays;
* Krippendorff's alpha on units x 3 coders with a bootstrap interval.

Prints a table and writes bench/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import textwrap
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
SEED = 20240601


def generate(n_queries: int, depth: int) -> tuple[Path, Path]:
    run_path = OUT / f"run_{n_queries}x{depth}.trec"
    qrels_path = OUT / f"qrels_{n_queries}.trec"
    if run_path.exists() and qrels_path.exists():
        return qrels_path, run_path
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    n_docs = 5_000_000
    docs = rng.integers(0, n_docs, size=(n_queries, depth * 2))
    # Unique documents per query: keep the first `depth` distinct ids of each row.
    sorted_docs = np.sort(docs, axis=1)
    keep = np.ones_like(sorted_docs, dtype=bool)
    keep[:, 1:] = sorted_docs[:, 1:] != sorted_docs[:, :-1]
    ranked = np.empty((n_queries, depth), dtype=np.int64)
    for i in range(n_queries):
        row = sorted_docs[i][keep[i]]
        ranked[i] = rng.permutation(row)[:depth]
    # Scores descending with ~1% exact ties (rounded to 3 decimals).
    scores = np.round(np.sort(rng.random((n_queries, depth)) * 100, axis=1)[:, ::-1], 3)
    n_rel = rng.integers(1, 6, size=n_queries)
    qids = np.char.add("q", np.arange(n_queries).astype(str))
    with open(qrels_path, "w") as fh:
        for i in range(n_queries):
            picks = rng.choice(depth * 2, size=n_rel[i], replace=False)
            for p in picks:
                # Half the relevant documents come from the ranking, half are unretrieved ones.
                doc = ranked[i, p] if p < depth else n_docs + i * depth * 2 + int(p)
                fh.write(f"{qids[i]} 0 D{doc} {int(rng.integers(1, 4))}\n")
    with open(run_path, "w") as fh:
        ranks = np.arange(1, depth + 1).astype(str)
        for i in range(n_queries):
            q = qids[i]
            d = ranked[i]
            s = scores[i]
            fh.write("".join(f"{q} Q0 D{d[j]} {ranks[j]} {s[j]:.3f} bench\n" for j in range(depth)))
    return qrels_path, run_path


def run_child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict. Adds wall time and peak RSS."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def cli_child(qrels: Path, run: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "scoring", "retrieval", "--qrels", str(qrels), "--run", str(run)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    wall = time.perf_counter() - start
    payload = json.loads(proc.stdout)
    return {"wall_s": wall, "aggregate": payload["aggregate"]}


PEAK = (
    "import resource, json\npeak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
)

PYTREC = """
import json, time, resource
t0 = time.perf_counter()
import pytrec_eval
with open({qrels!r}) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open({run!r}) as fh:
    run = pytrec_eval.parse_run(fh)
t1 = time.perf_counter()
ev = pytrec_eval.RelevanceEvaluator(qrels, {{"recall_10", "P_10", "success_10", "recip_rank", "ndcg_cut_10"}})
res = ev.evaluate(run)
names = ["recall_10", "P_10", "success_10", "recip_rank", "ndcg_cut_10"]
agg = {{n: sum(v[n] for v in res.values()) / len(res) for n in names}}
t2 = time.perf_counter()
print(json.dumps({{"read_s": t1 - t0, "metric_s": t2 - t1, "total_s": t2 - t0, "aggregate": agg,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

RANX = """
import json, time, resource
t0 = time.perf_counter()
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file({qrels!r}, kind="trec")
run = Run.from_file({run!r}, kind="trec")
t1 = time.perf_counter()
agg = evaluate(qrels, run, ["recall@10", "precision@10", "hit_rate@10", "mrr@10", "ndcg@10"])
t2 = time.perf_counter()
print(json.dumps({{"read_s": t1 - t0, "metric_s": t2 - t1, "total_s": t2 - t0,
                  "aggregate": {{k: float(v) for k, v in agg.items()}},
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

OURS = """
import json, time, resource
t0 = time.perf_counter()
from scoring.io import read_qrels, read_run
from scoring.retrieval import evaluate, prepare, compute
qrels = read_qrels({qrels!r})
run = read_run({run!r})
t1 = time.perf_counter()
res = evaluate(qrels, run, k=10)
t2 = time.perf_counter()
print(json.dumps({{"read_s": t1 - t0, "metric_s": t2 - t1, "total_s": t2 - t0,
                  "aggregate": res.aggregate,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

STAGE = """
import json, time
import numpy as np
from scoring.io import read_qrels, read_run
from scoring.retrieval import compute, prepare
qrels = read_qrels({qrels!r})
run = read_run({run!r})
_, p = prepare(qrels, run, k=10)
metrics = ["recall", "precision", "hit", "mrr", "ndcg"]

def plain(gains, ideal, n_rel, first):
    rel = gains > 0
    hits = rel.sum(1)
    disc = 1.0 / np.log2(np.arange(2, 12))
    idcg = ideal @ disc
    with np.errstate(divide="ignore", invalid="ignore"):
        rr = np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)
        return {{
            "recall": np.where(n_rel > 0, hits / np.maximum(n_rel, 1), 0.0),
            "precision": hits / 10,
            "hit": (hits > 0).astype(float),
            "mrr@10": np.where(first <= 10, rr, 0.0),
            "mrr": rr,
            "ndcg": np.where(idcg > 0, (gains @ disc) / np.where(idcg > 0, idcg, 1), 0.0),
        }}

def best(fn, reps=7):
    times = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return min(times)

ours = best(lambda: compute(p, k=10, metrics=metrics))
base = best(lambda: plain(p.gains, p.ideal, p.n_relevant, p.first_rank))
a = compute(p, k=10, metrics=metrics)
b = plain(p.gains, p.ideal, p.n_relevant, p.first_rank)
assert np.allclose(a["ndcg@10"], b["ndcg"]) and np.allclose(a["mrr@10"], b["mrr@10"])
print(json.dumps({{"ours_s": ours, "numpy_s": base}}))
"""

ALPHA = """
import json, time, resource
import numpy as np
from scoring.agreement import krippendorff_alpha
rng = np.random.default_rng(7)
truth = rng.integers(1, 6, size={units})
table = np.where(rng.random(({units}, 3)) < 0.8, truth[:, None], rng.integers(1, 6, size=({units}, 3)))
table = table.astype(object)
table[rng.random(({units}, 3)) < 0.05] = None
t0 = time.perf_counter()
res = krippendorff_alpha(table, level="ordinal", ci=True, n_resamples={resamples})
t1 = time.perf_counter()
print(json.dumps({{"total_s": t1 - t0, "alpha": res.value, "ci": res.ci,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()

    t = time.perf_counter()
    qrels, run = generate(args.queries, args.depth)
    print(
        f"data: {run} ({run.stat().st_size / 1e6:.0f} MB), {qrels} ({time.perf_counter() - t:.1f} s)"
    )

    results: dict = {
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "versions": {
            p: version(p)
            for p in ("numpy", "pandas", "pytrec-eval-terrier", "ranx", "krippendorff")
        },
        "data": {"queries": args.queries, "depth": args.depth, "run_mb": run.stat().st_size / 1e6},
    }
    fmt = {"qrels": str(qrels), "run": str(run)}
    results["cli"] = cli_child(qrels, run)
    results["ours"] = run_child(OURS.format(**fmt))
    results["pytrec_eval"] = run_child(PYTREC.format(**fmt))
    results["ranx"] = run_child(RANX.format(**fmt))
    results["stage"] = run_child(STAGE.format(**fmt))
    results["alpha"] = run_child(ALPHA.format(units=args.units, resamples=args.resamples))

    print(
        f"\n{'tool':<22}{'read s':>9}{'metrics s':>11}{'in-proc s':>11}{'wall s':>9}{'peak MB':>9}"
    )
    for name in ("ours", "pytrec_eval", "ranx"):
        r = results[name]
        print(
            f"{name:<22}{r['read_s']:>9.2f}{r['metric_s']:>11.2f}{r['total_s']:>11.2f}{r['wall_s']:>9.2f}{r['peak_mb']:>9.0f}"
        )
    print(f"{'python -m scoring':<22}{'':>9}{'':>11}{'':>11}{results['cli']['wall_s']:>9.2f}")
    cli = results["cli"]["wall_s"]
    ratios = {
        "pytrec_eval_over_cli_wall": results["pytrec_eval"]["wall_s"] / cli,
        "ranx_over_cli_wall": results["ranx"]["wall_s"] / cli,
        "stage_ours_over_numpy": results["stage"]["ours_s"] / results["stage"]["numpy_s"],
    }
    results["ratios"] = ratios
    print(f"\nspeed-up vs pytrec_eval (wall): {ratios['pytrec_eval_over_cli_wall']:.2f}x")
    print(f"speed-up vs ranx (wall):        {ratios['ranx_over_cli_wall']:.2f}x")
    s = results["stage"]
    print(
        f"metric stage: ours {s['ours_s'] * 1e3:.1f} ms, plain NumPy {s['numpy_s'] * 1e3:.1f} ms "
        f"(ratio {ratios['stage_ours_over_numpy']:.2f})"
    )
    a = results["alpha"]
    print(
        f"alpha ordinal {args.units} units x 3 coders + {args.resamples} bootstrap: "
        f"{a['total_s']:.2f} s, alpha={a['alpha']:.4f}, CI={a['ci']}, peak {a['peak_mb']:.0f} MB"
    )
    print("\naggregates (ours / pytrec_eval / ranx):")
    for ours_key, pt_key, rx_key in [
        ("recall@10", "recall_10", "recall@10"),
        ("precision@10", "P_10", "precision@10"),
        ("hit@10", "success_10", "hit_rate@10"),
        ("mrr", "recip_rank", None),
        ("mrr@10", None, "mrr@10"),
        ("ndcg@10", "ndcg_cut_10", "ndcg@10"),
    ]:
        o = results["ours"]["aggregate"][ours_key]
        p = results["pytrec_eval"]["aggregate"].get(pt_key) if pt_key else None
        x = results["ranx"]["aggregate"].get(rx_key) if rx_key else None
        print(
            f"  {ours_key:<14}{o:.6f}  {p if p is None else f'{p:.6f}'}  {x if x is None else f'{x:.6f}'}"
        )
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    print(f"\nwrote {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
