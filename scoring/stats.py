"""Uncertainty and comparison statistics for scores and labels.

* :func:`bootstrap_ci` percentile bootstrap, vectorised, optionally stratified; defaults follow
  PROBE (seed 004, A.1): 10,000 resamples, seed 8821.
* :func:`mcnemar` paired binary outcomes (statsmodels), :func:`wilcoxon` paired scores (exact
  or normal approximation, the caller chooses; the method used is reported),
  :func:`holm_bonferroni` multiple-comparison correction (statsmodels ``multipletests``).
* :func:`compare_paired` every pair of systems on every metric (Wilcoxon, McNemar for hit
  metrics) with Holm's correction over all tests: the app's compare page and
  ``python -m scoring compare``.
* :func:`spearman` rank correlation with a Fisher-z confidence interval.
* :func:`detector_f1` precision/recall/F1 of a binary detector against adjudicated labels.

Functions take plain sequences / arrays and return frozen dataclasses. A statistic that is not
defined for the data (0/0) has ``value=None`` and a ``reason``; it never silently becomes 0 or 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 8821


def _sps():
    """SciPy's ``stats``, imported on first use rather than at Django start-up (issue 26: SciPy
    and statsmodels hold about 60 MB in every process that never needs them)."""
    from scipy import stats

    return stats


# The family-wise error rate of every Holm-corrected comparison (pages print it from here).
FAMILYWISE_ALPHA = 0.05
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate on the full sample and the percentile interval ``[low, high]``."""

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    seed: int


@dataclass(frozen=True)
class TestResult:
    """A hypothesis test: ``statistic`` and ``pvalue`` are ``None`` when undefined (see reason)."""

    statistic: float | None
    pvalue: float | None
    n: int
    reason: str | None = None
    method: str | None = None


WILCOXON_METHODS = ("auto", "exact", "asymptotic")
#: ``method="auto"`` is exact up to this many non-zero differences, asymptotic above.
WILCOXON_EXACT_MAX = 50


@dataclass(frozen=True)
class HolmResult:
    """Holm–Bonferroni adjusted p-values and rejections, in input order."""

    pvalues_adjusted: list[float]
    reject: list[bool]
    alpha: float


@dataclass(frozen=True)
class CorrelationResult:
    """Spearman ρ with its p-value and Fisher-z interval; ``None`` fields when undefined."""

    rho: float | None
    pvalue: float | None
    low: float | None
    high: float | None
    n: int
    reason: str | None = None


@dataclass(frozen=True)
class F1Result:
    """Detector quality against reference labels; ``f1`` is ``None`` when tp + fp + fn = 0."""

    f1: float | None
    precision: float | None
    recall: float | None
    tp: int
    fp: int
    fn: int
    tn: int
    reason: str | None = None


def _mean(x: np.ndarray, axis: int) -> np.ndarray:
    return x.mean(axis=axis)


def bootstrap_distribution(
    values: Sequence[float] | np.ndarray,
    *,
    stat: Callable[..., np.ndarray] = _mean,
    n: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    strata: Sequence | np.ndarray | None = None,
) -> np.ndarray:
    """``n`` bootstrap replicates of ``stat`` (resampling rows, within strata if given).

    ``stat(sample, axis=1)`` must reduce a (resamples x rows) array to one value per resample.
    With ``strata``, each resample keeps every stratum's size and draws only within it.
    """
    x = np.asarray(values, dtype=np.float64)
    return _distributions([x], stat=stat, n=n, seed=seed, strata=strata)[0]


