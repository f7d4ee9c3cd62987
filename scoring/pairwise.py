"""Pairwise review analysis (issue 30): Bradley–Terry strengths, win rates, bootstrap intervals,
agreement on preferences and position bias.

Pure library (no Django): plain :class:`Judgment` records in, a frozen :class:`PairwiseReport`
out; every random step takes an explicit seed (default 8821).

How judgments count
-------------------
A judgment compares ``system_a`` with ``system_b`` on one question; ``left`` names the one shown
on the left. ``preference`` is ``"a"`` (A better), ``"b"`` (B better), ``"tie"`` or
``"both_unacceptable"``; ``strength`` (``"slightly"``/``"clearly"``) is kept for the pages but
does not weight anything here.

* **Bradley–Terry and win rates:** a preference is one win for the preferred system; a **tie
  counts as half a win for each** (not Davidson's tie parameter: half wins keep the likelihood a
  plain Bradley–Terry likelihood on weighted counts, so ``choix`` can check it); **"both
  unacceptable" is left out** — it says neither answer is usable, not which is better, so it
  carries no preference. It is still counted per pair (``both_unacceptable``) and in agreement.
* **Position bias** uses only decisive judgments (A or B better): the share whose preferred
  system was the one shown on the left, with an exact two-sided binomial test against 0.5.
* **Agreement** treats each (question, unordered system pair) as an item and each reviewer's
  judgment as a nominal label among "first better", "second better", "tie", "both
  unacceptable" (first/second in name order, so the display order does not matter).

Bradley–Terry fit
-----------------
P(i beats j) = 1 / (1 + exp(θ_j − θ_i)). The strengths θ minimise

    alpha · Σ θ_k²  −  Σ_{i,j} W_ij · log P(i beats j)

(``W_ij`` = wins of i over j, ties as halves) — exactly ``choix.opt_pairwise``'s objective with
the same ``alpha`` (default 1e-6, choix's default). With ``alpha > 0`` the optimum has mean 0;
θ is reported centred (mean 0), as choix's ``log_transform`` does. Solved by damped Newton
steps (the objective is strictly convex for ``alpha > 0``). ``alpha = 0`` is plain maximum
likelihood, which exists only when every system beats and loses to the rest through some chain
(a strongly connected comparison graph); otherwise :class:`PairwiseError`.

Bootstrap
---------
Questions are resampled with replacement within strata (a question's stratum is its judgments'
``stratum``), with the same draws as :func:`scoring.stats.bootstrap_distribution` for the same
seed; each resample refits Bradley–Terry. Percentile intervals (95 %) for the strengths, the
win rates and P(B beats A); also the share of resamples where B's strength exceeds A's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

# SciPy is imported inside the functions that use it, not with this module: the web and the
# freeze never need it (issue 26: about 60 MB per process).
from scoring import agreement as agr
from scoring.errors import InputError, ScoringError
from scoring.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

PREFERENCES = ("a", "b", "tie", "both_unacceptable")
STRENGTHS = ("slightly", "clearly")
DEFAULT_ALPHA = 1e-6
CI_LEVEL = 0.95
# stats.bootstrap_distribution draws resamples in chunks of this many cells; drawing with the
# same chunking gives the same resamples for the same seed.
_CHUNK_CELLS = 4_000_000
_AGREEMENT_LABELS = {"tie": "tie", "both_unacceptable": "both_unacceptable"}


class PairwiseError(ScoringError, ValueError):
    """The pairwise data cannot give the requested figure (e.g. an MLE that does not exist)."""


@dataclass(frozen=True)
class Judgment:
    """One reviewer's verdict on two systems' answers to one question."""

    question_id: str
    system_a: str
    system_b: str
    left: str
    preference: str
    reviewer: str
    strength: str | None = None
    stratum: str | None = None

    def __post_init__(self) -> None:
        for name in ("question_id", "system_a", "system_b", "left", "reviewer"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string")
        if self.system_a == self.system_b:
            raise ValueError("system_b must differ from system_a")
        if self.left not in (self.system_a, self.system_b):
            raise ValueError(f"left must be system_a or system_b, not {self.left!r}")
        if self.preference not in PREFERENCES:
            raise ValueError(f"preference must be one of {', '.join(PREFERENCES)}")
        if self.strength is not None:
            if self.strength not in STRENGTHS:
                raise ValueError(f"strength must be one of {', '.join(STRENGTHS)} or null")
            if self.preference not in ("a", "b"):
                raise ValueError("strength applies only to an 'a' or 'b' preference")
        if self.stratum is not None and not isinstance(self.stratum, str):
            raise ValueError("stratum must be a string or null")

    @property
    def winner(self) -> str | None:
        """The preferred system, ``None`` for a tie or both unacceptable."""
        if self.preference == "a":
            return self.system_a
        if self.preference == "b":
            return self.system_b
        return None

    @property
    def chose_left(self) -> bool | None:
        """Whether the preferred system was shown on the left (``None`` when no preference)."""
        winner = self.winner
        return None if winner is None else winner == self.left


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None


@dataclass(frozen=True)
class SystemStrength:
    """Bradley–Terry log-strength θ (mean 0 over systems) with its bootstrap interval."""

    system: str
    strength: float
    ci: Interval
    rank: int
    n_judgments: int


@dataclass(frozen=True)
class PairResult:
    """One pair of systems (``system_a`` < ``system_b`` by name).

    ``win_rate_a`` = (wins_a + ties/2) / (wins_a + wins_b + ties) (``None`` when the pair has no
    such judgment); ``p_b_beats_a`` = Bradley–Terry P(B beats A) = 1 / (1 + exp(θ_A − θ_B));
    ``share_resamples_b_stronger`` = share of bootstrap resamples with θ_B > θ_A.
    """

    system_a: str
    system_b: str
    n_judgments: int
    wins_a: int
    wins_b: int
    ties: int
    both_unacceptable: int
    win_rate_a: float | None
    win_rate_a_ci: Interval
    p_b_beats_a: float
    p_b_beats_a_ci: Interval
    share_resamples_b_stronger: float


@dataclass(frozen=True)
class PositionBias:
    """Share of decisive judgments whose winner was shown left; exact binomial test vs 0.5."""

    reviewer: str | None  # None: all reviewers together
    n_decisive: int
    n_left: int
    share_left: float | None
    pvalue: float | None


@dataclass(frozen=True)
class ReviewerKappa:
    reviewer_a: str
    reviewer_b: str
    kappa: float | None
    n_items: int
    reason: str | None


@dataclass(frozen=True)
class PreferenceAgreement:
    """Krippendorff's α (nominal) over all reviewers and Cohen's κ for each reviewer pair."""

    alpha: float | None
    alpha_reason: str | None
    n_items: int
    n_reviewers: int
    kappa: list[ReviewerKappa]


@dataclass(frozen=True)
class PairwiseReport:
    systems: list[str]
    n_judgments: int
    n_questions: int
    strata: dict[str, int]
    strengths: list[SystemStrength]
    pairs: list[PairResult]
    agreement: PreferenceAgreement
    position_bias: list[PositionBias]
    mle_exists: bool
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """A plain-text summary for a terminal."""
        s = self.settings
        lines = [
            f"{self.n_judgments} judgments, {self.n_questions} questions, "
            f"{len(self.systems)} systems; bootstrap {s['resamples']} resamples, seed {s['seed']}, "
            f"alpha {s['alpha']:g}",
        ]
        if not self.mle_exists:
            lines.append(
                "note: the comparison graph is not strongly connected, so strengths are "
                "held finite only by the regularisation"
            )
        lines.append("")
        lines.append("rank  system                strength   95% CI")
        for st in self.strengths:
            lines.append(f"{st.rank:>4}  {st.system:<20}  {st.strength:>8.3f}   {_fmt_ci(st.ci)}")
        lines.append("")
        lines.append(
            "pair                          n   A  B  tie  unacc  winrate(A)  P(B>A)  95% CI"
        )
        for p in self.pairs:
            rate = "-" if p.win_rate_a is None else f"{p.win_rate_a:.3f}"
            lines.append(
                f"{p.system_a + ' vs ' + p.system_b:<26} {p.n_judgments:>4} {p.wins_a:>3}"
                f" {p.wins_b:>2} {p.ties:>4} {p.both_unacceptable:>6}  {rate:>10}  "
                f"{p.p_b_beats_a:>6.3f}  {_fmt_ci(p.p_b_beats_a_ci)}"
            )
        lines.append("")
        ag = self.agreement
        alpha = (
            "undefined (" + str(ag.alpha_reason) + ")" if ag.alpha is None else f"{ag.alpha:.3f}"
        )
        lines.append(f"Krippendorff alpha (nominal): {alpha} over {ag.n_items} items")
        for k in ag.kappa:
            value = "undefined" if k.kappa is None else f"{k.kappa:.3f}"
            lines.append(
                f"Cohen kappa {k.reviewer_a} / {k.reviewer_b}: {value} ({k.n_items} items)"
            )
        lines.append("")
        for pb in self.position_bias:
            who = "all reviewers" if pb.reviewer is None else pb.reviewer
            share = "-" if pb.share_left is None else f"{pb.share_left:.3f}"
            pvalue = "-" if pb.pvalue is None else f"{pb.pvalue:.3g}"
            lines.append(
                f"left chosen, {who}: {pb.n_left}/{pb.n_decisive} = {share} (binomial p {pvalue})"
            )
        return "\n".join(lines) + "\n"


def _fmt_ci(ci: Interval) -> str:
    if ci.low is None or ci.high is None:
        return "-"
    return f"[{ci.low:.3f}, {ci.high:.3f}]"


# ---------------------------------------------------------------------------------------------
# Reading


_FIELDS = ("question_id", "system_a", "system_b", "left", "preference", "reviewer")
_OPTIONAL = ("strength", "stratum")


def judgment_from_dict(record: Any) -> Judgment:
    """A :class:`Judgment` from a JSON object; ``ValueError`` names the field at fault."""
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    unknown = sorted(set(record) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    for key in _FIELDS:
        if key not in record:
            raise ValueError(f"missing field {key!r}")
    values = {}
    for key in _FIELDS + _OPTIONAL:
        value = record.get(key)
        if key == "question_id" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"field {key!r} must be a string")
        values[key] = value
    try:
        return Judgment(**values)
    except ValueError as exc:
        raise ValueError(f"field {_field_of(str(exc))!r}: {exc}") from None


def _field_of(message: str) -> str:
    for key in _FIELDS + _OPTIONAL:
        if message.startswith(key):
            return key
    return "preference"


def read_judgments(source: str | Iterable[str]) -> list[Judgment]:
    """Judgments from a JSONL file path (or an iterable of lines); blank lines are skipped.

    Raises :class:`InputError` naming the line and the field at fault, and for a reviewer who
    judged the same question and pair twice.
    """
    name = source if isinstance(source, str) else "<judgments>"
    if isinstance(source, str):
        try:
            with open(source, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            raise InputError(name, None, "file not found") from None
        except UnicodeDecodeError:
            raise InputError(name, None, "not valid UTF-8 text") from None
        except OSError as exc:
            raise InputError(name, None, f"cannot read the file: {exc.strerror}") from None
    else:
        lines = list(source)
    out: list[Judgment] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    strata: dict[str, tuple[str | None, int]] = {}
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(name, lineno, f"invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise InputError(name, lineno, "invalid JSON: nested too deeply") from None
        try:
            judgment = judgment_from_dict(record)
        except ValueError as exc:
            raise InputError(name, lineno, str(exc)) from None
        first, second = sorted((judgment.system_a, judgment.system_b))
        key = (judgment.question_id, first, second, judgment.reviewer)
        if key in seen:
            raise InputError(
                name,
                lineno,
                f"reviewer {judgment.reviewer!r} already judged {first} vs {second} on question "
                f"{judgment.question_id!r} on line {seen[key]}",
            )
        seen[key] = lineno
        stratum, where = strata.setdefault(judgment.question_id, (judgment.stratum, lineno))
        if stratum != judgment.stratum:
            raise InputError(
                name,
                lineno,
                f"field 'stratum': question {judgment.question_id!r} has stratum {stratum!r} "
                f"on line {where}",
            )
        out.append(judgment)
    if not out:
        raise InputError(name, None, "no judgments")
    return out


# ---------------------------------------------------------------------------------------------
# Bradley–Terry


def _objective(theta: np.ndarray, wins: np.ndarray, alpha: float) -> np.ndarray:
    diff = theta[:, :, None] - theta[:, None, :]
    return alpha * (theta**2).sum(axis=1) + (wins * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))


def fit_bradley_terry_batch(
    wins: np.ndarray, *, alpha: float = DEFAULT_ALPHA, max_iter: int = 200, tol: float = 1e-10
) -> np.ndarray:
    """Bradley–Terry log-strengths for each of a batch of win matrices ``(B, K, K)``.

    ``wins[b, i, j]`` is the (possibly fractional) number of wins of i over j. Returns ``(B, K)``
    mean-centred θ minimising ``alpha·Σθ² − Σ W_ij log σ(θ_i − θ_j)`` (choix's objective), by
    damped Newton steps run together for the whole batch, until no coordinate of a matrix's Newton
    step exceeds ``tol``. ``alpha = 0`` needs a strongly connected comparison graph in every
    matrix (the caller checks).
    """
    from scipy.special import expit

    w = np.asarray(wins, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError("wins must be a (batch, systems, systems) array")
    if alpha < 0:
        raise ValueError("alpha must be 0 or more")
    b, k, _ = w.shape
    n = w + w.transpose(0, 2, 1)
    theta = np.zeros((b, k))
    # The likelihood ignores a common shift of θ, and the penalty's optimum has Σθ = 0, so the
    # iterates stay mean-zero: each Newton system gets the constant direction pinned (+ 1/k),
    # which otherwise has curvature 2·alpha only and would turn rounding noise into steps.
    pin = np.full((k, k), 1.0 / k)
    eye = np.eye(k)
    active = np.ones(b, dtype=bool)
    current = _objective(theta, w, alpha)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if len(idx) == 0:
            break
        th, wa, na = theta[idx], w[idx], n[idx]
        p = expit(th[:, :, None] - th[:, None, :])
        grad = 2 * alpha * th - (wa - na * p).sum(axis=2)
        grad -= grad.mean(axis=1, keepdims=True)
        curv = na * p * (1.0 - p)
        hess = -curv + eye * (curv.sum(axis=2)[:, :, None] + 2 * alpha) + pin
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        step -= step.mean(axis=1, keepdims=True)
        done = np.abs(step).max(axis=1) <= tol
        active[idx[done]] = False
        keep = ~done
        idx, th, wa, step, grad = idx[keep], th[keep], wa[keep], step[keep], grad[keep]
        decrement = (grad * step).sum(axis=1)
        base = current[idx]
        # Armijo backtracking; the slack absorbs rounding in objectives of large counts.
        slack = 1e-13 * np.maximum(1.0, np.abs(base))
        t = np.ones(len(idx))
        new = th.copy()
        new_obj = base.copy()
        todo = np.ones(len(idx), dtype=bool)
        for _ in range(60):
            if not todo.any():
                break
            rows = np.flatnonzero(todo)
            cand = th[rows] - t[rows, None] * step[rows]
            obj = _objective(cand, wa[rows], alpha)
            ok = obj <= base[rows] - 1e-4 * t[rows] * decrement[rows] + slack[rows]
            new[rows[ok]], new_obj[rows[ok]] = cand[ok], obj[ok]
            todo[rows[ok]] = False
            t[rows[~ok]] /= 2
        # A step no fraction of which decreases the objective: already at the optimum.
        active[idx[todo]] = False
        theta[idx], current[idx] = new, new_obj
    return theta - theta.mean(axis=1, keepdims=True)


def strongly_connected(wins: np.ndarray) -> bool:
    """Whether every system reaches every other through "beat" edges (MLE exists)."""
    from scipy.sparse.csgraph import connected_components

    w = np.asarray(wins, dtype=np.float64)
    if w.shape[0] <= 1:
        return True
    count, _ = connected_components(w > 0, directed=True, connection="strong")
    return count == 1


def bradley_terry(wins: np.ndarray, *, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """Mean-centred Bradley–Terry θ for one ``(K, K)`` win matrix (see the module docstring)."""
    w = np.asarray(wins, dtype=np.float64)
    if alpha == 0 and not strongly_connected(w):
        raise PairwiseError(
            "the maximum-likelihood strengths do not exist: some system never beats (or never "
            "loses to) the others; use alpha > 0"
        )
    return fit_bradley_terry_batch(w[None], alpha=alpha)[0]


def win_matrix(judgments: Sequence[Judgment], systems: Sequence[str]) -> np.ndarray:
    """W[i, j] = wins of system i over j, ties as half a win each, both-unacceptable left out."""
    code = {s: i for i, s in enumerate(systems)}
    w = np.zeros((len(systems), len(systems)))
    for j in judgments:
        a, b = code[j.system_a], code[j.system_b]
        if j.preference == "a":
            w[a, b] += 1
        elif j.preference == "b":
            w[b, a] += 1
        elif j.preference == "tie":
            w[a, b] += 0.5
            w[b, a] += 0.5
    return w


# ---------------------------------------------------------------------------------------------
# Bootstrap over questions


def resample_counts(
    n_questions: int, strata: Sequence[Any] | None, *, n: int, seed: int
) -> Iterable[np.ndarray]:
    """Chunks of ``(size, n_questions)`` multiplicities: how often each question is drawn.

    Draws exactly as :func:`scoring.stats.bootstrap_distribution` does for the same ``seed``
    and strata (same generator, chunking and per-stratum order), so a statistic computed from
    these counts equals that function's replicates.
    """
    m = n_questions
    rng = np.random.default_rng(seed)
    if strata is None:
        groups = [np.arange(m)]
    else:
        _, inverse = np.unique(np.asarray(strata), return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in range(inverse.max() + 1)]
    chunk = max(1, _CHUNK_CELLS // m)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        parts = [
            members[rng.integers(0, len(members), size=(size, len(members)))] for members in groups
        ]
        idx = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        flat = idx + (np.arange(size) * m)[:, None]
        yield np.bincount(flat.ravel(), minlength=size * m).reshape(size, m)


def _percentile(values: np.ndarray, level: float = CI_LEVEL) -> Interval:
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return Interval(None, None)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return Interval(float(low), float(high))


# ---------------------------------------------------------------------------------------------
# Agreement and position bias


def _agreement_rows(judgments: Sequence[Judgment]) -> list[tuple[Any, str, str]]:
    rows = []
    for j in judgments:
        first, second = sorted((j.system_a, j.system_b))
        winner = j.winner
        if winner is None:
            label = _AGREEMENT_LABELS[j.preference]
        else:
            label = "first_better" if winner == first else "second_better"
        rows.append(((j.question_id, first, second), j.reviewer, label))
    return rows


def preference_agreement(judgments: Sequence[Judgment]) -> PreferenceAgreement:
    """Krippendorff's α (nominal) and Cohen's κ per reviewer pair on the preferences."""
    table = agr.label_table(_agreement_rows(judgments))
    alpha = agr.krippendorff_alpha(table, level="nominal")
    kappas = [
        ReviewerKappa(str(a), str(b), res.value, res.n_items, res.reason)
        for (a, b), res in agr.pairwise_cohen_kappa(table).items()
    ]
    return PreferenceAgreement(alpha.value, alpha.reason, alpha.n_items, alpha.n_annotators, kappas)


def position_bias(judgments: Sequence[Judgment]) -> list[PositionBias]:
    """Overall (first, ``reviewer=None``) then per reviewer in name order."""
    from scipy.stats import binomtest

    groups: dict[str | None, list[bool]] = {None: []}
    for j in judgments:
        left = j.chose_left
        groups.setdefault(j.reviewer, [])
        if left is not None:
            groups[None].append(left)
            groups[j.reviewer].append(left)
    out = []
    for reviewer in [None, *sorted(r for r in groups if r is not None)]:
        choices = groups[reviewer]
        n, k = len(choices), int(sum(choices))
        if n == 0:
            out.append(PositionBias(reviewer, 0, 0, None, None))
            continue
        pvalue = float(binomtest(k, n, 0.5, alternative="two-sided").pvalue)
        out.append(PositionBias(reviewer, n, k, k / n, pvalue))
    return out


# ---------------------------------------------------------------------------------------------
# The report


def analyse(
    judgments: Sequence[Judgment],
    *,
    alpha: float = DEFAULT_ALPHA,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairwiseReport:
    """Every figure of the pairwise analysis (see the module docstring for the rules)."""
    from scipy.special import expit

    if not judgments:
        raise PairwiseError("no judgments")
    if not (alpha > 0 and math.isfinite(alpha)):
        raise PairwiseError("alpha must be a finite number > 0 (the bootstrap refits resamples)")
    if n_resamples < 1:
        raise PairwiseError("n_resamples must be a positive integer")
    if seed < 0:
        raise PairwiseError("seed must be 0 or more")
    strata_seen: dict[str, str | None] = {}
    for j in judgments:
        if strata_seen.setdefault(j.question_id, j.stratum) != j.stratum:
            raise PairwiseError(f"question {j.question_id!r} has two strata")
    systems = sorted({s for j in judgments for s in (j.system_a, j.system_b)})
    if len(systems) < 2:
        raise PairwiseError("need at least two systems")
    k = len(systems)
    code = {s: i for i, s in enumerate(systems)}
    questions = sorted({j.question_id for j in judgments})
    qcode = {q: i for i, q in enumerate(questions)}
    stratum_of = {j.question_id: (j.stratum or "") for j in judgments}

    # Per question: (K, K) wins with ties as halves, and counts for the pair table.
    per_q = np.zeros((len(questions), k, k))
    strict = np.zeros((k, k), dtype=np.int64)
    ties = np.zeros((k, k), dtype=np.int64)
    unacc = np.zeros((k, k), dtype=np.int64)
    per_system = np.zeros(k, dtype=np.int64)
    for j in judgments:
        a, b, q = code[j.system_a], code[j.system_b], qcode[j.question_id]
        per_system[[a, b]] += 1
        if j.preference == "a":
            per_q[q, a, b] += 1
            strict[a, b] += 1
        elif j.preference == "b":
            per_q[q, b, a] += 1
            strict[b, a] += 1
        elif j.preference == "tie":
            per_q[q, a, b] += 0.5
            per_q[q, b, a] += 0.5
            ties[a, b] += 1
            ties[b, a] += 1
        else:
            unacc[a, b] += 1
            unacc[b, a] += 1
    wins = per_q.sum(axis=0)
    theta = fit_bradley_terry_batch(wins[None], alpha=alpha)[0]

    strata_labels = [stratum_of[q] for q in questions]
    single = len(set(strata_labels)) == 1
    flat = per_q.reshape(len(questions), k * k)
    boot_theta, boot_w = [], []
    for counts in resample_counts(
        len(questions), None if single else strata_labels, n=n_resamples, seed=seed
    ):
        w_boot = (counts @ flat).reshape(-1, k, k)
        boot_theta.append(fit_bradley_terry_batch(w_boot, alpha=alpha))
        boot_w.append(w_boot)
    theta_b = np.concatenate(boot_theta)
    boot_wins = np.concatenate(boot_w)

    order = np.argsort(-theta, kind="stable")
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(1, k + 1)
    strengths = [
        SystemStrength(
            systems[i],
            float(theta[i]),
            _percentile(theta_b[:, i]),
            int(rank[i]),
            int(per_system[i]),
        )
        for i in order.tolist()
    ]

    pairs = []
    played = strict + strict.T + ties + unacc > 0
    for a, b in combinations(range(k), 2):
        if not played[a, b]:
            continue
        decided = wins[a, b] + wins[b, a]
        rate = float(wins[a, b] / decided) if decided > 0 else None
        with np.errstate(divide="ignore", invalid="ignore"):
            boot_rate = boot_wins[:, a, b] / (boot_wins[:, a, b] + boot_wins[:, b, a])
        p_b = expit(theta_b[:, b] - theta_b[:, a])
        pairs.append(
            PairResult(
                systems[a],
                systems[b],
                int(strict[a, b] + strict[b, a] + ties[a, b] + unacc[a, b]),
                int(strict[a, b]),
                int(strict[b, a]),
                int(ties[a, b]),
                int(unacc[a, b]),
                rate,
                _percentile(boot_rate) if rate is not None else Interval(None, None),
                float(expit(theta[b] - theta[a])),
                _percentile(p_b),
                float(np.mean(theta_b[:, b] > theta_b[:, a])),
            )
        )
    strata: dict[str, int] = {}
    for label in strata_labels:
        strata[label] = strata.get(label, 0) + 1
    return PairwiseReport(
        systems=systems,
        n_judgments=len(judgments),
        n_questions=len(questions),
        strata=dict(sorted(strata.items())),
        strengths=strengths,
        pairs=pairs,
        agreement=preference_agreement(judgments),
        position_bias=position_bias(judgments),
        mle_exists=strongly_connected(wins),
        settings={
            "alpha": alpha,
            "resamples": n_resamples,
            "seed": seed,
            "ci_level": CI_LEVEL,
            "ties": "half a win each",
            "both_unacceptable": "left out of strengths and win rates",
            "bootstrap": "questions, within strata" if not single else "questions",
        },
    )


# ---------------------------------------------------------------- against the PCS decision


@dataclass(frozen=True)
class DecisionAgreement:
    """Whether the pairwise ranking agrees with the PCS release decision (the rule in
    :func:`agreement_with_decision`); ``conflicts`` lists (released, held) system pairs the
    Bradley–Terry ranking orders the other way; ``compared`` the systems in both."""

    agrees: bool | None
    statement: str
    compared: list[str]
    conflicts: list[tuple[str, str]]


def agreement_with_decision(
    strengths: Mapping[str, float], releases: Mapping[str, bool], pcs: Mapping[str, float | None]
) -> DecisionAgreement:
    """The decision rule's pairwise clause. Over the systems both analyses cover: when the PCS
    decision releases some and holds others, pairwise results agree when every released system
    has a higher Bradley–Terry strength than every held one; when it treats all alike, they
    agree when the system with the highest mean PCS is also the strongest by Bradley–Terry.
    Undefined (``agrees`` None) with fewer than two systems in both."""
    compared = sorted(set(strengths) & set(releases))
    if len(compared) < 2:
        return DecisionAgreement(
            None,
            "Pairwise results cannot be compared with the PCS decision: fewer than two systems "
            "are in both.",
            compared,
            [],
        )
    released = [s for s in compared if releases[s]]
    held = [s for s in compared if not releases[s]]
    if released and held:
        conflicts = [(r, h) for r in released for h in held if strengths[r] <= strengths[h]]
        if conflicts:
            names = "; ".join(f"{h} over {r}" for r, h in conflicts)
            statement = (
                "Pairwise results disagree with the PCS decision: Bradley–Terry ranks a held "
                f"system at or above a released one ({names})."
            )
        else:
            statement = (
                "Pairwise results agree with the PCS decision: every released system is ranked "
                "above every held one by Bradley–Terry."
            )
        return DecisionAgreement(not conflicts, statement, compared, conflicts)
    scored = [s for s in compared if pcs.get(s) is not None]
    top_pcs = max(scored, key=lambda s: (pcs[s], s)) if scored else None
    top_bt = max(compared, key=lambda s: (strengths[s], s))
    verdict = "released" if released else "held"
    if top_pcs is None:
        return DecisionAgreement(
            None, f"All compared systems are {verdict}; no mean PCS to compare.", compared, []
        )
    agrees = top_pcs == top_bt
    statement = (
        f"All compared systems are {verdict}; pairwise results "
        + ("agree" if agrees else "disagree")
        + f" with PCS on the best system (PCS: {top_pcs}; Bradley–Terry: {top_bt})."
    )
    return DecisionAgreement(agrees, statement, compared, [] if agrees else [(top_pcs, top_bt)])
