"""Benchmark: memory of the Celery pool child that scores a 100,000-query job, during the job
and after it (issue 24: a child peaked at 5.9 GB and kept it).

Usage (PostgreSQL and Redis required; reuses bench_exports.py's synthetic corpus and freeze):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gs_mem REDIS_URL=redis://127.0.0.1:6379/9 \
        python bench/bench_worker_memory.py [--n 100000] [--modes retrieval,split,answers]

Each mode starts a real ``celery worker`` with the **prefork** pool (concurrency 1, the pool a
deployment runs), uploads one job and, every 50 ms until the job has ended and 5 s after, reads
``/proc`` for every pool child: its resident set (``VmRSS``) and its high-water mark
(``VmHWM``). Reported per mode: the peak RSS of the child that ran the job, the RSS of the
pool's child 5 s after the job (the same process, or its replacement when
``CELERY_WORKER_MAX_MEMORY_PER_CHILD`` retired it), the end-to-end time and the load average.

Modes: ``retrieval`` (a 1,000,000-line TREC run, one process), ``split`` (the same run split in
pieces over the worker: ``SCORING_SPLIT_MIN_QUERIES=1``), ``answers`` (a 100,000-record JSONL
answer log against the same version: PROBE scoring).
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

PAGE_KB = 1


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _status_kb(pid: int) -> dict[str, int]:
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    except OSError:
        pass
    return values


def start_worker(env: dict, tag: str) -> subprocess.Popen:
    from workbench.celery import app

    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workbench", "worker", "--pool=prefork"]
        + ["--concurrency=1", "-n", f"{tag}@%h", "--without-gossip", "--without-mingle"]
        + ["--loglevel=WARNING"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    name = f"{tag}@{os.uname().nodename}"
    for _ in range(240):
        if app.control.ping(destination=[name], timeout=0.5):
            return proc
    raise RuntimeError("the worker did not answer")


def run_mode(mode: str, *, version, run: bytes, answers: bytes, index: int) -> dict:
    from goldset.models import ScoringJob
    from goldset.services.scoring_jobs import create_scoring_job

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "DB_STATEMENT_TIMEOUT_MS": "0",
        "SCORING_SPLIT_MIN_QUERIES": "1" if mode == "split" else str(10**12),
    }
    proc = start_worker(env, f"mem{index}-{mode}")
    peaks: dict[int, int] = {}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            for child in _children(proc.pid):
                status = _status_kb(child)
                peaks[child] = max(peaks.get(child, 0), status.get("VmHWM", 0))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        before = {c: _status_kb(c).get("VmRSS", 0) for c in _children(proc.pid)}
        data = answers if mode == "answers" else run
        start = time.perf_counter()
        job = create_scoring_job(
            version=version,
            name=f"memory {mode}",
            # Blank lines make each upload new (the same file would give back its earlier job).
            data=data + b"\n" * (ScoringJob.objects.count() + 1),
            filename=f"mem-{index}.{'jsonl' if mode == 'answers' else 'trec'}",
            actor=None,
        )
        pause = threading.Event()
        while not ScoringJob.objects.get(pk=job.pk).finished:
            pause.wait(0.1)
        wall = time.perf_counter() - start
        pause.wait(5.0)
        after = {c: _status_kb(c).get("VmRSS", 0) for c in _children(proc.pid)}
        load = [round(x, 2) for x in os.getloadavg()]
    finally:
        stop.set()
        sampler.join()
        proc.terminate()
        proc.wait(timeout=60)
    job.refresh_from_db()
    return {
        "mode": mode,
        "status": job.status,
        "error": job.error,
        "end_to_end_s": round(wall, 2),
        "stage_timings_s": job.stage_timings,
        "resamples": job.resamples,
        "child_rss_before_mb": {str(c): round(v / 1024, 1) for c, v in before.items()},
        "child_peak_mb": {str(c): round(v / 1024, 1) for c, v in peaks.items()},
        "child_rss_after_mb": {str(c): round(v / 1024, 1) for c, v in after.items()},
        "load_average_after": load,
    }


def answer_log(version) -> bytes:
    rows = list(version.rows.values_list("triple_id", "block_id").order_by("triple_id"))
    blocks = [b for _, b in rows]
    lines = []
    for i, (qid, block) in enumerate(rows):
        other = blocks[(i + 7) % len(blocks)]
        lines.append(
            json.dumps(
                {
                    "run_id": "run-mem",
                    "system_id": "sys-mem",
                    "question_id": qid,
                    "answer": f"Answer {i}: see the cited block for the governing rule.",
                    "citations": [block],
                    "retrieved_passages": [
                        {"passage_id": block, "rank": 1 + i % 2},
                        {"passage_id": other, "rank": 2 - i % 2},
                    ],
                    "latency_ms": 800 + i % 500,
                    "cost_usd": 0.002,
                }
            )
        )
    return ("\n".join(lines) + "\n").encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--modes", default="retrieval,split,answers")
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
    run = ("\n".join(lines) + "\n").encode()
    del lines
    answers = answer_log(version) if "answers" in args.modes else b""
    for index, mode in enumerate(args.modes.split(",")):
        print(json.dumps(run_mode(mode, version=version, run=run, answers=answers, index=index)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
