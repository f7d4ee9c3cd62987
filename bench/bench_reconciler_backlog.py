"""Benchmark: how long the reconciler waits behind a backlog of jobs (issue 24).

Starts, on a redis-server of its own and a PostgreSQL database of its own (``<prefix>``, dropped
first and migrated), the processes docker-compose.yml runs: a jobs worker (prefork, one
process, queues ``celery`` and ``webhooks``), the reconciler's worker (prefork, one process,
queue ``reconcile``) and beat, with ``RECONCILE_INTERVAL_SECONDS=--interval``. The jobs worker
gets ``--backlog`` tasks (``tests.hold``: the first runs until the end, the rest wait), so
every job message waits. Then it measures:

* ``delay_s``: for each of ``--passes`` reconciler passes, the time from beat sending
  ``goldset.reconcile`` to the reconciler's worker receiving it (from the two processes' logs);
* ``redispatch_s``: an outbox message published and then removed from Redis (the broker lost
  it): the time from the moment it counts as lost (published + ``OUTBOX_REDISPATCH_SECONDS``)
  to the reconciler publishing it again.

Run (PostgreSQL as in the README; figures go to BENCHMARKS.md, with the load average printed):
    .venv/bin/python bench/bench_reconciler_backlog.py [--backlog 1000] [--passes 10]
        [--interval 2] [--redispatch 6]   (--interval 30 --redispatch 90: the defaults)
"""

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.waiting import wait_until  # noqa: E402

WAIT = 300.0  # seconds any one step may take before the benchmark gives up
RECEIVED = re.compile(r"Task goldset\.reconcile\[[0-9a-f-]+\] received")
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): ")


def database_url(base: str, name: str) -> str:
    admin = base.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + "/" + name


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stamps(log: Path, pattern: str | re.Pattern) -> list[dt.datetime]:
    found = []
    for line in log.read_text(errors="replace").splitlines():
        match = STAMP.match(line)
        if match and (pattern.search(line) if isinstance(pattern, re.Pattern) else pattern in line):
            found.append(dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f"))
    return found


def load() -> float:
    return round(os.getloadavg()[0], 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backlog", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--interval", type=int, default=2)
    parser.add_argument("--redispatch", type=int, default=6)  # the installation default: 90
    parser.add_argument("--prefix", default="gw_reconciler_bench")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reconciler-bench-"))
    port = free_port()
    redis_url = f"redis://127.0.0.1:{port}/0"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(args.database_url, args.prefix),
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "reconciler-bench",
        "PYTHONUNBUFFERED": "1",  # each log line in its file when it happens
        "RECONCILE_INTERVAL_SECONDS": str(args.interval),
        "OUTBOX_REDISPATCH_SECONDS": str(args.redispatch),
    }
    os.environ.update(env)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, check=True
    )
    procs = [
        subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(work)],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
    ]
    import django

    django.setup()
    import redis
    from django.db import transaction

    from goldset.models import OutboxMessage
    from goldset.rules.jobs import AGREEMENT_OUTBOX_KIND
    from goldset.services import outbox
    from goldset.services.agreement import RECOMPUTE_TASK
    from tests.workbench.worker.holding_app import app, hold

    client = redis.Redis.from_url(redis_url)
    wait_until(lambda: _answers(client), timeout=WAIT, what="redis-server")

    def start(name: str, *celery_args: str) -> Path:
        log = work / f"{name}.log"
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "celery", *celery_args, "--loglevel=INFO"],
                cwd=ROOT,
                env=env,
                stdout=open(log, "wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        return log

    holding = ["-A", "tests.workbench.worker.holding_app", "worker", "--concurrency=1"]
    host = f"bench-{os.getpid()}@{socket.gethostname()}"
    result = {"backlog": args.backlog, "interval_s": args.interval, "load_start": load()}
    try:
        start("jobs", *holding, "-Q", "celery,webhooks", "-n", f"jobs-{host}")
        reconciler_log = start("reconciler", *holding, "-Q", "reconcile", "-n", f"rec-{host}")
        for node in (f"jobs-{host}", f"rec-{host}"):
            wait_until(
                lambda node=node: app.control.ping([node], timeout=0.5), timeout=WAIT, what=node
            )
        for _ in range(args.backlog):
            hold.apply_async((str(work), "backlog"))
        wait_until(
            (work / "backlog.started").exists, timeout=WAIT, what="the jobs worker to be busy"
        )
        result["queued"] = client.llen("celery")
        beat_log = start("beat", "-A", "workbench", "beat", "-s", str(work / "schedule"))
        wait_until(
            lambda: len(stamps(reconciler_log, RECEIVED)) > args.passes,
            timeout=WAIT,
            what=f"{args.passes} reconciler passes",
        )
        sent = stamps(beat_log, "Sending due task reconcile-jobs")
        received = stamps(reconciler_log, RECEIVED)
        # Each send is paired with the first reception not already paired, at or after it (the
        # send is logged once published, so a reception may carry a stamp a few ms before it).
        delays, unpaired = [], list(received)
        for when in sent:
            later = [r for r in unpaired if r >= when - dt.timedelta(milliseconds=500)]
            if later:
                unpaired.remove(later[0])
                delays.append(round((later[0] - when).total_seconds(), 3))
        delays = delays[: args.passes]
        result["passes"] = len(delays)
        result["delay_s"] = {"max": max(delays), "median": sorted(delays)[len(delays) // 2]}
        result["load_delay"] = load()

        with transaction.atomic():
            message = outbox.enqueue(kind=AGREEMENT_OUTBOX_KIND, dedupe_key="bench-lost")
        for raw in client.lrange("celery", 0, -1):
            if json.loads(raw)["headers"]["task"] == RECOMPUTE_TASK:
                client.lrem("celery", 0, raw)
        message.refresh_from_db()
        lost_at = message.dispatched_at + dt.timedelta(seconds=args.redispatch)
        wait_until(
            lambda: OutboxMessage.objects.filter(pk=message.pk, attempts=2).exists(),
            timeout=WAIT,
            what="the lost message to be published again",
        )
        again = OutboxMessage.objects.get(pk=message.pk).dispatched_at
        result["redispatch_s"] = round((again - lost_at).total_seconds(), 3)
        result["still_queued"] = client.llen("celery")
        result["load_end"] = load()
    finally:
        (work / "backlog.release").touch()
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)  # each runs in a session of its own
                proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


def _answers(client) -> bool:
    try:
        return client.ping()
    except Exception:
        return False


if __name__ == "__main__":
    main()
