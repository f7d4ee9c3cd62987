"""Benchmark the scoring library against pytrec_eval and ranx (not a test; figures in BENCHMARKS.md).

Usage: python bench/bench_scoring.py [--queries 100000] [--depth 100] [--resamples 1000]
                                     [--repeat 3] [--tools cli,ours,pytrec_eval,ranx,stage,alpha]

Generates a seeded TREC run (queries x depth results) and qrels (1-5 relevant per query) into
bench/out/, then measures each tool ``--repeat`` times (round-robin over the tools), each run in
its own fresh process, and reports medians. Per run: wall time including interpreter start-up,
the child's own CPU time (user + system) and peak RSS (from ``os.wait4``), and the 1-minute load
average just before it started (the machine is shared; see BENCHMARKS.md).

* end to end = read both files + recall/precision/hit/mrr/ndcg @10:
  ``python -m scoring retrieval``, pytrec_eval (parse_qrel/parse_run + RelevanceEvaluator) and
  ranx (Qrels/Run.from_file + evaluate);
* the metric stage alone: ``scoring.retrieval.compute`` vs a plain NumPy computation on the same
  prepared arrays;
* Krippendorff's alpha on units x 3 coders with a bootstrap interval.

Prints a table and writes bench/out/results.json (medians plus every sample).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from importlib.metadata import PackageNotFoundError, version
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


def _spawn(argv: list[str]) -> tuple[str, dict]:
    """Run ``argv`` in a fresh process; return its stdout and wall/CPU time and peak RSS.

    The child is reaped with ``os.wait4`` so that CPU time and peak RSS are that process's own
    (``RUSAGE_CHILDREN`` would mix all children). CPU time (user + system) is reported next to
    wall time because this machine is shared: other sessions' jobs inflate wall time, much less
    the CPU time a process itself uses.
    """
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(stderr)
    return stdout, {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "load1_before": load,
    }


def run_child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict. Adds wall/CPU time, peak RSS."""
    stdout, usage = _spawn([sys.executable, "-c", textwrap.dedent(code)])
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(usage)
    return result


def cli_child(qrels: Path, run: Path) -> dict:
    stdout, usage = _spawn(
        [sys.executable, "-m", "scoring", "retrieval", "--qrels", str(qrels), "--run", str(run)]
    )
    return {"aggregate": json.loads(stdout)["aggregate"], **usage}


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def median_of(samples: list[dict]) -> dict:
    """Median of every numeric field over repeated runs; other fields from the first run."""
    out = dict(samples[0])
    for key, value in samples[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = statistics.median(s[key] for s in samples)
    out["samples"] = samples
    return out


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
from scoring.retrieval import compute, default_metrics, prepare
qrels = read_qrels({qrels!r})
run = read_run({run!r})
_, p = prepare(qrels, run)
metrics = default_metrics(10)

def plain(p):
    n_q = len(p.n_ret)
    rel = p.hit_rel >= 1
    top = rel & (p.hit_rank < 10)
    hits = np.bincount(p.hit_query[top], minlength=n_q).astype(float)
    q, r = p.hit_query[rel], p.hit_rank[rel]
    first = np.ones(len(q), bool)
    first[1:] = q[1:] != q[:-1]
    rr = np.zeros(n_q)
    rr[q[first]] = 1.0 / (r[first] + 1)
    g = (p.hit_rel > 0) & (p.hit_rank < 10)
    dcg = np.bincount(p.hit_query[g], weights=p.hit_rel[g] / np.log2(p.hit_rank[g] + 2.0),
                      minlength=n_q)
    irank = np.arange(len(p.ideal_query)) - np.searchsorted(p.ideal_query, p.ideal_query)
    i = irank < 10
    idcg = np.bincount(p.ideal_query[i], weights=p.ideal_rel[i] / np.log2(irank[i] + 2.0),
                       minlength=n_q)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {{
            "recall": np.where(p.n_rel > 0, hits / np.maximum(p.n_rel, 1), 0.0),
            "precision": hits / 10,
            "hit": (hits > 0).astype(float),
            "mrr@10": np.where(rr >= 0.1, rr, 0.0),
            "mrr": rr,
            "ndcg": np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1), 0.0),
        }}

def timed(fn):
    t = time.perf_counter(); fn(); return time.perf_counter() - t

# Interleaved, best of 31 each: on a shared machine a burst of load then hits both alike.
ours_times, base_times = [], []
for _ in range(31):
    ours_times.append(timed(lambda: compute(p, metrics=metrics)))
    base_times.append(timed(lambda: plain(p)))
