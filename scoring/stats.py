"""Uncertainty and comparison statistics for scores and labels.

* :func:`bootstrap_ci` percentile bootstrap, vectorised, optionally stratified; defaults follow
  PROBE (seed 004, A.1): 10,000 resamples, seed 8821.
* :func:`mcnemar` paired binary outcomes (statsmodels), :func:`wilcoxon` paired scores (SciPy),
  :func:`holm_bonferroni` multiple-comparison correction (statsmodels ``multipletests``).
* :func:`spearman` rank correlation with a Fisher-z confidence interval.
* :func:`detector_f1` precision/recall/F1 of a binary detector against adjudicated labels.

Functions take plain sequences / arrays and return frozen dataclasses. A statistic that is not
defined for the data (0/0) has ``value=None`` and a ``reason``; it never silently becomes 0 or 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.multitest import multipletests

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 8821
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
    m = len(x)
    if m == 0:
        raise ValueError("bootstrap needs at least one value")
    rng = np.random.default_rng(seed)
    if strata is None:
        groups = [np.arange(m)]
    else:
        labels = np.asarray(strata)
        if len(labels) != m:
            raise ValueError("strata must have one label per value")
        _, inverse = np.unique(labels, return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in range(inverse.max() + 1)]
    out = np.empty(n, dtype=np.float64)
    chunk = max(1, _CHUNK_CELLS // m)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        parts = [
            members[rng.integers(0, len(members), size=(size, len(members)))] for members in groups
        ]
        idx = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        out[start : start + size] = stat(x[idx], axis=1)
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
    res = _sm_mcnemar(table, exact=use_exact, correction=True)
    return TestResult(float(res.statistic), float(res.pvalue), len(x))


def wilcoxon(x: Sequence[float], y: Sequence[float]) -> TestResult:
    """Wilcoxon signed-rank test on paired scores (SciPy, two-sided, zero differences dropped)."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("paired scores must be two 1-D sequences of equal length")
    if not np.any(a != b):
        return TestResult(None, None, len(a), "all paired differences are zero")
    res = sps.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    return TestResult(float(res.statistic), float(res.pvalue), len(a))


def holm_bonferroni(pvalues: Sequence[float], *, alpha: float = 0.05) -> HolmResult:
    """Holm's step-down correction (statsmodels ``multipletests(method="holm")``)."""
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or len(p) == 0:
        raise ValueError("need a non-empty 1-D sequence of p-values")
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
    res = sps.spearmanr(a, b)
    rho = float(res.statistic)
    z_crit = float(sps.norm.ppf(0.5 + level / 2.0))
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
