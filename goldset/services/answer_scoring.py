"""Scoring RAG answer logs (seed 004 A.5) against a frozen gold version with PROBE.

Question packets are the version's frozen PROBE evidence packets (checksum verified); PCS, caps
and the release gate come from ``scoring.probe.score_answers``, so a job's figures equal
``python -m scoring probe --questions <packets> --answers <log>`` on the same files. Expert
labels (the answer-labeling area's final labels, see :func:`_label_providers`) are passed as
the ``labels`` argument for the label-derived axes, and stored in the reproducibility bundle.
"""

import json
import math
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from goldset.imports.errors import Problems
from goldset.imports.reader import ByteSource, iter_json_lines
from goldset.models import (
    ExportFormat,
    GoldVersion,
    RunFormat,
    RunKind,
    ScoreAggregate,
    ScoringJob,
)
from goldset.services import exports
from goldset.services.pcs_calibrations import probe_config_for
from goldset.services.probe_exports import adjudicated_labels
from goldset.services.scoring_runs import (
    Outcome,
    QueryRow,
    RunRejected,
    ValidatedRun,
    known_block_ids,
    stored_run_file,
)
from scoring.probe import (
    AnswerScore,
    ProbeReport,
    Summariser,
    check_ranks,
    iter_answer_scores,
)
from scoring.stats import bootstrap_ci

MAX_ERRORS = 50


def _label_providers() -> list[Callable]:
    """``fn(version, answers) -> [label dict]`` giving expert labels keyed by question_id +
    system_id: the answer-labeling area's final (majority or adjudicated) labels."""

    return [adjudicated_labels]


def _records(source: ByteSource) -> Iterator[tuple[int, dict]]:
    """Every answer record with its line, read through the import toolkit one line at a time
    (BOM, NUL, NaN, nesting depth checked like every importer). Only read again after
    :func:`_passage_ids` found no problem."""
    return iter_json_lines(source, Problems(limit=MAX_ERRORS), what="answer record")


def _passage_ids(source: ByteSource, name: str) -> set[str]:
    """The passage ids the records retrieve or cite (distinct ids only: one record in memory
    at a time). Raises RunRejected with the toolkit's problems, once the whole file is read."""
    problems = Problems(limit=MAX_ERRORS)
    passages: set[str] = set()
    for _, record in iter_json_lines(source, problems, what="answer record"):
        retrieved = record.get("retrieved_passages")
        if isinstance(retrieved, list):
            passages.update(str(p.get("passage_id")) for p in retrieved if isinstance(p, dict))
        citations = record.get("citations")
        if isinstance(citations, list):
            passages.update(str(c) for c in citations)
    if problems:
        raise _rejected(problems, name)
    return passages


def _rejected(problems, name: str):
    rejection = problems.rejection(name)
    return RunRejected(
        [f"{name}, {line}" for line in rejection.errors], source=name, problems=rejection.problems
    )


def validate_answer_log(*, version: GoldVersion, source: ByteSource, name: str):
    """Validate every answer record of the file ``source`` (read line by line): required
    fields, known question ids (triples of ``version``), known passage ids (corpus blocks),
    ranks (integers ≥ 1, none tied, no passage twice: ``scoring.probe.check_ranks``), latency
    and cost finite and ≥ 0, one record per question and system. Raises RunRejected with
    line-numbered problems.

    The file is read twice, one record in memory at a time: for the passage ids it names
    (looked up at once), then record by record for the checks above."""

    passages = _passage_ids(source, name)
    packets = version_packets(version)
    known_questions = {p["question_id"] for p in packets}
    packet_passages = {
        g["passage_id"] for p in packets for g in [*p["gold_evidence"], *p.get("near_miss", [])]
    }
    known_passages = (
        known_block_ids(sorted(passages - packet_passages), project=version.project)
        | packet_passages
    )
    del passages, packets
    problems: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    n_records = 0
    for lineno, rec in _records(source):
        n_records += 1
        where = f"{name}, line {lineno}"
        qid = rec.get("question_id")
        if not isinstance(qid, str) or not qid:
            problems.append(f"{where}: question_id: missing (expected a triple id)")
            continue
        if qid not in known_questions:
            problems.append(
                f"{where}: unknown question id {qid!r}: not a question of gold version "
                f"v{version.number}"
            )
        key = (qid, str(rec.get("system_id", "")))
        if key in seen:
            problems.append(
                f"{where}: question {qid!r} for system {key[1]!r} already appears on line "
                f"{seen[key]}"
            )
        seen.setdefault(key, lineno)
        retrieved = rec.get("retrieved_passages")
        # One rule for ranks, shared with the library: integers ≥ 1, no rank or passage twice.
        rank_problem = check_ranks(retrieved)
        if rank_problem:
            problems.append(f"{where}: {rank_problem}")
            retrieved = []
        for i, p in enumerate(retrieved):
            if str(p.get("passage_id")) not in known_passages:
                problems.append(
                    f"{where}: retrieved_passages[{i}]: unknown passage id {p.get('passage_id')!r}"
                )
        for key in ("latency_s", "latency_ms", "cost_usd"):
            value = rec.get(key)
            if value is not None and not (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value >= 0
            ):
                problems.append(f"{where}: {key}: expected a finite number ≥ 0, got {value!r}")
        citations = rec.get("citations")
        if not isinstance(citations, list):
            problems.append(f"{where}: citations: expected a list of passage ids")
        else:
            for c in citations:
                if str(c) not in known_passages:
                    problems.append(f"{where}: citations: unknown passage id {c!r}")
        if len(problems) > MAX_ERRORS:
            break
    if problems:
        raise RunRejected(problems[:MAX_ERRORS], source=name)
    return ValidatedRun(
        kind=RunKind.ANSWERS,
        fmt=RunFormat.ANSWERS,
        n_queries=n_records,
        n_rows=n_records,
    )


