"""``goldset`` (or ``python -m goldset_client``): the client's calls for CI scripts.

    goldset score --version release-2026q4 --run run.jsonl --fail-on-gate
    goldset gate --version 7 --run run.jsonl --rules gate.rules --baseline-system bm25 \
        --markdown gate.md --junit gate.xml --json gate.json

The server and token come from ``--url``/``--token`` or ``GOLDSET_URL``/``GOLDSET_TOKEN``; the
project from ``--project`` or ``GOLDSET_PROJECT`` (the server's default project without one).
Exit codes: 0 done (and, with ``--fail-on-gate``, the release gate passed; for ``gate``, every
rule passed); 1 the release gate or a rule failed; 2 a usage, rules file, API or job error (the
problem is printed to stderr). The rules file's format: :mod:`goldset_client.gate`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from goldset_client import gate
from goldset_client.client import GoldsetClient
from goldset_client.errors import ApiError, GoldsetClientError, NotFound, Unprocessable
from goldset_client.models import Progress, ScoreResult

EXIT_OK, EXIT_GATE_FAILED, EXIT_ERROR = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="goldset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", default=os.environ.get("GOLDSET_URL", ""))
    parser.add_argument("--token", default=os.environ.get("GOLDSET_TOKEN", ""))
    parser.add_argument(
        "--project",
        default=os.environ.get("GOLDSET_PROJECT") or None,
        help="the project's slug (default: the server's default project)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait in all")
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score a run against a gold version")
    score.add_argument(
        "--version", default="latest", help="a version number (7, v7), a tag or 'latest'"
    )
    score.add_argument("--run", required=True, help="the run file (JSONL, TREC or answer log)")
    score.add_argument("--name", default="")
    score.add_argument("--k", type=int, default=10)
    score.add_argument(
        "--fail-on-gate", action="store_true", help="exit 1 when the release gate fails"
    )

    add_gate_arguments(
        commands.add_parser(
            "gate",
            help="score a run, compare it with a baseline and check a rules file (CI)",
            description=gate.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    )

    commands.add_parser("latest", help="print the latest gold version")

    freeze = commands.add_parser("freeze", help="freeze the curated gold set as a new version")
    for name in ("domain", "tier", "source", "working-slice", "note"):
        freeze.add_argument(f"--{name}", default="")
    freeze.add_argument("--public-only", action="store_true")
    freeze.add_argument("--include-superseded", action="store_true")

    download = commands.add_parser("download", help="download a version's file, checksummed")
    download.add_argument(
        "--version", default="latest", help="a version number (7, v7), a tag or 'latest'"
    )
    download.add_argument("--format", default="gold_jsonl")
    download.add_argument("--dest", default=".")

    push = commands.add_parser("push-answers", help="import an answer log")
    push.add_argument("file")
    return parser


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """The gate's options (``goldset gate`` and ``manage.py gate`` take the same)."""
    parser.add_argument(
        "--version",
        required=True,
        help="the gold version: a tag (release-2026q4), a number (7, v7) or latest",
    )
    parser.add_argument("--run", required=True, help="the run file (JSONL, TREC or answer log)")
    parser.add_argument("--rules", required=True, help="the rules file (see above)")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", type=int, metavar="JOB", help="the baseline's job id")
    baseline.add_argument(
        "--baseline-system",
        metavar="SYSTEM",
        help="the baseline is this system's latest succeeded job on the version",
    )
    parser.add_argument("--name", default="", help="the job's name (default: the file's)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--markdown", metavar="PATH", help="write a Markdown summary here")
    parser.add_argument("--junit", metavar="PATH", help="write JUnit XML here")
    parser.add_argument("--json", metavar="PATH", help="write the JSON report here")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rules = None
    if args.command == "gate":
        has_baseline = args.baseline is not None or bool(args.baseline_system)
        try:
            rules = gate.load_gate_rules(args.rules, has_baseline=has_baseline)
        except gate.RulesError as exc:
            print(f"error: bad rules file\n{exc}", file=sys.stderr)
            return EXIT_ERROR
    if not args.url or not args.token:
        print("error: give --url and --token (or GOLDSET_URL and GOLDSET_TOKEN)", file=sys.stderr)
        return EXIT_ERROR
    try:
        with GoldsetClient(args.url, args.token, project=args.project) as client:
            if rules is not None:
                return _gate(client, args, rules)
            return _run(client, args)
    except ApiError as exc:
        _print({"error": exc.title, "status": exc.status, "detail": exc.detail,
                "errors": [asdict(e) for e in exc.errors]}, stream=sys.stderr)  # fmt: skip
        return EXIT_ERROR
    except (GoldsetClientError, OSError) as exc:
        _print({"error": type(exc).__name__, "detail": str(exc)}, stream=sys.stderr)
        return EXIT_ERROR


