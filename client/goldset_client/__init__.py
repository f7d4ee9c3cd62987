"""A small typed client for the Goldset Workbench REST API (``/api/v1/``).

from goldset_client import GoldsetClient

with GoldsetClient("https://goldset.example.org", token) as gs:
    gs.push_answers("answers.jsonl")
    version = gs.freeze(note="weekly").version
    gs.download_version(version.number, "gold_jsonl", "gold.jsonl")
    result = gs.score_run("latest", "run.jsonl")
    if result.release_gate and not result.release_gate.passed: ...
"""

from goldset_client.client import GoldsetClient
from goldset_client.errors import (
    ApiError,
    BadRequest,
    ChecksumMismatch,
    Forbidden,
    GoldsetClientError,
    ImportRejected,
    JobFailed,
    NotFound,
    Problem,
    ProblemItem,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unprocessable,
    WaitTimeout,
)
from goldset_client.models import (
    Aggregate,
    Download,
    FreezeResult,
    ImportResult,
    ReleaseGate,
    ScoreResult,
    SystemGate,
    VersionInfo,
)

__all__ = [
    "Aggregate",
    "ApiError",
    "BadRequest",
    "ChecksumMismatch",
    "Download",
    "Forbidden",
    "FreezeResult",
    "GoldsetClient",
    "GoldsetClientError",
    "ImportRejected",
    "ImportResult",
    "JobFailed",
    "NotFound",
    "Problem",
    "ProblemItem",
    "RateLimited",
    "ReleaseGate",
    "ScoreResult",
    "ServerError",
    "SystemGate",
    "TransportError",
    "Unauthorized",
    "Unprocessable",
    "VersionInfo",
    "WaitTimeout",
]
