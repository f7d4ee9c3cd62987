from goldset.models.corpus import Block, BlockVersion, Document, Domain, TaskType
from goldset.models.exports import (
    ExportFormat,
    GoldVersion,
    GoldVersionFile,
    GoldVersionFileChunk,
    GoldVersionRow,
)
from goldset.models.routing import RoutingRules, Tier
from goldset.models.scoring import (
    JobStatus,
    RunFormat,
    RunKind,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
    ScoringRunChunk,
)

__all__ = [
    "Block",
    "BlockVersion",
    "Document",
    "Domain",
    "ExportFormat",
    "GoldVersion",
    "GoldVersionFile",
    "GoldVersionFileChunk",
    "GoldVersionRow",
    "JobStatus",
    "RoutingRules",
    "RunFormat",
    "RunKind",
    "ScoreAggregate",
    "ScoreQueryResult",
    "ScoringJob",
    "ScoringRunChunk",
    "TaskType",
    "Tier",
]
