"""Benchmark (issue 28): OTLP/HTTP traces ingestion, spans per second sustained, with the real
OpenTelemetry SDK exporting (``BatchSpanProcessor`` + ``OTLPSpanExporter``, protobuf) to gunicorn
against PostgreSQL, and a Celery worker mapping and sampling what arrives.

The bench makes a fresh database (``<db-prefix>``; dropped first), migrates it, seeds one project
with a domain, an admin's write token and a sampling rule (``--percentage`` % of traces, seeded),
starts gunicorn (gthread) and a Celery worker, then ``--clients`` processes each run the small
instrumented RAG pipeline of ``tests/goldset/rules/traces_support.py`` (OpenInference; a root
span around it: 5 spans a trace) as fast as they can for ``--duration`` seconds, the SDK's batch
processor exporting in the background (``--batch`` spans a request; its queue is large enough
that no span is dropped). After the clients flush, it reads the stored span count and waits for
the worker to map every trace.

Figures (one JSON line, plus a summary on stderr):
* ``spans_per_s``: spans stored by the receiver ÷ wall time from the clients' start to their
  last export answered (what the SDKs created, ``spans_created``, must equal ``spans_stored``);
* ``mapped_per_s``: traces the worker mapped ÷ time from the clients' start until none waits;
* ``end_to_end_spans_per_s``: spans stored ÷ that same time (every span stored and its trace
  mapped and sampled): the sustained rate, receiver and worker together;
* ``while_sending`` / ``while_mapping``: the 1-minute load average (min, mean, max) and the most
  traces waiting to be mapped, sampled every 2 s (a backlog that stays small: the worker keeps
  up with the receiver);
* the 1-minute load average before, at the end of the clients, and at the end.

Run:  DATABASE_URL=postgres://postgres@127.0.0.1:5432/x REDIS_URL=redis://127.0.0.1:6399/11 \
      /work/main/.venv/bin/python bench/bench_otlp.py [--duration 30] [--clients 2]
"""

import argparse
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SLUG = "bench-otlp"


def admin_url(base: str, db: str) -> str:
    return base.rsplit("/", 1)[0] + "/" + db