ours, base = min(ours_times), min(base_times)
a = compute(p, metrics=metrics)
b = plain(p)
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
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool; medians reported")
    parser.add_argument(
        "--tools",
        default="cli,ours,pytrec_eval,ranx,stage,alpha",
        help="comma-separated subset of cli,ours,pytrec_eval,ranx,stage,alpha",
    )
    args = parser.parse_args()
    tools = [t for t in args.tools.split(",") if t]

    t = time.perf_counter()
    qrels, run = generate(args.queries, args.depth)
    print(
        f"data: {run} ({run.stat().st_size / 1e6:.0f} MB), {qrels} ({time.perf_counter() - t:.1f} s)"
    )

    results: dict = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "cpu": _cpu_model(),
        },
        "versions": {
            p: _version(p)
            for p in ("numpy", "pandas", "pyarrow", "pytrec-eval-terrier", "ranx", "krippendorff")
        },
        "data": {"queries": args.queries, "depth": args.depth, "run_mb": run.stat().st_size / 1e6},
        "repeat": args.repeat,
    }
    fmt = {"qrels": str(qrels), "run": str(run)}
    children = {
        "cli": lambda: cli_child(qrels, run),
        "ours": lambda: run_child(OURS.format(**fmt)),
        "pytrec_eval": lambda: run_child(PYTREC.format(**fmt)),
        "ranx": lambda: run_child(RANX.format(**fmt)),
        "stage": lambda: run_child(STAGE.format(**fmt)),
        "alpha": lambda: run_child(ALPHA.format(units=args.units, resamples=args.resamples)),
    }
    # One unmeasured run of each tool first, allowed to write bytecode: a deployed install has
    # its modules compiled (pip compiles at install), and an environment that forbids writing
    # it (PYTHONDONTWRITEBYTECODE, as on the benchmark machine) would otherwise make every
    # measured run compile the modules it imports again (0.45 s of `python -m scoring`).
    # It also reads the files into the page cache for every tool alike.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for name in tools:
        children[name]()
    samples: dict[str, list[dict]] = {name: [] for name in tools}
    # Round-robin over the tools, so that load from other jobs on this shared machine is spread
    # over all of them instead of hitting one tool's repeats together.
    for rep in range(args.repeat):
        for name in tools:
            samples[name].append(children[name]())
            s = samples[name][-1]
            print(
                f"  run {rep + 1}/{args.repeat} {name:<12} wall {s['wall_s']:7.2f} s  "
                f"cpu {s['cpu_s']:7.2f} s  peak {s['peak_mb']:6.0f} MB  "
                f"(load before {s['load1_before']:.1f})",
                flush=True,
            )
    for name in tools:
        results[name] = median_of(samples[name])

    print(f"\nmedians of {args.repeat} runs")
    print(
        f"{'tool':<22}{'read s':>9}{'metrics s':>11}{'in-proc s':>11}{'wall s':>9}"
        f"{'cpu s':>9}{'peak MB':>9}"
    )
    for name in ("cli", "ours", "pytrec_eval", "ranx"):
        if name not in results:
            continue
        r = results[name]
        label = "python -m scoring" if name == "cli" else name
        inner = (
            f"{r['read_s']:>9.2f}{r['metric_s']:>11.2f}{r['total_s']:>11.2f}"
            if "read_s" in r
            else f"{'':>9}{'':>11}{'':>11}"
        )
        print(f"{label:<22}{inner}{r['wall_s']:>9.2f}{r['cpu_s']:>9.2f}{r['peak_mb']:>9.0f}")
    ratios: dict[str, float] = {}
    if "cli" in results:
        cli = results["cli"]
        for other in ("pytrec_eval", "ranx"):
            if other in results:
                ratios[f"{other}_over_cli_wall"] = results[other]["wall_s"] / cli["wall_s"]
                ratios[f"{other}_over_cli_cpu"] = results[other]["cpu_s"] / cli["cpu_s"]
                print(
                    f"speed-up vs {other}: wall {ratios[f'{other}_over_cli_wall']:.2f}x, "
                    f"cpu {ratios[f'{other}_over_cli_cpu']:.2f}x"
                )
    if "stage" in results:
        s = results["stage"]
        ratios["stage_ours_over_numpy"] = statistics.median(
            x["ours_s"] / x["numpy_s"] for x in s["samples"]
        )
        print(
            f"metric stage: ours {s['ours_s'] * 1e3:.2f} ms, plain NumPy {s['numpy_s'] * 1e3:.2f} ms "
            f"(median of per-run ratios {ratios['stage_ours_over_numpy']:.2f})"
        )
    results["ratios"] = ratios
    if "alpha" in results:
        a = results["alpha"]
        print(
            f"alpha ordinal {args.units} units x 3 coders + {args.resamples} bootstrap: "
            f"{a['total_s']:.2f} s, alpha={a['alpha']:.4f}, CI={a['ci']}, peak {a['peak_mb']:.0f} MB"
        )
    if {"ours", "pytrec_eval", "ranx"} <= set(results):
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
                f"  {ours_key:<14}{o:.6f}  {p if p is None else f'{p:.6f}'}  "
                f"{x if x is None else f'{x:.6f}'}"
            )
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    print(f"\nwrote {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
