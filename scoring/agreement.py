"""Inter-annotator agreement built on ``krippendorff`` and ``statsmodels``.

Point estimates come from the reference libraries:

* Krippendorff's α: ``krippendorff.alpha(value_counts=..., level_of_measurement=...)``
* Cohen's κ (unweighted, ``linear``, ``quadratic``): ``statsmodels.stats.inter_rater.cohens_kappa``
* Fleiss' κ: ``statsmodels.stats.inter_rater.aggregate_raters`` + ``fleiss_kappa``

This module adds what the libraries leave to the caller: turning labels (strings or numbers, with
missing ratings) into their inputs, ordering categories by a declared scale, and returning an
:class:`AgreementResult` whose ``value`` is ``None`` with a ``reason`` when the statistic is 0/0
(every rating in one category, or no item rated twice) instead of a silent 1.0, NaN or crash.

Tables are *items x annotators*: one row per item, one column per annotator, ``None`` / NaN / ""
for a missing rating. :func:`label_table` builds one from long-format ``(item, annotator, label)``
rows.

Category order (used by weighted κ, ordinal α, and interval α on non-numeric labels): the
declared ``categories`` if given, else the sorted observed values. Weighted κ distances are by
rank in that order (statsmodels' ``wt="linear"`` / ``"quadratic"``).

Bootstrap intervals resample items with replacement. Because items with identical rating
patterns are interchangeable, a resample is a multinomial draw of pattern counts, and each
statistic is recomputed from summed counts in one vectorised step (tests check the vectorised
point estimate equals the library's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import krippendorff
import numpy as np

from scoring.errors import AgreementError
from scoring.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

LEVELS = ("nominal", "ordinal", "interval", "ratio")
WEIGHTS = (None, "linear", "quadratic")
#: Category order of the workbench's ordinal answer-label axes, lowest first (DESIGN §6).
AXIS_SCALES: dict[str, tuple[str, ...]] = {
    "grounding": ("ungrounded", "misgrounded", "partially_grounded", "fully_grounded"),
    "acceptability": ("unacceptable", "acceptable"),
}


@dataclass(frozen=True)
class AgreementResult:
    """An agreement statistic: ``value`` is ``None`` exactly when ``reason`` says why.

    ``n_items`` counts the items that entered the statistic (for α and percent agreement: items
    with at least two ratings); ``n_annotators`` the annotators who rated any of them.
    ``ci`` is a percentile bootstrap interval ``(low, high)`` when requested.
    """

    value: float | None
    reason: str | None
    n_items: int
    n_annotators: int
    metric: str = ""
    ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class LabelTable:
    """Labels as an items x annotators object array with ``None`` for missing ratings."""

    items: list
    annotators: list
    labels: np.ndarray


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def label_table(
    rows: Iterable[Mapping[str, Any] | Sequence[Any]],
    *,
    item: str = "item",
    annotator: str = "annotator",
    label: str = "label",
) -> LabelTable:
    """Pivot long-format rows ``(item, annotator, label)`` into a :class:`LabelTable`.

    Rows may be mappings (keys ``item``/``annotator``/``label``, renameable) or 3-sequences. A
    missing label is simply a missing row (or an empty label). Two labels from one annotator for
    one item raise :class:`AgreementError`.
    """
    items: dict[Any, int] = {}
    annotators: dict[Any, int] = {}
    cells: dict[tuple[int, int], Any] = {}
    for row in rows:
        if isinstance(row, Mapping):
            it, an, lab = row[item], row[annotator], row[label]
        else:
            it, an, lab = row
        if _is_missing(lab):
            continue
        i = items.setdefault(it, len(items))
        j = annotators.setdefault(an, len(annotators))
        if (i, j) in cells:
            raise AgreementError(f"annotator {an!r} labelled item {it!r} more than once")
        cells[(i, j)] = lab
    matrix = np.full((len(items), len(annotators)), None, dtype=object)
    for (i, j), lab in cells.items():
        matrix[i, j] = lab
    return LabelTable(list(items), list(annotators), matrix)


def _as_matrix(table: LabelTable | Sequence[Sequence[Any]] | np.ndarray) -> np.ndarray:
    if isinstance(table, LabelTable):
        matrix = table.labels
    else:
        matrix = np.array([list(row) for row in table], dtype=object)
    if matrix.ndim != 2:
        raise AgreementError("a label table must be two-dimensional: items x annotators")
    out = matrix.copy()
    for idx, value in np.ndenumerate(out):
        if _is_missing(value):
            out[idx] = None
    return out


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool):
        return (1, str(value))
    if isinstance(value, int | float | np.integer | np.floating):
        return (0, float(value))
    return (1, str(value))


def _require_order(observed: Iterable[Any], declared: Sequence[Any] | None, what: str) -> None:
    """Ordered statistics on text labels need the order: alphabetical is never a scale."""
    if declared is not None:
        return
    text = sorted({str(v) for v in observed if isinstance(v, str)})
    if text:
        raise AgreementError(
            f"{what} on text labels needs the category order, lowest first "
            f"(categories=[...], CLI --categories or --axis); labels seen: {', '.join(text)}"
        )


def _categories(observed: Iterable[Any], declared: Sequence[Any] | None) -> list:
    seen = set(observed)
    if declared is None:
        return sorted(seen, key=_sort_key)
    declared = list(declared)
    if len(set(declared)) != len(declared):
        raise AgreementError("declared categories contain duplicates")
    unknown = seen - set(declared)
    if unknown:
        raise AgreementError(
            f"labels {sorted(map(str, unknown))} are not among the declared categories {declared}"
        )
    return declared


def _value_counts(matrix: np.ndarray, categories: list) -> np.ndarray:
    code = {c: i for i, c in enumerate(categories)}
    counts = np.zeros((matrix.shape[0], len(categories)), dtype=np.int64)
    for (i, _), value in np.ndenumerate(matrix):
        if value is not None:
            counts[i, code[value]] += 1
    return counts


def _observed(matrix: np.ndarray) -> list:
    return [v for v in matrix.ravel().tolist() if v is not None]


def _n_annotators(matrix: np.ndarray, rows: np.ndarray) -> int:
    if not rows.any():
        return 0
    sub = matrix[rows]
    return int(sum(any(v is not None for v in sub[:, j]) for j in range(sub.shape[1])))


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha


def _numeric_domain(categories: list, level: str, declared: bool) -> np.ndarray:
    if level in ("nominal", "ordinal"):
        return np.arange(len(categories), dtype=np.float64)
    if all(
        isinstance(c, int | float | np.integer | np.floating) and not isinstance(c, bool)
        for c in categories
    ):
        return np.asarray(categories, dtype=np.float64)
    numeric = []
    for c in categories:
        try:
            numeric.append(float(c))
        except (TypeError, ValueError):
            numeric = []
            break
    if numeric:
        return np.asarray(numeric, dtype=np.float64)
    if level == "interval" and declared:
        # A declared scale of non-numeric labels is treated as equally spaced points.
        return np.arange(len(categories), dtype=np.float64)
    raise AgreementError(f"{level} α needs numeric labels (or, for interval, a declared scale)")


def _distance(domain: np.ndarray, level: str, n_v: np.ndarray) -> np.ndarray:
    """Krippendorff's δ² for each value pair; ``n_v`` is (B, V), result (B, V, V)."""
    b = n_v.shape[0]
    v1 = domain[:, None]
    v2 = domain[None, :]
    if level == "nominal":
        d = (v1 != v2).astype(np.float64)
    elif level == "interval":
        d = (v1 - v2) ** 2
    elif level == "ratio":
        total = v1 + v2
        d = np.divide(v1 - v2, total, out=np.zeros_like(total), where=total != 0) ** 2
    else:
        cum = np.concatenate([np.zeros((b, 1)), np.cumsum(n_v, axis=1)], axis=1)
        idx = np.arange(len(domain))
        lo = np.minimum(idx[:, None], idx[None, :])
        hi = np.maximum(idx[:, None], idx[None, :])
        between = cum[:, hi + 1] - cum[:, lo]
        return (between - (n_v[:, :, None] + n_v[:, None, :]) / 2.0) ** 2
    return np.broadcast_to(d, (b, len(domain), len(domain)))


