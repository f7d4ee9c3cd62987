"""``python -m goldset_client``: the client's calls for CI scripts.

    python -m goldset_client score --version latest --run run.jsonl --fail-on-gate

The server and token come from ``--url``/``--token`` or ``GOLDSET_URL``/``GOLDSET_TOKEN``; the
project from ``--project`` or ``GOLDSET_PROJECT`` (the server's default project without one).
Exit codes: 0 done (and, with ``--fail-on-gate``, the release gate passed); 1 the release gate
failed; 2 a usage, API or job error (the problem is printed to stderr)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from goldset_client.client import GoldsetClient
from goldset_client.errors import ApiError, GoldsetClientError

EXIT_OK, EXIT_GATE_FAILED, EXIT_ERROR = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m goldset_client",
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
    score.add_argument("--version", default="latest", help="a version number or 'latest'")
    score.add_argument("--run", required=True, help="the run file (JSONL, TREC or answer log)")
    score.add_argument("--name", default="")
    score.add_argument("--k", type=int, default=10)
    score.add_argument(
        "--fail-on-gate", action="store_true", help="exit 1 when the release gate fails"
    )

    commands.add_parser("latest", help="print the latest gold version")

    freeze = commands.add_parser("freeze", help="freeze the curated gold set as a new version")
    for name in ("domain", "tier", "source", "working-slice", "note"):
        freeze.add_argument(f"--{name}", default="")
    freeze.add_argument("--public-only", action="store_true")
    freeze.add_argument("--include-superseded", action="store_true")

    download = commands.add_parser("download", help="download a version's file, checksummed")
    download.add_argument("--version", default="latest")
    download.add_argument("--format", default="gold_jsonl")
    download.add_argument("--dest", default=".")

    push = commands.add_parser("push-answers", help="import an answer log")
    push.add_argument("file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.url or not args.token:
        print("error: give --url and --token (or GOLDSET_URL and GOLDSET_TOKEN)", file=sys.stderr)
        return EXIT_ERROR
    try:
        with GoldsetClient(args.url, args.token, project=args.project) as client:
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
    result = client.score_run(
        args.version, args.run, name=args.name, k=args.k, timeout=args.timeout
    )
    gate = result.release_gate
    _print(
        {
            "job": result.job_id,
            "version": result.version,
            "kind": result.kind,
            "status": result.status,
            "overall": {a.metric: a.value for a in result.aggregates if a.stratum == "all"},
            "release_gate": asdict(gate) if gate else None,
        }
    )
    if args.fail_on_gate and gate is not None and not gate.passed:
        print("release gate FAILED:\n  " + "\n  ".join(gate.reasons), file=sys.stderr)
        return EXIT_GATE_FAILED
    if args.fail_on_gate and gate is None:
        print(f"no release gate: a {result.kind} run is not gated", file=sys.stderr)
    return EXIT_OK


def _print(data: Any, *, stream=None) -> None:
    print(json.dumps(data, indent=2, default=str), file=stream or sys.stdout)