def _run(client: GoldsetClient, args: argparse.Namespace) -> int:
    if args.command == "latest":
        latest = client.latest_version()
        _print(asdict(latest) if latest else None)
        return EXIT_OK
    if args.command == "freeze":
        result = client.freeze(
            domain=args.domain,
            tier=args.tier,
            source=args.source,
            working_slice=args.working_slice,
            note=args.note,
            public_only=args.public_only,
            include_superseded=args.include_superseded,
        )
        _print(asdict(result))
        return EXIT_OK
    if args.command == "download":
        done = client.download_version(args.version, args.format, args.dest)
        _print({**asdict(done), "path": str(done.path)})
        return EXIT_OK
    if args.command == "push-answers":
        _print(asdict(client.push_answers(args.file, timeout=args.timeout)))
        return EXIT_OK
    scored = client.score_run(
        args.version, args.run, name=args.name, k=args.k, timeout=args.timeout
    )
    gate = scored.release_gate
    _print(
        {
            "job": scored.job_id,
            "version": scored.version,
            "kind": scored.kind,
            "status": scored.status,
            "overall": {a.metric: a.value for a in scored.aggregates if a.stratum == "all"},
            "release_gate": asdict(gate) if gate else None,
        }
    )
    if args.fail_on_gate and gate is not None and not gate.passed:
        print("release gate FAILED:\n  " + "\n  ".join(gate.reasons), file=sys.stderr)
        return EXIT_GATE_FAILED
    if args.fail_on_gate and gate is None:
        print(f"no release gate: a {scored.kind} run is not gated", file=sys.stderr)
    return EXIT_OK


def _gate(client: GoldsetClient, args: argparse.Namespace, rules: list[gate.Rule]) -> int:
    """Score the run (progress on stderr), find the baseline, compare, evaluate, write."""
    result = client.score_run(
        args.version,
        args.run,
        name=args.name or Path(args.run).name,
        k=args.k,
        timeout=args.timeout,
        progress=progress_printer(),
    )
    print(f"scored: job #{result.job_id} on v{result.version}", file=sys.stderr)
    baseline, problem = _baseline(client, result, args)
    comparison = None
    if baseline is not None and baseline.job_id != result.job_id:
        try:
            comparison = client.compare_jobs([baseline.job_id, result.job_id]).raw
        except Unprocessable as exc:
            problem = exc.detail or exc.title
    report = gate.evaluate(
        rules,
        candidate=figures(result),
        baseline=figures(baseline) if baseline is not None else None,
        comparison=comparison,
        version=args.version,
        baseline_problem=problem,
    )
    return finish(report, args)


def _baseline(
    client: GoldsetClient, result: ScoreResult, args: argparse.Namespace
) -> tuple[ScoreResult | None, str]:
    if args.baseline is not None:
        try:
            job = client.get_job(args.baseline)
        except NotFound:
            return None, f"there is no scoring job #{args.baseline} in this project"
        if job.status != "succeeded":
            return None, f"baseline job #{job.job_id} is {job.status}, not succeeded"
        if job.version != result.version:
            return None, (
                f"baseline job #{job.job_id} was scored on v{job.version}, the run on "
                f"v{result.version}: a paired test needs the same gold version"
            )
        return job, ""
    if args.baseline_system:
        jobs = client.list_jobs(
            version=result.version, system=args.baseline_system, status="succeeded", page_size=5
        )
        found = next((j for j in jobs if j.job_id != result.job_id), None)
        if found is None:
            return None, (
                f"system {args.baseline_system!r} has no other succeeded scoring job on "
                f"v{result.version} to compare with"
            )
        return client.get_job(found.job_id), ""
    return None, ""


def figures(result: ScoreResult) -> gate.Figures:
    """A finished job's figures as the rules read them."""
    gate_json = asdict(result.release_gate) if result.release_gate is not None else None
    return gate.Figures.from_rows(
        job_id=result.job_id,
        name=result.name,
        version=result.version,
        kind=result.kind,
        rows=result.aggregates,
        release_gate=gate_json,
    )


def finish(report: gate.GateReport, args: argparse.Namespace, *, stdout=None, stderr=None) -> int:
    """Write the outputs asked for, print the JSON report (stdout) and a line per rule
    (stderr); the exit code."""
    gate.write_outputs(report, markdown=args.markdown, junit=args.junit, json_path=args.json)
    print(gate.to_json(report), end="", file=stdout or sys.stdout)
    print("\n".join(gate.summary_lines(report)), file=stderr or sys.stderr)
    return report.exit_code


def progress_printer(stream=None):
    """A progress callback printing each stage's percent to stderr as it moves (uploads in
    steps of 10 %)."""
    last: dict[str, int] = {}

    def show(p: Progress) -> None:
        if p.total:
            percent = min(100, int(100 * p.done / p.total))
        else:
            percent = p.done
        step = 10 if p.stage in ("upload", "download") else 1
        before = last.get(p.stage)
        if before is not None and (percent - before < step and percent != 100 or percent == before):
            return
        last[p.stage] = percent
        print(f"{p.stage}: {percent}%", file=stream or sys.stderr, flush=True)

    return show


def _print(data: Any, *, stream=None) -> None:
    print(json.dumps(data, indent=2, default=str), file=stream or sys.stdout)
