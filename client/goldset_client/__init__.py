"""A small typed client for the Goldset Workbench REST API (``/api/v1/``).

from goldset_client import GoldsetClient

Every operation of the API's schema has a method (lists iterate over every page), requests are
retried with backoff (honouring Retry-After on 429/503), and AsyncGoldsetClient has the same
methods as coroutines.

with GoldsetClient("https://goldset.example.org", token, project="customer-bot") as gs:
    gs.push_answers("answers.jsonl")
    version = gs.freeze(note="weekly").version
    gs.download_version(version.number, "gold_jsonl", "gold.jsonl")
    gs.set_tag("release-2026q4", version.number, note="signed off")  # admins
    result = gs.score_run("release-2026q4", "run.jsonl")  # a number, a tag or "latest"
    if result.release_gate and not result.release_gate.passed: ...
"""

from goldset_client._operations import operation_ids
from goldset_client._retry import NO_RETRY, RetryPolicy
from goldset_client.aio import AsyncGoldsetClient
from goldset_client.client import GoldsetClient
from goldset_client.errors import (
    ApiError,
    BadRequest,
    ChecksumMismatch,
    Conflict,
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
    Adjudication,
    Aggregate,
    Alert,
    Block,
    BlockVersion,
    Comparison,
    Document,
    Domain,
    Download,
    FreezeResult,
    ImportResult,
    Label,
    LabelClaim,
    Member,
    OpenItem,
    Progress,
    Project,
    ProjectSetting,
    QueryResult,
    ReleaseGate,
    Resource,
    Review,
    ReviewClaim,
    SamplingRule,
    ScoreResult,
    Snapshot,
    SystemGate,
    Tag,
    TagMove,
    Triple,
    VersionDiff,
    VersionInfo,
    WebhookDelivery,
    WebhookEndpoint,
)

__version__ = "1.0.0"
API_VERSION = "1"  # the API's major version (its schema's info.version) this client speaks

__all__ = [
    "__version__",
    "Adjudication",
    "Aggregate",
    "Alert",
    "API_VERSION",
    "ApiError",
    "AsyncGoldsetClient",
    "BadRequest",
    "Block",
    "BlockVersion",
    "ChecksumMismatch",
    "Comparison",
    "Conflict",
    "Document",
    "Domain",
    "Download",
    "Forbidden",
    "FreezeResult",
    "GoldsetClient",
    "GoldsetClientError",
    "ImportRejected",
    "ImportResult",
    "JobFailed",
    "Label",
    "LabelClaim",
    "Member",
    "NO_RETRY",
    "NotFound",
    "OpenItem",
    "operation_ids",
    "Problem",
    "ProblemItem",
    "Progress",
    "Project",
    "ProjectSetting",
    "QueryResult",
    "RateLimited",
    "ReleaseGate",
    "Resource",
    "RetryPolicy",
    "Review",
    "ReviewClaim",
    "ScoreResult",
    "SamplingRule",
    "ServerError",
    "Snapshot",
    "SystemGate",
    "Tag",
    "TagMove",
    "TransportError",
    "Triple",
    "Unauthorized",
    "Unprocessable",
    "VersionDiff",
    "VersionInfo",
    "WaitTimeout",
    "WebhookDelivery",
    "WebhookEndpoint",
]
