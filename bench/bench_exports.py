"""Benchmark: freeze + export 100,000 triples, and score a 100,000-query run through a worker.

Usage (PostgreSQL and Redis required; the database is migrated and filled with a synthetic
corpus of N blocks the first time):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gs_exports REDIS_URL=redis://127.0.0.1:6379/9 \
        python bench/bench_exports.py [--n 100000]

Phases, each timed in its own process so peak RSS (ru_maxrss) belongs to that phase only:

1. ``freeze``: ``store_frozen_version`` on N synthetic gold rows (one per block; rows are
   generated, not curated through the review protocol) — stores canonical rows and renders every
   file (gold JSONL, Unrag full + redacted, PROBE questions, packets full + redacted, manifest),
   then ``export_gold --format gold_jsonl`` writes the verified file to /dev/null.
2. ``score``: a TREC run with 10 results for each of the N queries (N × 10 lines) is uploaded
   (whole-file validation), scored by a real ``celery worker`` on Redis and stored; timed from
   upload to the job's ``succeeded``.
"""

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    os.environ.setdefault("SECRET_KEY", "bench-secret")
    # Imported only once the settings module is chosen (above).
    import django

    django.setup()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ensure_corpus(n: int) -> None:
    # Imported after setup_django() has configured Django, which app modules need.
    from django.core.management import call_command

    from goldset.models import Block, BlockVersion, Document, Domain, default_project_id

    call_command("migrate", verbosity=0)
    if Block.objects.filter(block_id__startswith="bench-").count() >= n:
        return
    domains = [
        Domain.objects.get_or_create(project_id=default_project_id(), slug=s, defaults={"name": s})[
            0
        ]
        for s in ("supply_chain", "federal_it", "healthcare_ops", "financial_services")
    ]
    docs = Document.objects.bulk_create(
        Document(
            project_id=domains[d % 4].project_id,
            document_id=f"bench-doc-{d:05d}",
            title=f"Bench {d}",
            domain=domains[d % 4],
            authority="0.8",
        )
        for d in range(n // 10)
    )
    blocks = Block.objects.bulk_create(
        (
            Block(
                project_id=docs[i // 10].project_id,
                block_id=f"bench-{i:06d}",
                document=docs[i // 10],
                position=i % 10,
            )
            for i in range(n)
        ),
        batch_size=5000,
    )
    BlockVersion.objects.bulk_create(
        (
            BlockVersion(
                block=b,
                version=1,
                text=f"Clause {i}: retention is {i % 97} days.",
                sha256=f"{i:064x}",
            )
            for i, b in enumerate(blocks)
        ),
        batch_size=5000,
    )


def rows(n: int):
    domains = ("supply_chain", "federal_it", "healthcare_ops", "financial_services")
    for i in range(n):
        yield {
            "id": f"bench-q{i:06d}",
            "question": f"How long is the retention in clause {i}?",
            "expected_block": {
                "block_id": f"bench-{i:06d}",
                "document_id": f"bench-doc-{i // 10:05d}",
                "version": 1,
                "page_range": None,
                "sha256": f"{i:064x}",
            },
            "expected_answer": f"{i % 97} days.",
            "metadata": {
                "domain": domains[(i // 10) % 4],
                "difficulty": "standard",
                "task_type": "factual_qa",
                "tier": "tier_b",
                "source": "synthetic_human_verified",
                "added_by": "bench",
                "added_at": "2026-01-01",
                "reviewed_by": ["r1", "r2"],
                "resolution": "consensus",
            },
        }


def phase_freeze(n: int) -> dict:
    # Imported after setup_django() has configured Django, which app modules need.
    from django.core.management import call_command

    from goldset.services.freeze import store_frozen_version

    start = time.perf_counter()
    version = store_frozen_version(rows=rows(n), actor=None, filters={"bench": n})
    frozen = time.perf_counter()
    call_command(
        "export_gold",
        "--version",
        str(version.number),
        "--format",
        "gold_jsonl",
        "-o",
        os.devnull,
        stderr=io.StringIO(),
    )
    done = time.perf_counter()
    gold = version.files.get(format="gold_jsonl")
    return {
        "version": version.number,
        "triples": version.row_count,
        "freeze_s": round(frozen - start, 2),
        "export_s": round(done - frozen, 2),
        "total_s": round(done - start, 2),
        "gold_jsonl_mb": round(gold.size / 2**20, 1),
        "files": version.files.count(),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def phase_score(n: int, version_number: int) -> dict:
    # Imported after setup_django() has configured Django, which app modules need.
    from goldset.models import GoldVersion, ScoringJob
    from goldset.services.scoring_jobs import create_scoring_job

    lines = []
    for i in range(n):
        for r in range(10):
            block = (i + r * 7 + (i % 3) * 11) % n  # relevant at rank 1 for a third
            lines.append(
                f"bench-q{i:06d} Q0 bench-{block:06d} {r + 1} {30 - r - (i % 5) / 10:.2f} bench"
            )
    data = ("\n".join(lines) + "\n").encode()
    del lines
    version = GoldVersion.objects.get(number=version_number)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "workbench.settings"}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workbench",
            "worker",
            "--pool=solo",
            "-n",
            "bench@%h",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Imported after setup_django() has configured Django, which app modules need.
        from workbench.celery import app

        for _ in range(120):
            if app.control.ping(timeout=0.5):
                break
        start = time.perf_counter()
        job = create_scoring_job(
            version=version, name="bench", data=data, filename="bench.trec", actor=None
        )
        queued = time.perf_counter()
        pause = threading.Event()
        while not ScoringJob.objects.get(pk=job.pk).finished:
            pause.wait(0.1)
        done = time.perf_counter()
        job.refresh_from_db()
        return {
            "queries": n,
            "run_lines": n * 10,
            "run_mb": round(len(data) / 2**20, 1),
            "status": job.status,
            "error": job.error,
            "upload_validation_s": round(queued - start, 2),
            "end_to_end_s": round(done - start, 2),
            "stage_timings_s": job.stage_timings,
            "resamples": job.resamples,
            "ndcg@10": job.summary.get("aggregate", {}).get("ndcg@10"),
        }
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--phase", choices=["all", "setup", "freeze", "score"], default="all")
    parser.add_argument("--version-number", type=int)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("needs DATABASE_URL=postgres://… (and REDIS_URL for scoring)")
    if args.phase != "all":
        setup_django()
        if args.phase == "setup":
            ensure_corpus(args.n)
            print(json.dumps({"setup": "ok"}))
        elif args.phase == "freeze":
            print(json.dumps(phase_freeze(args.n)))
        else:
            print(json.dumps(phase_score(args.n, args.version_number)))
        return
    me = [sys.executable, __file__, "--n", str(args.n)]
    subprocess.run([*me, "--phase", "setup"], check=True)
    freeze = json.loads(
        subprocess.run(
            [*me, "--phase", "freeze"], check=True, capture_output=True, text=True
        ).stdout
    )
    print("freeze+export:", json.dumps(freeze))
    score = json.loads(
        subprocess.run(
            [*me, "--phase", "score", "--version-number", str(freeze["version"])],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    print("scoring:", json.dumps(score))


if __name__ == "__main__":
    main()
