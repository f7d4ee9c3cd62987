"""What validating and scoring a run share across run kinds (retrieval runs in
:mod:`goldset.services.scoring_jobs`, answer logs in :mod:`goldset.services.answer_scoring`): the
rejection error, the validation and scoring results, and reading a stored run back."""

from dataclasses import dataclass, field

from goldset.exceptions import ImportRejected
from goldset.models import Block, ScoreAggregate, ScoringJob
from goldset.services import exports


class RunRejected(ImportRejected):
    """An uploaded run was rejected as a whole; no job was created."""


@dataclass(frozen=True)
class ValidatedRun:
    kind: str
    fmt: str
    n_queries: int
    n_rows: int


def known_block_ids(wanted: list[str]) -> set[str]:
    if len(wanted) <= 20_000:
        return set(Block.objects.filter(block_id__in=wanted).values_list("block_id", flat=True))
    return set(Block.objects.values_list("block_id", flat=True).iterator(10_000))


def read_run_bytes(job: ScoringJob) -> bytes:
    data = b"".join(
        bytes(chunk) for chunk in job.run_chunks.order_by("index").values_list("data", flat=True)
    )
    if exports.sha256_bytes(data) != job.run_sha256:
        raise exports.ChecksumMismatch(
            f"the stored run of job {job.pk} does not match its sha256 {job.run_sha256}"
        )
    return data


@dataclass(slots=True)
class QueryRow:
    """One per-query (or per-answer) result before it is stored as a ScoreQueryResult."""

    query_id: str
    domain: str
    task_type: str
    metrics: dict
    retrieved: list
    primary: float | None
    detail: dict = field(default_factory=dict)


@dataclass
class Outcome:
    per_query: list[QueryRow]
    aggregates: list[ScoreAggregate]
    summary: dict
