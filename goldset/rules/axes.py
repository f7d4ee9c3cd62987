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
