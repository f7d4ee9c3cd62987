"""What a trace says for the sampling rules (pure: no database): user feedback, judges'
evaluations, and how near a question is to another (issue 28).

| signal | read from (any span of the trace, or an event's attributes) |
|---|---|
| thumbs-down | `goldset.feedback` or `user.feedback`: a string in `THUMBS_DOWN` (case folded), or a number ≤ 0 |
| judge evaluation | a `gen_ai.evaluation.result` event, or a span with `gen_ai.evaluation.name`: its `gen_ai.evaluation.name`, `gen_ai.evaluation.score.label`, `gen_ai.evaluation.score.value`, and a confidence in `goldset.judge.confidence` or `gen_ai.evaluation.confidence` (0–1) |

Judges *disagree* when two evaluations give different verdicts: the label (case folded) when
both have one, else score ≥ 0.5 against < 0.5.

Near-duplicate questions (`QuestionIndex`): the same normalised text (case folded, white space
collapsed; `goldset.traces.stored.normalised_question`) by its SHA-256, else a Jaccard
similarity of the character trigram sets (of the normalised text, padded with a space) at or
above the threshold. No model is involved.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass

from goldset.traces.decode import Span
from goldset.traces.mapping import EVALUATION_EVENT
from goldset.traces.stored import normalised_question

FEEDBACK_KEYS = ("goldset.feedback", "user.feedback")
THUMBS_DOWN = frozenset(
    {"thumbs_down", "thumbs-down", "thumbsdown", "down", "negative", "bad", "-1", "👎"}
)
EVALUATION_NAME = "gen_ai.evaluation.name"
SCORE_LABEL = "gen_ai.evaluation.score.label"
SCORE_VALUE = "gen_ai.evaluation.score.value"
CONFIDENCE_KEYS = ("goldset.judge.confidence", "gen_ai.evaluation.confidence")


@dataclass(frozen=True)
class Evaluation:
    name: str
    label: str
    score: float | None
    confidence: float | None

    @property
    def verdict(self) -> str | None:
        if self.label:
            return self.label
        if self.score is not None:
            return "pass" if self.score >= 0.5 else "fail"
        return None


@dataclass(frozen=True)
class TraceSignals:
    thumbs_down: bool
    evaluations: tuple[Evaluation, ...]

    @property
    def judges_disagree(self) -> bool:
        labelled = [e for e in self.evaluations if e.label]
        if len({e.label for e in labelled}) > 1:
            return True
        scored = [e for e in self.evaluations if e.score is not None]
        return len({e.score >= 0.5 for e in scored}) > 1

    def lowest_confidence(self) -> float | None:
        values = [e.confidence for e in self.evaluations if e.confidence is not None]
        return min(values) if values else None


def _number(value) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _is_thumbs_down(value) -> bool:
    if isinstance(value, str):
        return value.strip().casefold() in THUMBS_DOWN
    number = _number(value)
    return number is not None and number <= 0


def _evaluation(attributes: dict) -> Evaluation:
    label = attributes.get(SCORE_LABEL)
    confidence = next(
        (c for c in (_number(attributes.get(k)) for k in CONFIDENCE_KEYS) if c is not None),
        None,
    )
    return Evaluation(
        name=str(attributes.get(EVALUATION_NAME, "")),
        label=label.strip().casefold() if isinstance(label, str) else "",
        score=_number(attributes.get(SCORE_VALUE)),
        confidence=confidence,
    )


def trace_signals(spans: Iterable[Span]) -> TraceSignals:
    thumbs_down = False
    evaluations = []
    for span in spans:
        sources = [span.attributes] + [e.attributes for e in span.events]
        if any(_is_thumbs_down(a[key]) for a in sources for key in FEEDBACK_KEYS if key in a):
            thumbs_down = True
        if EVALUATION_NAME in span.attributes or SCORE_VALUE in span.attributes:
            evaluations.append(_evaluation(span.attributes))
        evaluations += [
            _evaluation(e.attributes) for e in span.events if e.name == EVALUATION_EVENT
        ]
    return TraceSignals(thumbs_down=thumbs_down, evaluations=tuple(evaluations))


# ---------------------------------------------------------------------------------------------
# Near-duplicate questions


def text_hash(text: str) -> str:
    return hashlib.sha256(normalised_question(text).encode("utf-8")).hexdigest()


def trigrams(text: str) -> frozenset[str]:
    padded = f" {normalised_question(text)} "
    return frozenset(padded[i : i + 3] for i in range(max(len(padded) - 2, 1)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class QuestionIndex:
    """The questions a new one is compared with (the project's gold questions)."""

    def __init__(self, texts: Iterable[str]):
        self._hashes = set()
        self._grams: list[frozenset[str]] = []
        self._by_gram: dict[str, list[int]] = {}
        for text in texts:
            self._hashes.add(text_hash(text))
            grams = trigrams(text)
            for gram in grams:
                self._by_gram.setdefault(gram, []).append(len(self._grams))
            self._grams.append(grams)

    def __len__(self) -> int:
        return len(self._grams)

    def nearest(self, text: str) -> float:
        """The highest similarity of ``text`` with an indexed question (1.0 for the same
        normalised text; 0.0 when the index is empty)."""
        if text_hash(text) in self._hashes:
            return 1.0
        grams = trigrams(text)
        shared: dict[int, int] = {}
        for gram in grams:
            for n in self._by_gram.get(gram, ()):
                shared[n] = shared.get(n, 0) + 1
        best = 0.0
        for n, common in shared.items():
            best = max(best, common / (len(grams) + len(self._grams[n]) - common))
        return best

    def has_near_duplicate(self, text: str, *, threshold: float) -> bool:
        return self.nearest(text) >= threshold