def version_packets(version: GoldVersion) -> list[dict]:
    stored = version.files.get(format=ExportFormat.PROBE_PACKETS, redacted=False)
    data = exports.read_verified_bytes(stored).decode("utf-8")
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _answers(path: Path) -> Iterator[dict]:
    """The stored log's records, one line in memory at a time."""
    # newline="\n": lines end at LF only, as when the log's text was split before.
    with path.open(encoding="utf-8", newline="\n") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def score_answer_log(*, job: ScoringJob, progress):
    """Score the job's stored answer log with PROBE. The log is read from a temporary copy,
    once per label provider and once to score it, one record at a time. Per answer the job
    keeps only the numbers the system figures and intervals are computed from
    (``scoring.probe.Summariser``: PCS, unsafe probability, components, 8 bytes each, and the
    bootstrap stratum); each answer's result row goes to a temporary file and is read back
    when the results are stored. The figures are ``score_answers``' to the bit."""
    progress.enter("load answer log", 5)
    with stored_run_file(job) as path:
        progress.enter("load gold version", 15)
        packets = version_packets(job.version)
        labels = [
            label
            for provider in _label_providers()
            for label in provider(job.version, _answers(path))
        ]
        progress.enter("PROBE scoring", 30)
        config = probe_config_for(job.calibration)
        strata = dict(job.version.rows.values_list("triple_id", "task_type"))
        summariser = Summariser(config)
        boot_strata: dict[str, list[str]] = {}
        spool = tempfile.TemporaryFile("w+", encoding="utf-8")  # closed by _spooled_rows
        try:
            n_answers = 0
            for answer in iter_answer_scores(
                packets, _answers(path), labels=labels or None, config=config
            ):
                summariser.add(answer)
                # Seed 004 §5.1/A.1: resample within domain x task family (a few distinct
                # strings, shared by every answer of a stratum).
                boot_strata.setdefault(answer.system_id, []).append(
                    sys.intern(f"{answer.domain or ''}|{answer.task_family}")
                )
                spool.write(json.dumps(_answer_row(answer, strata)) + "\n")
                n_answers += 1
            del packets
        except BaseException:
            spool.close()
            raise
    progress.enter("bootstrap", 60)
    systems = summariser.result()
    aggregates = []
    for system_id, summary in systems.items():
        ci = bootstrap_ci(
            summariser.final_pcs(system_id),
            n=job.resamples,
            seed=job.seed,
            strata=boot_strata[system_id],
        )
        stratum = f"system:{system_id}"
        aggregates.append(
            ScoreAggregate(
                job=job,
                stratum=stratum,
                metric="mean_pcs",
                value=summary.mean_pcs,
                ci_low=ci.low,
                ci_high=ci.high,
                n=summary.n_answers,
            )
        )
        for metric, value in (
            ("unsafe_rate", summary.unsafe_rate),
            ("gate_pass_rate", summary.gate_pass_rate),
            *((f"mean {k}", v) for k, v in summary.component_means.items()),
        ):
            aggregates.append(
                ScoreAggregate(
                    job=job, stratum=stratum, metric=metric, value=value, n=summary.n_answers
                )
            )
    return Outcome(
        # Read back from the temporary file while they are stored, one at a time.
        per_query=_spooled_rows(spool),
        aggregates=aggregates,
        summary={
            "systems": ProbeReport([], systems).systems_dict(),
            "n_answers": n_answers,
            "ci_strata": {"by": ["domain", "task_family"]},
            "labels": len(labels),
            "label_records": labels,
            "configuration": job.calibration.label if job.calibration else "PROBE defaults",
        },
    )


def _answer_row(answer: AnswerScore, strata: dict[str, str]) -> list:
    """One answer's result row as JSON-ready values (floats round-trip JSON exactly)."""
    return [
        f"{answer.system_id}/{answer.question_id}",
        answer.domain or "",
        strata.get(answer.question_id, ""),
        {"final_pcs": answer.final_pcs, "raw_pcs": answer.raw_pcs},
        {
            "question_id": answer.question_id,
            "system_id": answer.system_id,
            "caps": answer.caps,
            "families": answer.families,
            "blocking_failures": answer.blocking_failures,
            "passes_gate": answer.passes_gate,
            "unscored_reason": answer.unscored_reason,
            "unsafe_probability": answer.unsafe_probability,
        },
        answer.final_pcs,
    ]


def _spooled_rows(spool) -> Iterator[QueryRow]:
    """The answers' result rows in the report's order, from the temporary file (closed, and
    so deleted, when the rows are read or the generator is dropped)."""
    with spool:
        spool.seek(0)
        for line in spool:
            query_id, domain, task_type, metrics, detail, primary = json.loads(line)
            yield QueryRow(
                query_id=query_id,
                domain=domain,
                task_type=task_type,
                metrics=metrics,
                retrieved=[],
                detail=detail,
                primary=primary,
            )