def _alpha_from_counts(
    pattern_counts: np.ndarray, weights: np.ndarray, domain: np.ndarray, level: str
) -> np.ndarray:
    """α for each row of ``weights`` (B x P) over rating patterns (P x V); NaN where 0/0."""
    m = pattern_counts.sum(axis=1)
    v = pattern_counts.shape[1]
    outer = pattern_counts[:, :, None] * pattern_counts[:, None, :]
    outer = outer - pattern_counts[:, :, None] * np.eye(v)[None, :, :]
    per_unit = np.divide(
        outer, (m - 1)[:, None, None], out=np.zeros(outer.shape), where=(m >= 2)[:, None, None]
    )
    o = (weights @ per_unit.reshape(len(m), v * v)).reshape(-1, v, v)
    n_v = o.sum(axis=1)
    n = n_v.sum(axis=1)
    e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(v)[None]) / np.where(
        n > 1, n - 1, np.nan
    )[:, None, None]
    d = _distance(domain, level, n_v)
    observed = (o * d).sum(axis=(1, 2))
    expected = (e * d).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - observed / expected, np.nan)


def _unique_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a non-negative count table and how often each occurs (sorted rows)."""
    counts = np.asarray(counts, dtype=np.int64)
    base = int(counts.max()) + 1 if counts.size else 1
    if counts.shape[1] and base ** counts.shape[1] < 2**62:
        # Encode each row as one integer: a 1-D unique is far faster than np.unique(axis=0).
        keys = counts @ (base ** np.arange(counts.shape[1] - 1, -1, -1, dtype=np.int64))
        _, first, freq = np.unique(keys, return_index=True, return_counts=True)
        return counts[first], freq
    patterns, freq = np.unique(counts, axis=0, return_counts=True)
    return patterns, freq


def _pattern_weights(counts: np.ndarray, n: int, seed: int):
    """Unique rows of ``counts`` and a generator of multinomial resample weights."""
    patterns, freq = _unique_rows(counts)
    total = int(freq.sum())
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // max(len(patterns), 1))

    def draws():
        done = 0
        while done < n:
            size = min(chunk, n - done)
            yield rng.multinomial(total, freq / total, size=size).astype(np.float64)
            done += size

    return patterns, draws


def _tails(level: float = 0.95) -> list[float]:
    tail = (1.0 - level) / 2.0
    return [tail, 1.0 - tail]


def _percentile(reps: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    reps = reps[np.isfinite(reps)]
    if len(reps) == 0:
        return None
    lo, hi = np.quantile(reps, _tails(level))
    return float(lo), float(hi)


def krippendorff_alpha(
    table: LabelTable | Sequence[Sequence[Any]] | np.ndarray,
    *,
    level: str = "nominal",
    categories: Sequence[Any] | None = None,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementResult:
    """Krippendorff's α at ``level`` (nominal, ordinal, interval, ratio); missing ratings allowed.

    The point estimate is ``krippendorff.alpha``. Undefined (``value=None``) when no item has two
    ratings or all pairable ratings share one value. ``ci=True`` adds a unit-resampling percentile
    bootstrap interval (``n_resamples``, ``seed``).
    """
    if level not in LEVELS:
        raise AgreementError(f"level must be one of {LEVELS}")
    matrix = _as_matrix(table)
    if level in ("ordinal", "interval"):
        _require_order(_observed(matrix), categories, f"{level} α")
    cats = _categories(_observed(matrix), categories)
    counts = _value_counts(matrix, cats)
    pairable = counts.sum(axis=1) >= 2
    return krippendorff_alpha_counts(
        counts,
        categories=cats,
        level=level,
        declared=categories is not None,
        ci=ci,
        n_resamples=n_resamples,
        seed=seed,
        n_annotators=_n_annotators(matrix, pairable),
    )


def krippendorff_alpha_counts(
    counts: Sequence[Sequence[int]] | np.ndarray,
    *,
    categories: Sequence[Any],
    level: str = "nominal",
    declared: bool = True,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    n_annotators: int = 0,
) -> AgreementResult:
    """Krippendorff's α from an items x categories table of rating counts (``categories`` in
    column order; for ordinal data, in scale order). Same contract as :func:`krippendorff_alpha`,
    for callers that aggregate large data themselves (no per-rating Python objects)."""
    if level not in LEVELS:
        raise AgreementError(f"level must be one of {LEVELS}")
    counts = np.asarray(counts, dtype=np.int64)
    cats = list(categories)
    if counts.ndim != 2 or counts.shape[1] != len(cats):
        raise AgreementError("counts must be an items x categories table matching categories")
    pairable = counts.sum(axis=1) >= 2
    result = AgreementResult(None, None, int(pairable.sum()), n_annotators, "krippendorff")
    if not pairable.any():
        return replace(result, reason="no item has two or more ratings, so α is undefined")
    if np.count_nonzero(counts[pairable].sum(axis=0)) < 2:
        return replace(
            result,
            reason="every pairable rating has the same value: expected disagreement is 0, α is 0/0",
        )
    domain = _numeric_domain(cats, level, declared)
    order = np.argsort(domain, kind="stable")
    domain = domain[order]
    counts = counts[:, order]
    value = float(
        krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
    )
    interval = None
    if ci:
        patterns, draws = _pattern_weights(counts[pairable], n_resamples, seed)
        reps = np.concatenate([_alpha_from_counts(patterns, w, domain, level) for w in draws()])
        interval = _percentile(reps)
    return replace(result, value=value, ci=interval)


def alpha_bootstrap_point(table, *, level: str = "nominal", categories=None) -> float:
    """α recomputed by the vectorised bootstrap kernel on the observed data (for verification)."""
    matrix = _as_matrix(table)
    cats = _categories(_observed(matrix), categories)
    counts = _value_counts(matrix, cats)
    domain = _numeric_domain(cats, level, categories is not None)
    order = np.argsort(domain, kind="stable")
    patterns, inverse, freq = np.unique(
        counts[:, order], axis=0, return_inverse=True, return_counts=True
    )
    return float(
        _alpha_from_counts(patterns, freq[None, :].astype(np.float64), domain[order], level)[0]
    )


# ---------------------------------------------------------------------------------------------
# Cohen's kappa


def _kappa_from_tables(tables: np.ndarray, weights: str | None) -> np.ndarray:
    """κ = 1 - Σ w·O / Σ w·E for each (B, V, V) table, w the disagreement weights by rank."""
    v = tables.shape[1]
    idx = np.arange(v)
    dist = np.abs(idx[:, None] - idx[None, :]).astype(np.float64)
    w = (
        (dist > 0).astype(np.float64)
        if weights is None
        else dist
        if weights == "linear"
        else dist**2
    )
    n = tables.sum(axis=(1, 2))
    obs = (tables * w).sum(axis=(1, 2)) / n
    expected_tables = (
        tables.sum(axis=2)[:, :, None] * tables.sum(axis=1)[:, None, :] / (n**2)[:, None, None]
    )
    exp = (expected_tables * w).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(exp > 0, 1.0 - obs / exp, np.nan)


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementResult:
    """Cohen's κ between two annotators' labels for the same items (statsmodels).

    ``a[i]`` and ``b[i]`` label item ``i``; items where either label is missing are dropped.
    ``weights``: ``None`` (unweighted), ``"linear"`` or ``"quadratic"``, with distances by rank in
    the declared ``categories`` (else the sorted observed labels). Undefined when no item has both
    labels or only one category occurs (chance agreement 1, κ = 0/0).
    """
    if weights not in WEIGHTS:
        raise AgreementError(f"weights must be one of {WEIGHTS}")
    if len(a) != len(b):
        raise AgreementError("the two label sequences must have the same length")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not _is_missing(x) and not _is_missing(y)]
    if not pairs:
        return AgreementResult(None, "no item was labelled by both annotators", 0, 0, "cohen")
    if weights is not None:
        _require_order([v for p in pairs for v in p], categories, f"{weights}-weighted κ")
    cats = _categories([v for p in pairs for v in p], categories)
    code = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)), dtype=np.int64)
    for x, y in pairs:
        table[code[x], code[y]] += 1
    return cohen_kappa_table(table, weights=weights, ci=ci, n_resamples=n_resamples, seed=seed)


def cohen_kappa_table(
    table: Sequence[Sequence[int]] | np.ndarray,
    *,
    weights: str | None = None,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementResult:
    """Cohen's κ from a square confusion table of counts (rows: annotator A's category, columns:
    B's, both in scale order) — statsmodels' own input. Same contract as :func:`cohen_kappa`, for
    callers that count large data themselves."""
    if weights not in WEIGHTS:
        raise AgreementError(f"weights must be one of {WEIGHTS}")
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise AgreementError("a Cohen table must be square (categories x categories)")
    n = int(table.sum())
    result = AgreementResult(None, None, n, 2 if n else 0, "cohen")
    if n == 0:
        return replace(result, reason="no item was labelled by both annotators")
    used = (table.sum(axis=0) + table.sum(axis=1)) > 0
    if used.sum() < 2:
        return replace(
            result, reason="every label is the same category: chance agreement is 1, κ is 0/0"
        )
    # Only κ is needed; statsmodels' full results object (variances, tests) costs ~10x more.
    # SciPy/statsmodels load on first use, not at Django start-up (issue 26: ~60 MB per process).
    from statsmodels.stats.inter_rater import cohens_kappa

    kappa = cohens_kappa(table, wt=weights, return_results=False)
    interval = None
    if ci:
        rng = np.random.default_rng(seed)
        flat = table.ravel()
        reps = []
        for start in range(0, n_resamples, 20_000):
            size = min(20_000, n_resamples - start)
            draws = rng.multinomial(n, flat / n, size=size)
            reps.append(
                _kappa_from_tables(draws.reshape(size, *table.shape).astype(float), weights)
            )
        interval = _percentile(np.concatenate(reps))
    return replace(result, value=float(kappa), ci=interval)


def cohen_kappa_tables(
    tables: Sequence[Sequence[Sequence[int]]] | np.ndarray,
    *,
    weights: str | None = None,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[AgreementResult]:
    """:func:`cohen_kappa_table` for each of many tables of one shape, with exactly its results:
    each table still gets statsmodels' κ and its own ``default_rng(seed)`` draws; only the
    bootstrap κ of all tables and their percentiles are computed together (element-wise the
    same arithmetic, in one NumPy call instead of one per table)."""
    tables = np.asarray(tables, dtype=np.float64)
    if tables.ndim != 3:
        raise AgreementError("tables must be a (tables, categories, categories) array")
    results = [cohen_kappa_table(t, weights=weights) for t in tables]
    todo = [i for i, r in enumerate(results) if r.value is not None]
    if not ci or not todo:
        return results
    shape = tables.shape[1:]
    rngs = {i: np.random.default_rng(seed) for i in todo}
    reps: dict[int, list[np.ndarray]] = {i: [] for i in todo}
    for start in range(0, n_resamples, 20_000):
        size = min(20_000, n_resamples - start)
        draws = []
        for i in todo:
            flat = tables[i].ravel()
            n = results[i].n_items
            draws.append(rngs[i].multinomial(n, flat / n, size=size).reshape(size, *shape))
        kappas = _kappa_from_tables(np.concatenate(draws).astype(float), weights)
        for k, i in enumerate(todo):
            reps[i].append(kappas[k * size : (k + 1) * size])
    all_reps = np.stack([np.concatenate(reps[i]) for i in todo])
    finite = np.isfinite(all_reps).all(axis=1)
    bounds = {}
    if finite.any():
        lo, hi = np.quantile(all_reps[finite], _tails(), axis=1)
        for i, low, high in zip(np.asarray(todo)[finite].tolist(), lo, hi, strict=True):
            bounds[i] = (float(low), float(high))
    for k in np.flatnonzero(~finite).tolist():
        bounds[todo[k]] = _percentile(all_reps[k])
    return [replace(r, ci=bounds[i]) if i in bounds else r for i, r in enumerate(results)]


def pairwise_cohen_kappa(
    table: LabelTable | Sequence[Sequence[Any]] | np.ndarray,
    *,
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
) -> dict[tuple[Any, Any], AgreementResult]:
    """Cohen's κ for every annotator pair of an items x annotators table."""
    matrix = _as_matrix(table)
    names = table.annotators if isinstance(table, LabelTable) else list(range(matrix.shape[1]))
    if categories is None and weights is None:
        categories = _categories(_observed(matrix), None)
    return {
        (names[i], names[j]): cohen_kappa(
            matrix[:, i].tolist(), matrix[:, j].tolist(), weights=weights, categories=categories
        )
        for i, j in combinations(range(matrix.shape[1]), 2)
    }