def _distributions(
    columns: Sequence[np.ndarray],
    *,
    stat: Callable[..., np.ndarray],
    n: int,
    seed: int,
    strata: Sequence | np.ndarray | None,
    progress: Callable[[float], None] | None = None,
) -> list[np.ndarray]:
    """The replicates of ``stat`` for each of ``columns`` (same length), every column resampled
    with the *same* index draws: each column's replicates equal ``bootstrap_distribution`` of
    that column alone to the bit (the draws depend only on the seed, the length and the strata),
    while the indices — most of the work — are drawn once."""
    m = len(columns[0])
    if m == 0:
        raise ValueError("bootstrap needs at least one value")
    if any(len(c) != m for c in columns):
        raise ValueError("every column needs one value per row")
    rng = np.random.default_rng(seed)
    if strata is None:
        groups = [np.arange(m)]
    else:
        labels = np.asarray(strata)
        if len(labels) != m:
            raise ValueError("strata must have one label per value")
        _, inverse = np.unique(labels, return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in range(inverse.max() + 1)]
    out = [np.empty(n, dtype=np.float64) for _ in columns]
    chunk = max(1, _CHUNK_CELLS // m)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        parts = [
            members[rng.integers(0, len(members), size=(size, len(members)))] for members in groups
        ]
        idx = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        for x, replicates in zip(columns, out, strict=True):
            replicates[start : start + size] = stat(x[idx], axis=1)
        if progress is not None:
            progress((start + size) / n)
    return out


def bootstrap_cis(
    columns: Mapping[str, Sequence[float] | np.ndarray],
    *,
    n: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    strata: Sequence | np.ndarray | None = None,
    level: float = 0.95,
    progress: Callable[[float], None] | None = None,
) -> dict[str, BootstrapResult]:
    """:func:`bootstrap_ci` of the mean of every column (one value per query, say, for each
    measure), equal to calling it column by column with the same seed, to the bit; the
    resampling indices are drawn once for all columns, so six measures cost little more than
    one. ``progress(fraction done)`` is called after each slice of resamples."""
    names = list(columns)
    xs = [np.asarray(columns[name], dtype=np.float64) for name in names]
    reps = _distributions(xs, stat=_mean, n=n, seed=seed, strata=strata, progress=progress)
    tail = (1.0 - level) / 2.0
    out = {}
    for name, x, r in zip(names, xs, reps, strict=True):
        low, high = np.quantile(r, [tail, 1.0 - tail])
        estimate = float(_mean(x[np.newaxis, :], axis=1)[0])
        out[name] = BootstrapResult(estimate, float(low), float(high), level, n, seed)
    return out


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    stat: Callable[..., np.ndarray] = _mean,
    n: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    strata: Sequence | np.ndarray | None = None,
    level: float = 0.95,
) -> BootstrapResult:
    """Percentile bootstrap interval for ``stat`` (default: the mean) of ``values``.

    Deterministic for a given ``seed``. ``strata`` (one label per value) resamples within each
    stratum, as PROBE does by domain and task family.
    """
    x = np.asarray(values, dtype=np.float64)
    reps = bootstrap_distribution(x, stat=stat, n=n, seed=seed, strata=strata)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(reps, [tail, 1.0 - tail])
    estimate = float(stat(x[np.newaxis, :], axis=1)[0])
    return BootstrapResult(estimate, float(low), float(high), level, n, seed)


def _paired_bool(a: Sequence, b: Sequence) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("paired outcomes must be two 1-D sequences of equal length")
    return x, y


def mcnemar(
    a_correct: Sequence[bool], b_correct: Sequence[bool], *, exact: bool | None = None
) -> TestResult:
    """McNemar's test on paired binary outcomes of systems A and B (statsmodels).

    ``exact=None`` uses the exact binomial test when there are fewer than 25 discordant pairs,
    else the continuity-corrected chi-square. No discordant pair: undefined.
    """
    x, y = _paired_bool(a_correct, b_correct)
    b = int(np.sum(x & ~y))
    c = int(np.sum(~x & y))
    if b + c == 0:
        return TestResult(None, None, len(x), "no discordant pairs: the systems never differ")
    table = [[int(np.sum(x & y)), b], [c, int(np.sum(~x & ~y))]]
    use_exact = (b + c) < 25 if exact is None else exact
    from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar  # see _sps

    res = _sm_mcnemar(table, exact=use_exact, correction=True)
    return TestResult(float(res.statistic), float(res.pvalue), len(x))


