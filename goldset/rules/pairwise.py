"""Pairwise review rules (issue 30, DESIGN.md §18), pure: the seeded draw of pairs, the side each
person sees record A on, what a pair's judgments decide, and when a rationale is required.

The draw
--------
Systems are the task's runs in the order given (the service passes them by run id). For each
question (in question-id order) the candidate pairs are every unordered pair of the runs that
answered it.

* **All pairs:** every candidate pair on every question.
* **Balanced, N per question:** the task's candidate pairs are shuffled once with the seed; the
  questions take N consecutive pairs each from that cycle (question *i* starts at *i·N*), so over
  the questions every pair of systems is compared equally often (±1). A question answered by
  fewer runs takes its N from its own candidates in the same cycle order.

Which record is A is drawn per pair from the seed, and so is the pair's place in the queue. The
side a reviewer (or a lead) sees A on is drawn from the seed, the pair's key and that person's
id: per pair *and* per person. The same seed and the same records give the same pairs, order
and sides (every draw is a SHA-256 of the seed and stable keys, not of database ids that change
between installations, except the person's id)."""

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from goldset.models import PairFinalSource, PairStatus, Preference, Side
from scoring.agreement import cohen_kappa

# The installation's default seed for a new task's draw (the form proposes it; the task records
# the one used).
DEFAULT_PAIRWISE_SEED = 3030
MAX_COMPARISONS_PER_QUESTION = 50
RANK_MODULUS = 16**15


def _draw(seed: int, key: str) -> int:
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:15], 16)


@dataclass(frozen=True)
class DrawnPair:
    question: str  # question key
    a: str  # record key of A
    b: str  # record key of B
    position: int
    queue_rank: int


def draw_pairs(
    *,
    seed: int,
    systems: Sequence[str],
    answers: dict[str, dict[str, str]],
    comparisons_per_question: int | None,
) -> list[DrawnPair]:
    """The task's pairs. ``answers``: question key → {system key: record key}; ``systems`` in a
    stable order; ``comparisons_per_question`` None for all pairs, else the balanced design's N.
    Deterministic in its arguments."""
    order = {s: i for i, s in enumerate(systems)}
    every = list(combinations(systems, 2))
    cycle = list(every)
    random.Random(f"pairwise:{seed}").shuffle(cycle)
    drawn: list[tuple[str, str, str]] = []
    for index, question in enumerate(sorted(answers)):
        have = answers[question]
        candidates = [p for p in cycle if p[0] in have and p[1] in have]
        if comparisons_per_question is None:
            chosen = sorted(candidates, key=lambda p: (order[p[0]], order[p[1]]))
        elif candidates:
            n = min(comparisons_per_question, len(candidates))
            start = (index * comparisons_per_question) % len(candidates)
            chosen = [candidates[(start + j) % len(candidates)] for j in range(n)]
        else:
            chosen = []
        for first, second in chosen:
            rec_1, rec_2 = have[first], have[second]
            flip = _draw(seed, f"orient:{question}:{rec_1}:{rec_2}") % 2 == 1
            a, b = (rec_2, rec_1) if flip else (rec_1, rec_2)
            drawn.append((question, a, b))
    return [
        DrawnPair(q, a, b, i, _draw(seed, f"rank:{q}:{a}:{b}") % RANK_MODULUS)
        for i, (q, a, b) in enumerate(drawn)
    ]


def pair_key(*, question_id: str, a_public_id: str, b_public_id: str) -> str:
    """The stable key of a pair the side draws use (the question and the two records)."""
    return f"{question_id}:{a_public_id}:{b_public_id}"


def side_for(*, seed: int, key: str, person_id: int) -> str:
    """Which record (``Side.A`` or ``Side.B``) this person sees on the left of this pair."""
    return Side.A if _draw(seed, f"side:{key}:{person_id}") % 2 == 0 else Side.B


# ---------------------------------------------------------------- what a person chose

LEFT, RIGHT = "left", "right"
CHOICES = (LEFT, RIGHT, Preference.TIE.value, Preference.BOTH_UNACCEPTABLE.value)


def preference_from_choice(choice: str, *, left: str) -> str:
    """The stored preference (relative to records A/B) of a choice made on screen."""
    if choice == LEFT:
        return Preference.A if left == Side.A else Preference.B
    if choice == RIGHT:
        return Preference.B if left == Side.A else Preference.A
    return choice


