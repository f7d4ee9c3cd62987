"""Benchmark: one large retrieval job scored in one process, split in pieces on one worker, and
split over two worker processes; the three must give identical figures.

Usage (PostgreSQL and Redis required; reuses bench_exports.py's synthetic corpus and freeze):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gs_split REDIS_URL=redis://127.0.0.1:6379/9 \
        python bench/bench_split.py [--n 100000] [--chunk 25000]

Each mode starts its own ``celery worker`` processes (solo pool) with the split tunables in their
environment, uploads the same run (a trailing blank line differs, so the upload is not the
previous job again), and times upload → ``succeeded``. Reports wall time, stage timings, the
pieces and who did them, the load average, and whether aggregates, CIs and per-query rows are
identical across the modes.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_exports  # noqa: E402  (bench/ is not a package: found through sys.path above)

MODES = {
    "one process": {"workers": 1, "split": False},
    "split, 1 worker": {"workers": 1, "split": True},
    "split, 2 workers": {"workers": 2, "split": True},
}


def start_workers(count: int, env: dict, tag: str) -> list[subprocess.Popen]:
    from workbench.celery import app

    procs = []
    for i in range(count):
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "workbench", "worker", "--pool=solo"]
                + ["-n", f"{tag}{i}@%h", "--without-gossip", "--without-mingle"]
                + ["--loglevel=WARNING"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    host = os.uname().nodename
    names = [f"{tag}{i}@{host}" for i in range(count)]
    for _ in range(240):
        answered = app.control.ping(destination=names, timeout=0.5) or []
        if len(answered) == count:
            return procs
    raise RuntimeError("the workers did not answer")


def run_mode(label: str, mode: dict, *, version, data: bytes, index: int, chunk: int) -> dict:
    from goldset.models import ScoreAggregate, ScoreQueryResult, ScoringJob
    from goldset.services.scoring_jobs import create_scoring_job

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "DB_STATEMENT_TIMEOUT_MS": "0",
        "SCORING_SPLIT_MIN_QUERIES": str(1 if mode["split"] else 10**12),
        "SCORING_CHUNK_QUERIES": str(chunk),
    }
    procs = start_workers(mode["workers"], env, f"split{index}-")
    try:
        start = time.perf_counter()
        job = create_scoring_job(
            version=version,
            name=label,
            # Blank lines make each upload new (the same file would give back its earlier job).
            data=data + b"\n" * (ScoringJob.objects.count() + 1),
            filename=f"bench-{index}.trec",
            actor=None,
        )
        pause = threading.Event()
        while not ScoringJob.objects.get(pk=job.pk).finished:
            pause.wait(0.1)
        wall = time.perf_counter() - start
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)
    job.refresh_from_db()
    figures = {
        "aggregates": sorted(
            ScoreAggregate.objects.filter(job=job).values_list(
                "stratum", "metric", "value", "ci_low", "ci_high", "n"
            )
        ),
        "rows": sorted(
            ScoreQueryResult.objects.filter(job=job).values_list("query_id", "metrics", "primary"),
            key=lambda row: row[0],
        ),
    }
    return {
        "mode": label,
        "status": job.status,
        "error": job.error,
        "end_to_end_s": round(wall, 2),
        "stage_timings_s": job.stage_timings,
        "split": job.summary.get("split"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "_figures": figures,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=25_000)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "REDIS_URL"
    ):
        sys.exit("needs DATABASE_URL=postgres://… and REDIS_URL=redis://…")
    me = [sys.executable, str(ROOT / "bench" / "bench_exports.py"), "--n", str(args.n)]
    subprocess.run([*me, "--phase", "setup"], check=True)
    bench_exports.setup_django()
    from goldset.models import GoldVersion
    from workbench.celery import app

    # A second freeze of the same selection creates nothing: reuse the version of an earlier run.
    version = GoldVersion.objects.filter(row_count=args.n).order_by("-number").first()
    if version is None:
        freeze = json.loads(
            subprocess.run(
                [*me, "--phase", "freeze"], check=True, capture_output=True, text=True
            ).stdout
        )
        version = GoldVersion.objects.get(number=freeze["version"])
    app.conf.task_always_eager = False
    n = args.n
    lines = []
    for i in range(n):
        for r in range(10):
            block = (i + r * 7 + (i % 3) * 11) % n
            lines.append(
                f"bench-q{i:06d} Q0 bench-{block:06d} {r + 1} {30 - r - (i % 5) / 10:.2f} bench"
            )
    data = ("\n".join(lines) + "\n").encode()
    del lines
    results = [
        run_mode(label, mode, version=version, data=data, index=i, chunk=args.chunk)
        for i, (label, mode) in enumerate(MODES.items())
    ]
    reference = results[0]["_figures"]
    for result in results:
        result["identical_to_one_process"] = result.pop("_figures") == reference
        print(json.dumps(result))


if __name__ == "__main__":
    main()
