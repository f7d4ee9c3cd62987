"""The label axes both protocols rate on, with their scale (DESIGN.md §8): the level decides
Krippendorff's α (nominal or ordinal) and the categories are listed in scale order."""

from dataclasses import dataclass


@dataclass(frozen=True)
class AxisScale:
    level: str  # "nominal" or "ordinal"
    categories: tuple[str, ...]  # in scale order
    pair_weights: str | None = None  # Cohen's κ weights for annotator pairs


AXES: dict[str, AxisScale] = {
    "verdict": AxisScale("nominal", ("confirm", "flag")),
    "acceptability": AxisScale("nominal", ("acceptable", "unacceptable")),
    "grounding": AxisScale(
        "ordinal", ("ungrounded", "misgrounded", "partially_grounded", "fully_grounded"), "linear"
    ),
    "severe_safety": AxisScale("nominal", ("no", "yes")),
}


# What an annotator's answer label holds, in the label form's order: the form's fields, the
# adjudication export's label columns and an undone label's withdrawn values all read this.
LABEL_VALUE_FIELDS = (
    "acceptability",
    "grounding",
    "evidence_sufficiency",
    "citation_correctness",
    "conflict_handling",
    "safety_boundary",
    "severe_safety",
    "primary_failure",
    "secondary_failures",
    "rationale",
)