def _signed_rank_exact(d: np.ndarray) -> tuple[float, float]:
    """Exact two-sided p-value of the signed-rank statistic, conditional on the observed
    (mid)ranks, so tied absolute differences are handled exactly too.

    Counts, by dynamic programming over doubled ranks (integers), how many of the 2^n sign
    assignments give each sum of positive ranks; p = min(1, 2·min(P(T ≤ t), P(T ≥ t))).
    Returns ``(T, p)`` with T = min(sum of positive ranks, sum of negative ranks), SciPy's
    statistic.
    """
    ranks2 = np.rint(2 * _sps().rankdata(np.abs(d))).astype(np.int64)
    total = int(ranks2.sum())
    counts = np.zeros(total + 1, dtype=np.float64)
    counts[0] = 1.0
    for r in ranks2.tolist():
        shifted = np.zeros_like(counts)
        shifted[r:] = counts[: total + 1 - r]
        counts = (counts + shifted) / 2.0  # probabilities, so 2^n never overflows
    t_plus = int(ranks2[d > 0].sum())
    cdf = np.cumsum(counts)
    lower = cdf[t_plus]
    upper = 1.0 - (cdf[t_plus - 1] if t_plus > 0 else 0.0)
    p = min(1.0, 2.0 * min(lower, upper))
    return min(t_plus, total - t_plus) / 2.0, float(p)


def wilcoxon(x: Sequence[float], y: Sequence[float], *, method: str = "auto") -> TestResult:
    """Wilcoxon signed-rank test on paired scores, two-sided; zero differences are dropped
    (Wilcoxon's convention) before ranking, tied differences get mid-ranks.

    ``method``: ``"exact"`` — the exact permutation distribution of the signed-rank sum given
    the observed ranks (exact with ties too; computed by dynamic programming, so any n);
    ``"asymptotic"`` — SciPy's normal approximation with tie correction, no continuity
    correction; ``"auto"`` — exact when at most ``WILCOXON_EXACT_MAX`` (50) differences are
    non-zero, else asymptotic. The method used is in ``TestResult.method``. (SciPy's own
    ``auto`` silently switches to the normal approximation as soon as there are ties or zero
    differences; ours does not.)
    """
    if method not in WILCOXON_METHODS:
        raise ValueError(f"method must be one of {WILCOXON_METHODS}")
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("paired scores must be two 1-D sequences of equal length")
    d = a - b
    d = d[d != 0]
    if len(d) == 0:
        return TestResult(None, None, len(a), "all paired differences are zero")
    used = method if method != "auto" else "exact" if len(d) <= WILCOXON_EXACT_MAX else "asymptotic"
    if used == "exact":
        statistic, pvalue = _signed_rank_exact(d)
        return TestResult(statistic, pvalue, len(a), method="exact")
    res = _sps().wilcoxon(d, zero_method="wilcox", alternative="two-sided", method="asymptotic")
    return TestResult(float(res.statistic), float(res.pvalue), len(a), method="asymptotic")


def holm_bonferroni(pvalues: Sequence[float], *, alpha: float = FAMILYWISE_ALPHA) -> HolmResult:
    """Holm's step-down correction (statsmodels ``multipletests(method="holm")``)."""
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or len(p) == 0:
        raise ValueError("need a non-empty 1-D sequence of p-values")
    from statsmodels.stats.multitest import multipletests  # see _sps

    reject, adjusted, _, _ = multipletests(p, alpha=alpha, method="holm")
    return HolmResult([float(v) for v in adjusted], [bool(r) for r in reject], alpha)


