from goldset.models.agreement import AgreementSnapshot
from goldset.models.corpus import Block, BlockVersion, Document, Domain, TaskType
from goldset.models.routing import RoutingRules, Tier

__all__ = [
    "AgreementSnapshot",
    "Block",
    "BlockVersion",
    "Document",
    "Domain",
    "RoutingRules",
    "TaskType",
    "Tier",
]
