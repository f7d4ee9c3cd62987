"""Scoring spread over workers: a large retrieval job is split into pieces that any worker can
do, and merged with figures identical to scoring it in one process.

A job with at least ``SCORING_SPLIT_MIN_QUERIES`` gold queries is split twice:

1. **evaluate** pieces: the gold queries are cut into slices of ``SCORING_CHUNK_QUERIES``
   (code-point order); each piece holds its slice of the qrels and of the run and computes the
   per-query measures (``scoring.io.select_queries`` + ``scoring.retrieval.evaluate``); the
   merge (``scoring.retrieval.merge_results``) concatenates them in the order of ``evaluate``
   and averages them the same way, so per-query values and aggregates are bit-identical;
2. **bootstrap** pieces: one per measure, the same ``bootstrap_ci`` call with the job's seed,
   resamples and strata as the single-process path.

The pieces are rows (:class:`~goldset.models.ScoringChunk`) of the job's current attempt, so the
database is the join: the worker that holds the job offers the pieces to the other workers as a
Celery group (``goldset.score_chunk``), then does every piece nobody has taken itself and waits
for the others (work stealing). No piece is ever waited on forever: a piece whose worker stops
beating for ``JOB_STALE_SECONDS`` is taken back, a lost group message costs nothing (the job's
worker does the piece), and a job whose own worker is lost is requeued by the reconciler from
its heartbeat as usual, its pieces discarded with its claim. With one worker, or in the embedded
eager mode, the same code runs every piece in the job's own process.
"""

import datetime as dt
import io
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from goldset.conf import tunable
from goldset.models import ChunkKind, ChunkStatus, JobStatus, ScoringChunk, ScoringJob
from goldset.services.heartbeat import Heartbeat
from scoring.io import Qrels, Run, arrow_columns, select_queries
from scoring.retrieval import RetrievalResult, evaluate, merge_results
from scoring.stats import bootstrap_ci
from workbench.dispatch import offer_group

logger = logging.getLogger(__name__)

# The Celery task that does one piece (goldset.tasks.score_chunk_task).
SCORE_CHUNK_TASK = "goldset.score_chunk"
# How often the job's worker looks for pieces to do or finished ones while it waits.
POLL_SECONDS = 0.2


def should_split(*, n_queries: int) -> bool:
    """A job is split when it has at least ``SCORING_SPLIT_MIN_QUERIES`` gold queries and more
    than one piece's worth of them."""
    return n_queries >= tunable("SCORING_SPLIT_MIN_QUERIES") and n_queries > chunk_queries()


def chunk_queries() -> int:
    return max(1, tunable("SCORING_CHUNK_QUERIES"))


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


# ------------------------------------------------------------------ encoding of the pieces


def _arrow_bytes(**columns) -> bytes:
    table = pa.table(columns)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _arrow_table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def _pack(*parts: bytes) -> bytes:
    """Several byte strings in one field: each preceded by its length (8 bytes)."""
    return b"".join(len(part).to_bytes(8, "big") + part for part in parts)