def spearman(x: Sequence[float], y: Sequence[float], *, level: float = 0.95) -> CorrelationResult:
    """Spearman ρ (SciPy) with a Fisher-z interval: tanh(atanh(ρ) ± z·1/sqrt(n − 3)).

    Undefined when n < 4 (no interval possible) or when either variable is constant.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("x and y must be two 1-D sequences of equal length")
    n = len(a)
    if n < 4:
        return CorrelationResult(
            None, None, None, None, n, "need at least 4 pairs for a Fisher-z interval"
        )
    if np.all(a == a[0]) or np.all(b == b[0]):
        return CorrelationResult(None, None, None, None, n, "one variable is constant: ρ is 0/0")
    res = _sps().spearmanr(a, b)
    rho = float(res.statistic)
    z_crit = float(_sps().norm.ppf(0.5 + level / 2.0))
    if abs(rho) >= 1.0:
        return CorrelationResult(rho, float(res.pvalue), rho, rho, n)
    z = np.arctanh(rho)
    half = z_crit / np.sqrt(n - 3)
    return CorrelationResult(
        rho, float(res.pvalue), float(np.tanh(z - half)), float(np.tanh(z + half)), n
    )


def detector_f1(predicted: Sequence[bool], actual: Sequence[bool]) -> F1Result:
    """F1 of a binary detector (``predicted``) against adjudicated labels (``actual``).

    Positive = flagged (e.g. unsafe). Precision is undefined with no positive prediction, recall
    with no positive label, F1 when tp + fp + fn = 0.
    """
    p, a = _paired_bool(predicted, actual)
    tp = int(np.sum(p & a))
    fp = int(np.sum(p & ~a))
    fn = int(np.sum(~p & a))
    tn = int(np.sum(~p & ~a))
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if tp + fp + fn == 0:
        return F1Result(
            None, precision, recall, tp, fp, fn, tn, "no positive predictions or labels: F1 is 0/0"
        )
    return F1Result(2 * tp / (2 * tp + fp + fn), precision, recall, tp, fp, fn, tn)


@dataclass(frozen=True)
class PairedComparison:
    """One paired test between systems ``a`` and ``b`` on ``metric`` (over shared items)."""

    a: str
    b: str
    metric: str
    mean_a: float
    mean_b: float
    test: str
    statistic: float | None
    pvalue: float | None
    method: str | None
    adjusted: float | None
    reject: bool
    wins: int
    losses: int
    ties: int
    n: int
    reason: str | None = None


def compare_paired(
    scores: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]],
    *,
    alpha: float = FAMILYWISE_ALPHA,
    wilcoxon_method: str = "auto",
) -> list[PairedComparison]:
    """Every pair of systems on every metric they share, Holm-corrected over all tests.

    ``scores`` is ``{system: {metric: per-item values}}`` with the items in the same order for
    every system. Metrics named ``hit…`` are binary: McNemar's test on value > 0; the others
    Wilcoxon signed-rank (:func:`wilcoxon`, ``wilcoxon_method``). Tests that are undefined (no
    difference at all) keep ``pvalue=None`` and stay out of the correction. Wins/losses/ties
    count items where ``a`` scores above/below/equal to ``b``.
    """
    names = list(scores)
    if len(names) < 2:
        raise ValueError("compare at least two systems")
    metrics = [m for m in scores[names[0]] if all(m in scores[n] for n in names[1:])]
    out: list[dict] = []
    for a, b in combinations(names, 2):
        for metric in metrics:
            x = np.asarray(scores[a][metric], dtype=np.float64)
            y = np.asarray(scores[b][metric], dtype=np.float64)
            if x.shape != y.shape:
                raise ValueError(f"{a} and {b} have different numbers of items for {metric}")
            if metric.startswith("hit"):
                result, test = mcnemar(x > 0, y > 0), "McNemar"
                method = "exact" if result.pvalue is not None and _discordant(x, y) < 25 else None
                method = method or ("chi-square" if result.pvalue is not None else None)
            else:
                result, test = wilcoxon(x, y, method=wilcoxon_method), "Wilcoxon signed-rank"
                method = result.method
            out.append(
                {
                    "a": a,
                    "b": b,
                    "metric": metric,
                    "mean_a": float(x.mean()) if len(x) else 0.0,
                    "mean_b": float(y.mean()) if len(y) else 0.0,
                    "test": test,
                    "statistic": result.statistic,
                    "pvalue": result.pvalue,
                    "method": method,
                    "adjusted": None,
                    "reject": False,
                    "wins": int((x > y).sum()),
                    "losses": int((x < y).sum()),
                    "ties": int((x == y).sum()),
                    "n": len(x),
                    "reason": result.reason,
                }
            )
    tested = [row for row in out if row["pvalue"] is not None]
    if tested:
        holm = holm_bonferroni([row["pvalue"] for row in tested], alpha=alpha)
        for row, adjusted, reject in zip(tested, holm.pvalues_adjusted, holm.reject, strict=True):
            row["adjusted"], row["reject"] = adjusted, bool(reject)
    return [PairedComparison(**row) for row in out]


def _discordant(x: np.ndarray, y: np.ndarray) -> int:
    return int(np.sum((x > 0) != (y > 0)))
