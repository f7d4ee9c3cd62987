"""One source of display names for every code people see (tiers, triple states, verdicts, flags,
record statuses, task types, label axes and their values, protocols, agreement metrics, yes/no).

Templates go through the ``display`` filter (a builtin: ``{{ r.tier|display }}``) and services'
messages through :func:`display`, so a code is spelt out the same way everywhere. Downloads keep
the codes: they are for programs."""

from enum import Enum

from goldset.models import (
    Acceptability,
    AdjudicationReason,
    CitationCorrectness,
    ConflictHandling,
    Difficulty,
    DisagreementCategory,
    EntailmentDirection,
    EvidenceKind,
    EvidenceLabel,
    EvidenceSufficiency,
    FailureCategory,
    FinalSource,
    Flag,
    Grounding,
    ImportStatus,
    JobStatus,
    RecordStatus,
    Resolution,
    SafetyBoundary,
    Source,
    TaskType,
    Tier,
    TraceStatus,
    TripleState,
    Verdict,
)
from workbench.roles import Role

# In priority order: a code two enums share (``gold``, ``audit_review``) reads as the first says.
_CHOICES = (
    Role,
    Tier,
    TripleState,
    Verdict,
    Flag,
    EntailmentDirection,
    DisagreementCategory,
    Resolution,
    Source,
    Difficulty,
    TaskType,
    RecordStatus,
    FinalSource,
    AdjudicationReason,
    Acceptability,
    Grounding,
    EvidenceSufficiency,
    CitationCorrectness,
    ConflictHandling,
    SafetyBoundary,
    FailureCategory,
    EvidenceKind,
    EvidenceLabel,
    JobStatus,
    ImportStatus,
    TraceStatus,
)

_NAMED: dict[str, str] = {
    "not_applicable": "Not applicable",
    "synthetic": "Synthetic",
    "task_type": "Task type",
    "domain": "Domain",
    "tier": "Tier",
    # protocols and label axes (goldset.rules.axes)
    "triple_review": "Triple reviews",
    "answer_label": "Answer labels",
    "verdict": "Verdict",
    "acceptability": "Acceptability",
    "grounding": "Grounding",
    "severe_safety": "Severe safety",
    "annotator": "Annotator",
    # axis values
    "acceptable": "Acceptable",
    "unacceptable": "Unacceptable",
    "ungrounded": "Ungrounded",
    "misgrounded": "Misgrounded",
    "partially_grounded": "Partially grounded",
    "fully_grounded": "Fully grounded",
    "yes": "Yes",
    "no": "No",
    # agreement metrics
    "krippendorff_alpha": "Krippendorff α",
    "fleiss_kappa": "Fleiss κ",
    "cohen_kappa": "Cohen κ",
    "spot_check_disagreement": "Spot-check disagreement",
    "adjudication_agreement": "Agreement with adjudicated label",
    "severe_rate_gap": "Severe-label rate gap",
    "flag_rate": "Flag rate",
    "rationale_coverage": "Rationale coverage",
    "volume": "Volume",
}
DISPLAY: dict[str, str] = dict(_NAMED)
for _choices in _CHOICES:
    for _choice in _choices:
        DISPLAY.setdefault(str(_choice.value), str(_choice.label))


def display(value) -> str:
    """The display name of a code (an enum member, a string or a boolean); anything unknown as
    it is (a free text, a domain name), so the filter is safe on any value."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str):
        return DISPLAY.get(value, value)
    return str(value)


def display_list(values) -> str:
    """Codes as one comma-separated phrase of display names."""
    return ", ".join(display(v) for v in values)