def _unpack(data: bytes) -> list[bytes]:
    parts, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 8], "big")
        parts.append(data[at + 8 : at + 8 + size])
        at += 8 + size
    return parts


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _from_npz(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as loaded:
        return {name: loaded[name] for name in loaded.files}


def _evaluate_inputs(qrels: Qrels, run: Run) -> tuple[bytes, dict]:
    inputs = _pack(_arrow_bytes(**arrow_columns(run)), _arrow_bytes(**arrow_columns(qrels)))
    meta = {
        "queries": [str(q) for q in qrels.queries.tolist()],
        "cutoffs": qrels.cutoffs or {},
        "default_k": qrels.default_k,
    }
    return inputs, meta


def _evaluate_piece(chunk: ScoringChunk) -> bytes:
    run_part, qrels_part = (_arrow_table(part) for part in _unpack(bytes(chunk.inputs)))
    meta = chunk.meta
    qrels = Qrels(
        qrels_part["query_id"],
        qrels_part["doc_id"],
        qrels_part["relevance"].to_numpy(),
        meta["queries"],
        cutoffs=meta["cutoffs"] or None,
        default_k=meta["default_k"],
    )
    run = Run(run_part["query_id"], run_part["doc_id"], run_part["score"].to_numpy())
    result = evaluate(qrels, run, k=meta["k"], metrics=meta["metrics"], all_queries=True)
    labels = list(result.per_query)
    return _npz(
        query_ids=np.asarray(result.query_ids.tolist(), dtype=str),
        labels=np.asarray(labels, dtype=str),
        **{f"m{i}": result.per_query[label] for i, label in enumerate(labels)},
    )


def _result_of_piece(data: bytes, meta: dict) -> RetrievalResult:
    arrays = _from_npz(data)
    labels = arrays["labels"].tolist()
    return RetrievalResult(
        query_ids=np.asarray(arrays["query_ids"].tolist(), dtype=object),
        per_query={label: arrays[f"m{i}"] for i, label in enumerate(labels)},
        aggregate={},
        k=meta["k"],
        all_queries=True,
    )


def _bootstrap_piece(chunk: ScoringChunk) -> bytes:
    arrays = _from_npz(bytes(chunk.inputs))
    strata = None
    if "strata_codes" in arrays:
        strata = np.asarray(chunk.meta["strata"], dtype=object)[arrays["strata_codes"]]
    ci = bootstrap_ci(
        arrays["values"], n=chunk.meta["resamples"], seed=chunk.meta["seed"], strata=strata
    )
    return _npz(interval=np.asarray([ci.low, ci.high], dtype=np.float64))


PIECES: dict[str, Callable[[ScoringChunk], bytes]] = {
    ChunkKind.EVALUATE: _evaluate_piece,
    ChunkKind.BOOTSTRAP: _bootstrap_piece,
}


# ------------------------------------------------------------------ the job's worker


def evaluate_split(
    *,
    job: ScoringJob,
    claim: str,
    qrels: Qrels,
    run: Run,
    metrics: list[str],
    still_mine: Callable[[float], None],
) -> RetrievalResult:
    """Per-query measures of ``run`` against ``qrels`` (all gold queries, like ``evaluate(...,
    all_queries=True)``), computed in pieces by every worker that takes one and merged."""
    queries = sorted({str(q) for q in qrels.queries.tolist()})
    size = chunk_queries()
    pieces = []
    for index, start in enumerate(range(0, len(queries), size)):
        wanted = queries[start : start + size]
        inputs, meta = _evaluate_inputs(select_queries(qrels, wanted), select_queries(run, wanted))
        meta.update(k=job.k, metrics=list(metrics))
        pieces.append((index, "", len(wanted), inputs, meta))
    done = _split(
        job=job, claim=claim, kind=ChunkKind.EVALUATE, pieces=pieces, still_mine=still_mine
    )
    return merge_results([_result_of_piece(result, meta) for result, meta in done])


def bootstrap_split(
    *,
    job: ScoringJob,
    claim: str,
    per_query: dict[str, np.ndarray],
    strata: list[str] | None,
    still_mine: Callable[[float], None],
) -> dict[str, Interval]:
    """``bootstrap_ci`` of every measure (the job's resamples, seed and strata), one piece per
    measure."""
    extra, meta = {}, {"resamples": job.resamples, "seed": job.seed}
    if strata is not None:
        distinct = sorted(set(strata))
        code = {label: i for i, label in enumerate(distinct)}
        extra["strata_codes"] = np.asarray([code[s] for s in strata], dtype=np.int64)
        meta["strata"] = distinct
    pieces = [
        (index, label, len(values), _npz(values=np.asarray(values, np.float64), **extra), meta)
        for index, (label, values) in enumerate(per_query.items())
    ]
    done = _split(
        job=job, claim=claim, kind=ChunkKind.BOOTSTRAP, pieces=pieces, still_mine=still_mine
    )
    labels = list(per_query)
    out = {}
    for label, (result, _) in zip(labels, done, strict=True):
        low, high = _from_npz(result)["interval"].tolist()
        out[label] = Interval(low, high)
    return out


def _split(*, job, claim, kind, pieces, still_mine) -> list[tuple[bytes, dict]]:
    """Store the pieces, offer them to the other workers, do what nobody took, wait for the
    rest; returns ``(result, meta)`` of every piece in index order."""
    with transaction.atomic():
        # Pieces of earlier attempts are dead (their claim is gone): drop them with their inputs.
        ScoringChunk.objects.filter(job=job).exclude(claim=claim).delete()
        ScoringChunk.objects.filter(job=job, claim=claim, kind=kind).delete()
        ScoringChunk.objects.bulk_create(
            ScoringChunk(
                job=job,
                claim=claim,
                kind=kind,
                index=index,
                label=label,
                size=size,
                inputs=inputs,
                meta=meta,
            )
            for index, label, size, inputs, meta in pieces
        )
    offer_group(SCORE_CHUNK_TASK, [[job.pk, claim, kind, index] for index, *_ in pieces])
    total, pause = len(pieces), threading.Event()
    while True:
        open_pieces = (
            ScoringChunk.objects.filter(job=job, claim=claim, kind=kind)
            .exclude(status=ChunkStatus.DONE)
            .count()
        )
        still_mine((total - open_pieces) / total)
        if not open_pieces:
            break
        if run_chunk(job_id=job.pk, claim=claim, kind=kind, worker=job.worker, heartbeat=False):
            continue
        pause.wait(POLL_SECONDS)
    return list(
        ScoringChunk.objects.filter(job=job, claim=claim, kind=kind)
        .order_by("index")
        .values_list("result", "meta")
    )


# ------------------------------------------------------------------ any worker


def run_chunk(
    *,
    job_id: int,
    claim: str,
    kind: str,
    index: int | None = None,
    worker: str = "",
    heartbeat: bool = False,
) -> bool:
    """Do one piece of the job's current attempt: piece ``index``, or (``None``) the first one
    nobody holds. Returns False when there is none to take (done, held by a live worker, or the
    job's attempt is over). A failing piece is handed back with its error, for the job's own
    worker to redo (and fail the job with the message if it fails again)."""
    piece = _claim_piece(job_id=job_id, claim=claim, kind=kind, index=index, worker=worker)
    if piece is None:
        return False
    beat = None
    if heartbeat:
        beat = Heartbeat(
            f"chunk-{piece.pk}",
            lambda: ScoringChunk.objects.filter(
                pk=piece.pk, chunk_claim=piece.chunk_claim, status=ChunkStatus.RUNNING
            ),
        )
        beat.start()
    started = time.perf_counter()
    try:
        result = PIECES[piece.kind](piece)
    except Exception as exc:
        _hand_back(piece, error=f"{type(exc).__name__}: {exc}")
        if not heartbeat:
            raise  # the job's own worker: the job fails with this message
        logger.exception("piece %s of scoring job %s failed on %s", piece.index, job_id, worker)
        return True
    finally:
        if beat is not None:
            beat.stop()
    ScoringChunk.objects.filter(
        pk=piece.pk, chunk_claim=piece.chunk_claim, status=ChunkStatus.RUNNING
    ).update(
        status=ChunkStatus.DONE,
        result=result,
        seconds=round(time.perf_counter() - started, 3),
        heartbeat_at=timezone.now(),
    )
    return True


def _claim_piece(*, job_id, claim, kind, index, worker) -> ScoringChunk | None:
    now = timezone.now()
    stale_before = now - dt.timedelta(seconds=tunable("JOB_STALE_SECONDS"))
    with transaction.atomic():
        if not ScoringJob.objects.filter(pk=job_id, claim=claim, status=JobStatus.RUNNING).exists():
            return None
        pieces = ScoringChunk.objects.select_for_update(skip_locked=True).filter(
            Q(status=ChunkStatus.QUEUED)
            | Q(status=ChunkStatus.RUNNING, heartbeat_at__lt=stale_before),
            job_id=job_id,
            claim=claim,
            kind=kind,
        )
        if index is not None:
            pieces = pieces.filter(index=index)
        piece = pieces.order_by("index").first()
        if piece is None:
            return None
        piece.status, piece.worker, piece.heartbeat_at = ChunkStatus.RUNNING, worker, now
        piece.chunk_claim = uuid.uuid4().hex
        piece.save(update_fields=["status", "worker", "heartbeat_at", "chunk_claim"])
    return piece


def _hand_back(piece: ScoringChunk, *, error: str) -> None:
    meta = {**piece.meta, "error": error[:1000]}
    ScoringChunk.objects.filter(
        pk=piece.pk, chunk_claim=piece.chunk_claim, status=ChunkStatus.RUNNING
    ).update(status=ChunkStatus.QUEUED, chunk_claim="", meta=meta)


def split_summary(job: ScoringJob, claim: str) -> dict:
    """What the job page and the bundle say about the split: pieces and who did them."""
    rows = list(
        ScoringChunk.objects.filter(job=job, claim=claim).values_list("kind", "worker", "seconds")
    )
    if not rows:
        return {}
    return {
        "pieces": {kind: sum(1 for k, _, _ in rows if k == kind) for kind in ChunkKind.values},
        "workers": sorted({w for _, w, _ in rows if w}),
        "piece_seconds": round(sum(s or 0.0 for _, _, s in rows), 3),
    }


def discard_pieces(job: ScoringJob) -> None:
    """Drop a job's pieces (its inputs are a copy of the run) once the job has ended."""
    ScoringChunk.objects.filter(job=job).delete()