def create_database(base_url: str, name: str) -> str:
    with psycopg.connect(admin_url(base_url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url(base_url, name)


def seed(percentage: float) -> dict:
    """In a child whose environment points Django at the bench database."""
    import django

    django.setup()
    from goldset.models import Domain, Project
    from goldset.services.projects import grant_role
    from goldset.services.sampling import create_sampling_rule
    from tests.factories import UserFactory
    from workbench.roles import Role
    from workbench.services.api_tokens import create_api_token

    project = Project.objects.create(name="OTLP bench", slug=SLUG)
    Domain.objects.create(project=project, slug="controls", name="Controls")
    admin = UserFactory(username="bench-admin")
    grant_role(project=project, user=admin, role=Role.ADMIN)
    _, token = create_api_token(user=admin, name="otlp", scope="write", project=project)
    create_sampling_rule(
        project=project,
        actor=admin,
        name="sample",
        kind="percentage",
        percentage=percentage,
        seed=2028,
    )
    return {"token": token}


def client(url: str, token: str, duration: float, batch: int, index: int) -> dict:
    """One application process: pipelines as fast as it can, exported by the SDK."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from tests.goldset.rules.traces_support import SERVICE, run_openinference

    provider = TracerProvider(resource=Resource.create(SERVICE))
    exporter = OTLPSpanExporter(
        endpoint=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=2_000_000,
            max_export_batch_size=batch,
            schedule_delay_millis=200,
        )
    )
    tracer = provider.get_tracer("bench")
    started = time.perf_counter()
    traces = 0
    while time.perf_counter() - started < duration:
        question = f"How are system accounts reviewed, request {index}-{traces}?"
        with tracer.start_as_current_span("request") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            run = run_openinference(tracer, question=question)
            root.set_attribute("output.value", run.answer)
        traces += 1
    generated = time.perf_counter() - started
    # every span queued is exported before the process ends (shutdown alone gives up after
    # 30 s and drops what is left)
    flushed = provider.force_flush(timeout_millis=900_000)
    provider.shutdown()
    return {
        "traces": traces,
        "spans": traces * 5,
        "generated_s": generated,
        "flushed_s": time.perf_counter() - started,
        "flush_complete": flushed,
    }


def wait_for(predicate, *, timeout: float, what: str) -> None:
    """Until ``predicate()`` holds (looked at every 0.5 s), else RuntimeError naming ``what``."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        pause.wait(0.5)
    raise RuntimeError(f"timed out waiting for {what}")


def answers_http(port: int) -> bool:
    import http.client

    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/health/?format=json", headers={"Host": "127.0.0.1"})
        conn.getresponse().read()
        return True
    except OSError:
        return False


def worker_answers(redis_url: str) -> bool:
    """A worker answers a ping on the broker (the settings' broker is ``REDIS_URL``)."""
    from celery import Celery

    return bool(Celery(broker=redis_url).control.ping(timeout=0.5))


class Monitor(threading.Thread):
    """Every ``every`` seconds: the 1-minute load average and the traces waiting to be mapped
    (``pending``), until stopped: whether the mapping kept up while the clients sent."""

    def __init__(self, db_url: str, every: float = 2.0):
        super().__init__(daemon=True)
        self.db_url, self.every = db_url, every
        self.samples: list[tuple[float, float, int]] = []
        self.stopped = threading.Event()
        self.started = time.perf_counter()

    def run(self) -> None:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self.stopped.is_set():
                pending = conn.execute(
                    "SELECT count(*) FROM goldset_receivedtrace WHERE status = 'pending'"
                ).fetchone()[0]
                at = round(time.perf_counter() - self.started, 1)
                self.samples.append((at, os.getloadavg()[0], pending))
                self.stopped.wait(self.every)

    def summary(self, until: float) -> dict:
        """Load and backlog over the samples taken in the first ``until`` seconds."""
        window = [s for s in self.samples if s[0] <= until] or self.samples
        loads = [load for _, load, _ in window]
        return {
            "load_min": round(min(loads), 2),
            "load_mean": round(sum(loads) / len(loads), 2),
            "load_max": round(max(loads), 2),
            "pending_max": max(p for _, _, p in window),
            # (seconds, traces waiting) every 10 s or so: a backlog that levels off, not one
            # that grows until the clients stop
            "pending_trail": [(at, p) for at, _, p in window[:: max(1, round(10 / self.every))]],
        }


def counts(db_url: str) -> dict:
    with psycopg.connect(db_url) as conn:
        spans = conn.execute("SELECT count(*) FROM goldset_receivedspan").fetchone()[0]
        by_status = dict(
            conn.execute(
                "SELECT status, count(*) FROM goldset_receivedtrace GROUP BY status"
            ).fetchall()
        )
        records = conn.execute("SELECT count(*) FROM goldset_answerrecord").fetchone()[0]
    return {"spans": spans, "traces": by_status, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""))
    parser.add_argument("--db-prefix", default="goldset_otlp_bench")
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--batch", type=int, default=512, help="spans per export request")
    parser.add_argument("--percentage", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--port", type=int, default=8641)
    parser.add_argument(
        "--map-wait", type=float, default=900, help="seconds to wait for the mapping at most"
    )
    parser.add_argument("--seed-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--token", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.seed_only:
        print(json.dumps(seed(args.percentage)))
        return
    if args.client >= 0:
        url = f"http://127.0.0.1:{args.port}/api/v1/projects/{SLUG}/otlp/v1/traces"
        print(json.dumps(client(url, args.token, args.duration, args.batch, args.client)))
        return
    if not args.database_url.startswith("postgres") or not args.redis_url:
        sys.exit("DATABASE_URL (PostgreSQL) and REDIS_URL are required")

    db_url = create_database(args.database_url, args.db_prefix)
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "REDIS_URL": args.redis_url,
        "SECRET_KEY": secrets.token_hex(32),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "API_TOKEN_RATE": "100000/min",  # measure the receiver, not the per-token rate limit
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
    }
    python = sys.executable
    subprocess.run(
        [python, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    seeded = subprocess.run(
        [python, __file__, "--seed-only", "--percentage", str(args.percentage)],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    token = json.loads(seeded.stdout.strip().splitlines()[-1])["token"]
    import redis

    redis.Redis.from_url(args.redis_url).flushdb()
    server = subprocess.Popen(
        [
            python, "-m", "gunicorn", "workbench.wsgi:application",
            "--bind", f"127.0.0.1:{args.port}", "--worker-class", "gthread",
            "--workers", str(args.workers), "--threads", str(args.threads),
            "--timeout", "120", "--log-level", "warning",
        ],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    worker = subprocess.Popen(
        [python, "-m", "celery", "-A", "workbench", "worker", "--concurrency=1",
         "--loglevel=WARNING"],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    result = {"clients": args.clients, "duration_s": args.duration, "batch": args.batch}
    try:
        wait_for(lambda: answers_http(args.port), timeout=120, what="gunicorn")
        wait_for(lambda: worker_answers(args.redis_url), timeout=120, what="the celery worker")
        result["load_before"] = os.getloadavg()[0]
        monitor = Monitor(db_url)
        monitor.start()
        started = time.perf_counter()
        clients = [
            subprocess.Popen(
                [python, __file__, "--client", str(n), "--token", token,
                 "--duration", str(args.duration), "--batch", str(args.batch),
                 "--port", str(args.port)],
                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.PIPE, text=True,
            )
            for n in range(args.clients)
        ]  # fmt: skip
        made = [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in clients]
        flushed = time.perf_counter() - started
        result["load_after_clients"] = os.getloadavg()[0]
        stored = counts(db_url)
        result["spans_created"] = sum(m["spans"] for m in made)
        result["flush_complete"] = all(m["flush_complete"] for m in made)
        result["spans_stored"] = stored["spans"]
        result["ingest_s"] = round(flushed, 2)
        result["spans_per_s"] = round(stored["spans"] / flushed, 1)
        print(json.dumps({"ingest": result}), file=sys.stderr, flush=True)
        try:  # an incomplete trace waits for its spans: mapped when none is pending
            wait_for(
                lambda: not counts(db_url)["traces"].get("pending", 0),
                timeout=args.map_wait,
                what="the mapping",
            )
        except RuntimeError:
            pass  # reported below as what was mapped by then
        mapped_s = time.perf_counter() - started
        monitor.stopped.set()
        monitor.join()
        final = counts(db_url)
        traces = sum(final["traces"].values())
        result["traces"] = final["traces"]
        result["records"] = final["records"]
        done = traces - final["traces"].get("pending", 0)
        result["mapped_all_s"] = round(mapped_s, 2)
        result["mapped_per_s"] = round(done / mapped_s, 1)
        # end to end: every span stored and its trace mapped, over the whole time it took
        result["end_to_end_spans_per_s"] = round(stored["spans"] / mapped_s, 1)
        result["while_sending"] = monitor.summary(flushed)
        result["while_mapping"] = monitor.summary(mapped_s)
        result["load_end"] = os.getloadavg()[0]
    finally:
        for process in (server, worker):
            process.terminate()
        for process in (server, worker):
            process.wait(timeout=60)
    print(json.dumps(result))
    print(
        f"{result['spans_per_s']} spans/s stored ({result['spans_stored']} of "
        f"{result['spans_created']} created, {result['ingest_s']} s); traces mapped by "
        f"{result['mapped_all_s']} s ({result['mapped_per_s']} traces/s, "
        f"{result['end_to_end_spans_per_s']} spans/s end to end); at most "
        f"{result['while_sending']['pending_max']} traces waiting while sending; load "
        f"{result['load_before']:.2f} → {result['load_after_clients']:.2f} → "
        f"{result['load_end']:.2f} (mean {result['while_sending']['load_mean']} while sending)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
