"""Profile the OTLP traces path in process (issue 28): the receiver's store stage
(:func:`goldset.services.traces.receive_spans`) and the worker's mapping task
(:func:`goldset.services.traces.map_pending_traces`), on the spans of ``bench/bench_otlp.py``'s
pipeline (OpenInference, 5 spans a trace), with a 10 % percentage sampling rule as the bench seeds.

The spans are made once with the real SDK (an in-memory exporter), encoded as 512-span protobuf
requests and decoded by the receiver's decoder; then every request is stored, and the project's
traces are mapped, each stage timed (and with ``--profile`` run under ``cProfile``, the top
functions by cumulative time printed).

Run:  DATABASE_URL=postgres://postgres@127.0.0.1:5432/x REDIS_URL=redis://127.0.0.1:6399/11 \\
      /work/main/.venv/bin/python bench/profile_otlp_mapping.py [--traces 2000] [--profile]
The database is dropped and made again (migrated) unless ``--reuse``.
"""

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_otlp import SLUG, create_database  # noqa: E402


def make_requests(traces: int, batch: int) -> list[bytes]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.goldset.rules.traces_support import SERVICE, protobuf_body, run_openinference

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create(SERVICE))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    for n in range(traces):
        question = f"How are system accounts reviewed, request 0-{n}?"
        with tracer.start_as_current_span("request") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            run = run_openinference(tracer, question=question)
            root.set_attribute("output.value", run.answer)
    spans = list(exporter.get_finished_spans())
    return [protobuf_body(spans[i : i + batch]) for i in range(0, len(spans), batch)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--db-name", default="goldset_otlp_profile")
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--percentage", type=float, default=10.0)
    parser.add_argument("--profile", action="store_true", help="run each stage under cProfile")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--reuse", action="store_true", help="keep the database (migrated)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.child:
        base = args.database_url
        if not base.startswith("postgres"):
            sys.exit("DATABASE_URL (PostgreSQL) is required")
        db_url = base.rsplit("/", 1)[0] + "/" + args.db_name
        env = {**os.environ, "DATABASE_URL": db_url, "DEBUG": "false", "LOG_LEVEL": "WARNING"}
        env.setdefault("SECRET_KEY", "profile-" + "x" * 40)
        if not args.reuse:
            create_database(base, args.db_name)
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
                cwd=ROOT,
                env=env,
                check=True,
            )
        os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:], "--child"], env)
    run(args)


def run(args) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from goldset.models import Domain, Project
    from goldset.services import outbox
    from goldset.services.sampling import create_sampling_rule
    from goldset.services.traces import map_pending_traces, receive_spans
    from goldset.traces.decode import PROTOBUF, decode_export_request

    # the mapping is called here, not queued: no broker is needed
    outbox.enqueue = lambda **kwargs: None
    project = Project.objects.filter(slug=SLUG).first()
    if project is None:
        project = Project.objects.create(name="OTLP profile", slug=SLUG)
        Domain.objects.create(project=project, slug="controls", name="Controls")
        create_sampling_rule(
            project=project,
            actor=None,
            name="sample",
            kind="percentage",
            percentage=args.percentage,
            seed=2028,
        )

    made = time.perf_counter()
    bodies = make_requests(args.traces, args.batch)
    print(f"{len(bodies)} requests made in {time.perf_counter() - made:.1f} s", file=sys.stderr)
    decoded = [decode_export_request(b, content_type=PROTOBUF) for b in bodies]
    spans = sum(len(d.spans) for d in decoded)

    def stage(name, work):
        profiler = cProfile.Profile() if args.profile else None
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            result = work()
            if profiler:
                profiler.disable()
            seconds = time.perf_counter() - started
        line = {
            "stage": name,
            "seconds": round(seconds, 2),
            "spans_per_s": round(spans / seconds, 1),
            "queries": len(queries),
            "load_1min": os.getloadavg()[0],
        }
        print(json.dumps(line))
        if profiler:
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(args.top)
        return result

    stage("receive", lambda: [receive_spans(project=project, decoded=d) for d in decoded])
    summary = stage("map", lambda: map_pending_traces(project_id=project.pk))
    print(json.dumps({"traces": args.traces, "spans": spans, "mapping": summary}))


if __name__ == "__main__":
    main()
