"""Downloads of a scoring job: per-query CSV, results JSON and the reproducibility bundle.

The bundle (seed 004 §6.4 / Table 9) is one zip holding the version manifest, the frozen gold
file the job scored against (and its PROBE packets for answer logs), the uploaded run, the
results, and ``README.txt`` with the exact ``python -m scoring`` command that recomputes them.
Every stored file is checksum-verified before it goes into the bundle.
"""

import csv
import io
import json
import tempfile
import time
import zipfile
from collections.abc import Iterator

from goldset.models import ExportFormat, RunKind, ScoringJob
from goldset.selectors.exports import iter_query_results
from goldset.services import exports
from goldset.services.scoring_jobs import reproduce_command, strata_csv
from goldset.services.scoring_runs import iter_run_chunks
from workbench.csv_safety import csv_safe_row


def results_csv(job: ScoringJob) -> Iterator[bytes]:
    """One row per query (or answer): ids, domain, task family, every metric."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    metrics = None
    for qid, domain, task_type, values, _retrieved, _detail in iter_query_results(job):
        if metrics is None:
            metrics = sorted(values)
            writer.writerow(["query_id", "domain", "task_type", *metrics])
        writer.writerow(csv_safe_row([qid, domain, task_type, *(values.get(m) for m in metrics)]))
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")


def results_document(job: ScoringJob, *, per_query: bool = True) -> dict:
    aggregates = [
        {
            "stratum": a.stratum,
            "metric": a.metric,
            "value": a.value,
            "ci": [a.ci_low, a.ci_high] if a.ci_low is not None else None,
            "n": a.n,
        }
        for a in job.aggregates.order_by("stratum", "metric")
    ]
    doc = {
        "job": job.pk,
        "name": job.name,
        "kind": job.kind,
        "gold_version": job.version.number,
        "gold_rows_sha256": job.version.rows_sha256,
        "run_filename": job.run_filename,
        "run_format": job.run_format,
        "run_sha256": job.run_sha256,
        "scorer_version": job.scorer_version,
        "k": job.k,
        "metrics": job.metrics,
        "seed": job.seed,
        "resamples": job.resamples,
        "status": job.status,
        "stage_timings": job.stage_timings,
        "summary": job.summary,
        "aggregates": aggregates,
        "reproduce": reproduce_command(job),
    }
    if per_query:
        doc["per_query"] = {
            qid: {"domain": d, "task_type": t, "metrics": m, **({"detail": det} if det else {})}
            for qid, d, t, m, _r, det in iter_query_results(job)
        }
    return doc


def results_json(job: ScoringJob) -> Iterator[bytes]:
    yield json.dumps(results_document(job), indent=1, sort_keys=True).encode("utf-8")


def bundle_zip(job: ScoringJob) -> Iterator[bytes]:
    """The reproducibility bundle as a zip, spooled (constant memory for large runs)."""
    version = job.version
    files = {(f.format, f.redacted): f for f in version.files.all()}
    spool = tempfile.SpooledTemporaryFile(max_size=16 * exports.CHUNK_SIZE)
    with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        gold = files[(ExportFormat.GOLD_JSONL, False)]
        with bundle.open(f"goldset-v{version.number}-gold.jsonl", "w") as out:
            for chunk in exports.verified_chunks(gold):
                out.write(chunk)
        manifest = files[(ExportFormat.MANIFEST, False)]
        bundle.writestr("manifest.json", exports.read_verified_bytes(manifest))
        if job.kind == RunKind.ANSWERS:
            packets = files[(ExportFormat.PROBE_PACKETS, False)]
            with bundle.open("probe-questions-packets.jsonl", "w") as out:
                for chunk in exports.verified_chunks(packets):
                    out.write(chunk)
            labels = (job.summary or {}).get("label_records") or []
            bundle.writestr(
                "labels.jsonl", "".join(exports.canonical_json(r) + "\n" for r in labels)
            )
        else:
            bundle.writestr("strata.csv", strata_csv(job))
        with bundle.open(_entry(job.run_filename), "w") as out:
            # Checksum verified as the last chunk is read; a mismatch raises before the
            # bundle is served.
            for chunk in iter_run_chunks(job):
                out.write(chunk)
        bundle.writestr("results.json", json.dumps(results_document(job), indent=1, sort_keys=True))
        bundle.writestr("README.txt", _readme(job))
    spool.seek(0)
    while data := spool.read(exports.CHUNK_SIZE):
        yield data
    spool.close()


def _entry(name: str) -> zipfile.ZipInfo:
    """The entry ``ZipFile.writestr`` would make for ``name`` (date, rw------- mode), for
    writing it as a stream."""
    info = zipfile.ZipInfo(name, date_time=time.localtime(time.time())[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o600 << 16
    return info


def _readme(job: ScoringJob) -> str:
    return (
        f"Reproducibility bundle for scoring job {job.pk} ({job.name})\n\n"
        f"Gold version: v{job.version.number}, rows sha256 {job.version.rows_sha256}\n"
        f"Run: {job.run_filename}, sha256 {job.run_sha256}\n"
        f"Scorer: {job.scorer_version}; k={job.k}; bootstrap seed {job.seed}, "
        f"{job.resamples} resamples\n"
        + (f"Measures: {', '.join(job.metrics)}\n" if job.metrics else "")
        + "\n"
        "Recompute every figure in results.json (aggregate, ci, per_query) with:\n\n"
        f"    {reproduce_command(job)}\n"
    )
