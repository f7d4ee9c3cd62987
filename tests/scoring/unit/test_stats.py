"""Statistics helpers against SciPy/statsmodels and textbook values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from scoring.stats import (
    bootstrap_ci,
    bootstrap_distribution,
    detector_f1,
    holm_bonferroni,
    mcnemar,
    spearman,
    wilcoxon,
)


def test_bootstrap_defaults_follow_probe_seed_manifest():
    result = bootstrap_ci(np.arange(20, dtype=float))
    assert (result.n_resamples, result.seed, result.level) == (10_000, 8821, 0.95)
    assert result.estimate == pytest.approx(9.5)
    assert result.low < 9.5 < result.high


def test_bootstrap_is_deterministic_for_a_seed_and_changes_with_it():
    values = np.random.default_rng(1).normal(size=50)
    a = bootstrap_ci(values, n=2000, seed=5)
    b = bootstrap_ci(values, n=2000, seed=5)
    c = bootstrap_ci(values, n=2000, seed=6)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)


def test_bootstrap_mean_interval_matches_normal_theory_for_large_samples():
    values = np.random.default_rng(2).normal(loc=3.0, scale=2.0, size=2000)
    result = bootstrap_ci(values, n=4000)
    half_width = 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert (result.high - result.low) / 2 == pytest.approx(half_width, rel=0.1)


def test_stratified_bootstrap_keeps_each_stratum_size():
    # Stratum "a" is all 0, stratum "b" all 1: every stratified resample has mean exactly 0.25.
    values = np.array([0.0] * 30 + [1.0] * 10)
    strata = ["a"] * 30 + ["b"] * 10
    reps = bootstrap_distribution(values, n=200, strata=strata)
    assert np.all(reps == 0.25)
    unstratified = bootstrap_distribution(values, n=200)
    assert unstratified.std() > 0


def test_bootstrap_accepts_other_statistics():
    result = bootstrap_ci([1.0, 2.0, 3.0, 100.0], stat=np.median, n=500)
    assert result.estimate == 2.5


def test_mcnemar_matches_statsmodels_exact_binomial():
    # 10 discordant pairs, 8 favour A: exact two-sided binomial p = 2 * P(X <= 2 | n=10, p=.5).
    a = [True] * 8 + [False] * 2 + [True] * 5
    b = [False] * 8 + [True] * 2 + [True] * 5
    result = mcnemar(a, b)
    assert result.pvalue == pytest.approx(2 * sps.binom.cdf(2, 10, 0.5))
    assert result.statistic == 2


def test_mcnemar_without_discordant_pairs_is_undefined():
    assert mcnemar([True, False], [True, False]).reason.startswith("no discordant pairs")


def test_wilcoxon_matches_scipy():
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    # Hollander & Wolfe example used in SciPy's documentation: p = 0.0390625 (exact, 2-sided)
    result = wilcoxon(x, y)
    assert result.pvalue == pytest.approx(0.0390625)
    assert result.statistic == pytest.approx(sps.wilcoxon(x, y).statistic)


def test_wilcoxon_all_zero_differences_is_undefined():
    assert wilcoxon([1, 2], [1, 2]).reason == "all paired differences are zero"


def test_holm_bonferroni_step_down():
    # Holm (1979): sorted p 0.01, 0.02, 0.03, 0.04 with m=4 -> 0.04, 0.06, 0.06, 0.06
    result = holm_bonferroni([0.04, 0.01, 0.03, 0.02])
    assert result.pvalues_adjusted == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert result.reject == [False, True, False, False]


def test_spearman_with_fisher_z_interval():
    x = np.arange(30, dtype=float)
    y = x + np.random.default_rng(3).normal(scale=8, size=30)
    result = spearman(x, y)
    rho = sps.spearmanr(x, y).statistic
    assert result.rho == pytest.approx(rho)
    z = np.arctanh(rho)
    assert result.low == pytest.approx(np.tanh(z - 1.959963984540054 / np.sqrt(27)))
    assert result.high == pytest.approx(np.tanh(z + 1.959963984540054 / np.sqrt(27)))


def test_spearman_undefined_cases():
    assert spearman([1, 2, 3], [1, 2, 3]).reason.startswith("need at least 4")
    assert spearman([1, 1, 1, 1], [1, 2, 3, 4]).rho is None


def test_detector_f1_counts():
    predicted = [True, True, False, False, True]
    actual = [True, False, True, False, True]
    result = detector_f1(predicted, actual)
    assert (result.tp, result.fp, result.fn, result.tn) == (2, 1, 1, 1)
    assert result.f1 == pytest.approx(2 / 3)
    assert result.precision == pytest.approx(2 / 3)


def test_detector_f1_undefined_without_positives():
    result = detector_f1([False, False], [False, False])
    assert result.f1 is None
    assert "0/0" in result.reason


def test_wilcoxon_methods_are_stated_and_exact_handles_ties_and_zeros():
    x = np.array([1.0, 2, 2, 3, 3, 3, 0, 5, 1, 4, -4, 0.5])
    y = np.zeros(12)
    y[6] = 0.0  # one zero difference, dropped
    exact = wilcoxon(x, y, method="exact")
    assert exact.method == "exact"
    # The exact conditional distribution equals an exhaustive permutation test on the
    # non-zero differences (SciPy's own "auto" would use the normal approximation here).
    d = (x - y)[x != y]
    perm = sps.wilcoxon(d, method=sps.PermutationMethod(n_resamples=np.inf))
    assert exact.pvalue == pytest.approx(perm.pvalue, abs=1e-12)
    approx = wilcoxon(x, y, method="asymptotic")
    assert approx.method == "asymptotic"
    assert approx.pvalue == pytest.approx(sps.wilcoxon(d, method="asymptotic").pvalue)
    assert wilcoxon(x, y).method == "exact"  # auto: 11 non-zero differences ≤ 50
    rng = np.random.default_rng(3)
    big_x, big_y = rng.random(80), rng.random(80)
    assert wilcoxon(big_x, big_y).method == "asymptotic"
    with pytest.raises(ValueError, match="method"):
        wilcoxon(x, y, method="normal")


def test_compare_paired_holm_over_every_pair_and_metric():
    from scoring.stats import compare_paired

    rng = np.random.default_rng(11)
    base = rng.random(40)
    scores = {
        "A": {"ndcg@10": base, "hit@10": (base > 0.5).astype(float)},
        "B": {"ndcg@10": base + 0.2, "hit@10": (base > 0.3).astype(float)},
        "C": {"ndcg@10": base.copy(), "hit@10": (base > 0.5).astype(float)},
    }
    pairs = compare_paired(scores, wilcoxon_method="exact")
    assert [(p.a, p.b, p.metric) for p in pairs] == [
        ("A", "B", "ndcg@10"),
        ("A", "B", "hit@10"),
        ("A", "C", "ndcg@10"),
        ("A", "C", "hit@10"),
        ("B", "C", "ndcg@10"),
        ("B", "C", "hit@10"),
    ]
    tested = [p for p in pairs if p.pvalue is not None]
    holm = holm_bonferroni([p.pvalue for p in tested])
    assert [p.adjusted for p in tested] == holm.pvalues_adjusted
    ac = pairs[2]
    assert ac.pvalue is None and ac.reason == "all paired differences are zero"
    assert pairs[1].test == "McNemar" and pairs[0].test == "Wilcoxon signed-rank"
    assert pairs[0].losses == 40 and pairs[0].reject