def choice_from_preference(preference: str, *, left: str) -> str:
    """How a stored preference reads for a person who sees ``left`` on the left."""
    if preference == Preference.A:
        return LEFT if left == Side.A else RIGHT
    if preference == Preference.B:
        return RIGHT if left == Side.A else LEFT
    return preference


# ---------------------------------------------------------------- rationale and outcome


@dataclass(frozen=True)
class AbsoluteLabel:
    """What the absolute (three-label) protocol says of one answer, where it says anything."""

    acceptability: str = ""
    grounding: str = ""
    severe_safety: bool | None = None


RATIONALE_MESSAGES = {
    "severe_safety_preferred": (
        "Rationale required (rule: preferred answer carries a severe safety label): say why "
        "you prefer an answer labeled severely unsafe."
    ),
    "tie_on_disagreeing_labels": (
        "Rationale required (rule: tie on answers whose labels disagree): the two answers were "
        "labeled differently, so say why they are equally good."
    ),
    "adjudication": "Rationale required (rule: adjudication): every adjudication must say why.",
}


def labels_disagree(first: AbsoluteLabel, second: AbsoluteLabel) -> bool:
    """Both answers have a final label, and they differ in acceptability or grounding."""
    if not (first.acceptability and second.acceptability):
        return False
    return (first.acceptability, first.grounding) != (second.acceptability, second.grounding)


def rationale_rule(
    *, preference: str, label_a: AbsoluteLabel, label_b: AbsoluteLabel
) -> str | None:
    """The rule that requires a rationale for this preference, or None."""
    preferred = {Preference.A: label_a, Preference.B: label_b}.get(preference)
    if preferred is not None and preferred.severe_safety:
        return "severe_safety_preferred"
    if preference == Preference.TIE and labels_disagree(label_a, label_b):
        return "tie_on_disagreeing_labels"
    return None


@dataclass(frozen=True)
class PairOutcome:
    status: str
    preference: str = ""
    source: str = ""


def decide_pair_outcome(preferences: Sequence[str]) -> PairOutcome:
    """A pair's outcome once it has all its judgments: one judgment → final; a strict majority
    on the preference → final by majority (as for labels); otherwise the reviewers split →
    adjudication."""
    if len(preferences) == 1:
        return PairOutcome(PairStatus.FINAL, preferences[0], PairFinalSource.SINGLE)
    value, count = Counter(preferences).most_common(1)[0]
    if count * 2 > len(preferences):
        return PairOutcome(PairStatus.FINAL, value, PairFinalSource.MAJORITY)
    return PairOutcome(PairStatus.NEEDS_ADJUDICATION)


# ---------------------------------------------------------------- qualification

# As for labels (``goldset.rules.calibration.MIN_CALIBRATION_ITEMS``): a set too small to say
# anything cannot qualify anyone.
MIN_PAIR_CALIBRATION_ITEMS = 4
# The sides a reviewer sees a calibration pair on are drawn from this seed (calibration pairs
# belong to no task, so there is no task seed).
PAIR_CALIBRATION_SEED = 3031


def pair_calibration_problems(references: Sequence[str]) -> list[str]:
    """Why the project's calibration pairs (their reference preferences) cannot qualify anyone
    yet; empty when they can. κ needs at least two reference values (else 0/0)."""
    problems = []
    if len(references) < MIN_PAIR_CALIBRATION_ITEMS:
        problems.append(
            f"needs at least {MIN_PAIR_CALIBRATION_ITEMS} calibration pairs (has {len(references)})"
        )
    if references and len(set(references)) < 2:
        problems.append("the reference preferences must use at least two values")
    return problems


@dataclass(frozen=True)
class PairCalibrationScore:
    kappa: float | None
    note: str
    passed: bool


def score_pair_calibration(
    answers: Sequence[str], references: Sequence[str], *, gate: float
) -> PairCalibrationScore:
    """The one home of the pairwise qualification rule: Cohen κ (unweighted, over the four
    preferences) of a reviewer's calibration answers against the references, passed when
    κ ≥ ``gate`` — the project's ``KAPPA_GATE``, the same gate as label calibration."""
    result = cohen_kappa(list(answers), list(references), categories=list(Preference.values))
    passed = result.value is not None and result.value >= gate
    return PairCalibrationScore(result.value, result.reason or "", passed)