# ---------------------------------------------------------------------------------------------
# Fleiss' kappa and percent agreement


def _fleiss_from_counts(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    m = patterns.sum(axis=1)[0]
    p_i = ((patterns**2).sum(axis=1) - m) / (m * (m - 1))
    n_items = weights.sum(axis=1)
    p_bar = weights @ p_i / n_items
    p_j = (weights @ patterns) / (n_items * m)[:, None]
    p_e = (p_j**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1, (p_bar - p_e) / (1 - p_e), np.nan)


def fleiss_kappa_counts(
    counts: Sequence[Sequence[int]] | np.ndarray,
    *,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    n_annotators: int | None = None,
) -> AgreementResult:
    """Fleiss' κ from an items x categories count table (statsmodels ``fleiss_kappa``).

    Every item must have the same number of ratings; otherwise :class:`AgreementError` (use
    Krippendorff's α, which allows missing ratings). Undefined when items have fewer than two
    ratings or all ratings fall in one category.
    """
    arr = np.asarray(counts, dtype=np.int64)
    if arr.ndim != 2:
        raise AgreementError("counts must be an items x categories table")
    arr = arr[arr.sum(axis=1) > 0]
    per_item = arr.sum(axis=1)
    raters = int(per_item[0]) if len(arr) else 0
    result = AgreementResult(None, None, len(arr), n_annotators or raters, "fleiss")
    if len(arr) == 0:
        return replace(result, reason="no rated items")
    if np.any(per_item != per_item[0]):
        raise AgreementError(
            "Fleiss' kappa needs the same number of ratings for every item; found between "
            f"{per_item.min()} and {per_item.max()}. Use Krippendorff's alpha, which handles "
            "missing ratings."
        )
    if raters < 2:
        return replace(result, reason="each item has fewer than two ratings, so κ is undefined")
    if np.count_nonzero(arr.sum(axis=0)) < 2:
        return replace(
            result, reason="every rating is the same category: chance agreement is 1, κ is 0/0"
        )
    from statsmodels.stats.inter_rater import fleiss_kappa as _sm_fleiss_kappa  # see cohen

    value = float(_sm_fleiss_kappa(arr, method="fleiss"))
    interval = None
    if ci:
        patterns, draws = _pattern_weights(arr, n_resamples, seed)
        interval = _percentile(
            np.concatenate([_fleiss_from_counts(patterns.astype(float), w) for w in draws()])
        )
    return replace(result, value=value, ci=interval)


def fleiss_kappa(
    table: LabelTable | Sequence[Sequence[Any]] | np.ndarray,
    *,
    categories: Sequence[Any] | None = None,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementResult:
    """Fleiss' κ for an items x annotators label table (statsmodels ``aggregate_raters``).

    Items need not be rated by the same annotators, but every rated item must have the same
    number of ratings (else :class:`AgreementError` pointing to Krippendorff's α).
    """
    matrix = _as_matrix(table)
    cats = _categories(_observed(matrix), categories)
    code = {c: i for i, c in enumerate(cats)}
    rated = [[code[v] for v in row if v is not None] for row in matrix.tolist()]
    rated = [row for row in rated if row]
    n_annotators = _n_annotators(matrix, np.ones(matrix.shape[0], dtype=bool))
    if not rated:
        return AgreementResult(None, "no rated items", 0, 0, "fleiss")
    sizes = {len(row) for row in rated}
    if len(sizes) > 1:
        raise AgreementError(
            "Fleiss' kappa needs the same number of ratings for every item; found between "
            f"{min(sizes)} and {max(sizes)}. Use Krippendorff's alpha, which handles missing "
            "ratings."
        )
    from statsmodels.stats.inter_rater import aggregate_raters  # see cohen

    counts, _ = aggregate_raters(np.asarray(rated), n_cat=len(cats))
    return fleiss_kappa_counts(
        counts, ci=ci, n_resamples=n_resamples, seed=seed, n_annotators=n_annotators
    )


def _percent_from_counts(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    m = patterns.sum(axis=1)
    agree = (patterns * (patterns - 1)).sum(axis=1) / (m * (m - 1))
    return weights @ agree / weights.sum(axis=1)


def percent_agreement(
    table: LabelTable | Sequence[Sequence[Any]] | np.ndarray,
    *,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementResult:
    """Mean over items (with two or more ratings) of the share of agreeing rating pairs.

    With two annotators this is the share of items on which they agree; with equal numbers of
    ratings per item it equals Fleiss' P̄. Undefined when no item has two ratings.
    """
    matrix = _as_matrix(table)
    cats = _categories(_observed(matrix), None)
    counts = _value_counts(matrix, cats)
    pairable = counts.sum(axis=1) >= 2
    result = AgreementResult(
        None, None, int(pairable.sum()), _n_annotators(matrix, pairable), "percent"
    )
    if not pairable.any():
        return replace(result, reason="no item has two or more ratings")
    sub = counts[pairable].astype(np.float64)
    value = float(_percent_from_counts(sub, np.ones((1, len(sub))))[0])
    interval = None
    if ci:
        patterns, draws = _pattern_weights(counts[pairable], n_resamples, seed)
        interval = _percentile(
            np.concatenate([_percent_from_counts(patterns.astype(float), w) for w in draws()])
        )
    return replace(result, value=value, ci=interval)


def percent_agreement_counts(
    counts: Sequence[Sequence[int]] | np.ndarray,
    *,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    n_annotators: int = 0,
) -> AgreementResult:
    """:func:`percent_agreement` from an items x categories table of rating counts, for callers
    that aggregate large data themselves (same value, same bootstrap as from a label table)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2:
        raise AgreementError("counts must be an items x categories table")
    pairable = counts.sum(axis=1) >= 2
    result = AgreementResult(None, None, int(pairable.sum()), n_annotators, "percent")
    if not pairable.any():
        return replace(result, reason="no item has two or more ratings")
    sub = counts[pairable].astype(np.float64)
    value = float(_percent_from_counts(sub, np.ones((1, len(sub))))[0])
    interval = None
    if ci:
        patterns, draws = _pattern_weights(counts[pairable], n_resamples, seed)
        interval = _percentile(
            np.concatenate([_percent_from_counts(patterns.astype(float), w) for w in draws()])
        )
    return replace(result, value=value, ci=interval)


def agreement(
    table: LabelTable,
    *,
    metric: str,
    level: str = "nominal",
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
    ci: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementResult:
    """Dispatch on ``metric`` (``cohen``, ``fleiss``, ``krippendorff``, ``percent``).

    ``cohen`` needs exactly two annotators in the table (else :class:`AgreementError`; use
    :func:`pairwise_cohen_kappa` for more).
    """
    opts = {"ci": ci, "n_resamples": n_resamples, "seed": seed}
    if metric == "krippendorff":
        return krippendorff_alpha(table, level=level, categories=categories, **opts)
    if metric == "fleiss":
        return fleiss_kappa(table, categories=categories, **opts)
    if metric == "percent":
        return percent_agreement(table, **opts)
    if metric == "cohen":
        matrix = _as_matrix(table)
        if matrix.shape[1] != 2:
            raise AgreementError(
                f"Cohen's kappa compares exactly two annotators; found {matrix.shape[1]} "
                "(use fleiss or krippendorff for more)"
            )
        return cohen_kappa(
            matrix[:, 0].tolist(),
            matrix[:, 1].tolist(),
            weights=weights,
            categories=categories,
            **opts,
        )
    raise AgreementError("metric must be one of cohen, fleiss, krippendorff, percent")
