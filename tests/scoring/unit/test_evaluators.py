"""Evaluator report: figures equal scikit-learn, krippendorff and SciPy called directly."""

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, f1_score, precision_score, recall_score

from scoring.evaluators import (
    ACCEPTABILITY_SCALE,
    DEFAULT_AXES,
    GROUNDING_SCALE,
    EvaluatorConfig,
    fisher_z_test,
    pooled_alpha,
)
from scoring.evaluators import (
    evaluator_report as report,
)

FAST = EvaluatorConfig(resamples=400)


def _items(n=80, seed=5):
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        g = GROUNDING_SCALE[rng.integers(0, 4)]
        acceptable = g in ("fully_grounded", "partially_grounded") and rng.random() < 0.85
        humans = [
            g if rng.random() < 0.8 else GROUNDING_SCALE[rng.integers(0, 4)] for _ in range(3)
        ]
        acc_h = [
            ("acceptable" if acceptable else "unacceptable")
            if rng.random() < 0.85
            else ("unacceptable" if acceptable else "acceptable")
            for _ in range(3)
        ]
        items.append(
            {
                "record_id": f"r{i}",
                "domain": ["supply_chain", "healthcare_ops"][i % 2],
                "task_family": ["a", "b"][(i // 2) % 2],
                "week": f"2026-W{40 + i % 3}",
                "acceptable": acceptable,
                "unsafe": (not acceptable) and rng.random() < 0.5,
                "labels": {
                    "acceptability": "acceptable" if acceptable else "unacceptable",
                    "grounding": g,
                },
                "human_labels": {"acceptability": acc_h, "grounding": humans},
                "scores": {"pcs": float(rng.uniform(40, 100)), "ndcg_at_10": float(rng.random())},
            }
        )
    return items


def _copying_judge(items):
    return {
        it["record_id"]: {
            "labels": dict(it["labels"]),
            "score": 0.9 if it["acceptable"] else 0.1,
            "unsafe_probability": 0.9 if it["unsafe"] else 0.05,
        }
        for it in items
    }


def _random_judge(items, seed=99):
    rng = np.random.default_rng(seed)
    return {
        it["record_id"]: {
            "labels": {
                "acceptability": ACCEPTABILITY_SCALE[rng.integers(0, 2)],
                "grounding": GROUNDING_SCALE[rng.integers(0, 4)],
            },
            "score": float(rng.random()),
            "unsafe_probability": float(rng.random()),
        }
        for it in items
    }


def test_gold_copying_judge_is_trusted_with_kappa_one_and_random_judge_is_not():
    items = _items()
    rep = report(
        items, {"copy": _copying_judge(items), "random": _random_judge(items)}, config=FAST
    )
    copy = {a.axis: a for a in rep.row("copy").axes}
    rand = {a.axis: a for a in rep.row("random").axes}
    for axis in ("acceptability", "grounding"):
        assert copy[axis].kappa.value == pytest.approx(1.0)
        assert copy[axis].trusted
        assert copy[axis].kappa.low == pytest.approx(1.0)
        assert not rand[axis].trusted
        assert rand[axis].kappa.value < 0.3
    assert rep.row("copy").unsafe_f1.value == pytest.approx(1.0)
    assert rep.row("copy").correct_decisions.value == pytest.approx(1.0)


def test_kappa_alpha_rho_f1_equal_reference_libraries():
    items = _items()
    judge = _random_judge(items, seed=3)
    # make the judge informative so every figure is non-trivial
    for it in items[::2]:
        judge[it["record_id"]]["labels"] = dict(it["labels"])
    rep = report(items, {"j": judge}, scores=["ndcg_at_10"], config=FAST)
    row = rep.row("j")
    axes = {a.axis: a for a in row.axes}

    gold_acc = [it["labels"]["acceptability"] for it in items]
    judge_acc = [judge[it["record_id"]]["labels"]["acceptability"] for it in items]
    assert axes["acceptability"].kappa.value == pytest.approx(
        cohen_kappa_score(judge_acc, gold_acc)
    )
    gold_g = [it["labels"]["grounding"] for it in items]
    judge_g = [judge[it["record_id"]]["labels"]["grounding"] for it in items]
    assert axes["grounding"].kappa.value == pytest.approx(
        cohen_kappa_score(judge_g, gold_g, labels=list(GROUNDING_SCALE), weights="linear")
    )

    code = {c: i for i, c in enumerate(GROUNDING_SCALE)}
    reliability = np.array(
        [[code[h[k]] for h in (it["human_labels"]["grounding"] for it in items)] for k in range(3)]
        + [[code[v] for v in judge_g]],
        dtype=float,
    )
    expected = krippendorff.alpha(
        reliability_data=reliability, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
    )
    assert axes["grounding"].alpha_pooled == pytest.approx(expected)
    assert pooled_alpha(items, "grounding", DEFAULT_AXES["grounding"], judge_g) == pytest.approx(
        expected
    )

    scores = [judge[it["record_id"]]["score"] for it in items]
    acceptable = [float(it["acceptable"]) for it in items]
    assert row.rho.value == pytest.approx(sps.spearmanr(scores, acceptable).statistic)
    ndcg = rep.row("ndcg_at_10")
    assert ndcg.rho.value == pytest.approx(
        sps.spearmanr([it["scores"]["ndcg_at_10"] for it in items], acceptable).statistic
    )

    predicted = [judge[it["record_id"]]["unsafe_probability"] >= 0.5 for it in items]
    actual = [it["unsafe"] for it in items]
    assert row.unsafe_f1.value == pytest.approx(f1_score(actual, predicted))
    assert row.unsafe_precision.value == pytest.approx(precision_score(actual, predicted))
    assert row.unsafe_recall.value == pytest.approx(recall_score(actual, predicted))
    for est in (row.rho, row.unsafe_f1, axes["grounding"].kappa, row.correct_decisions):
        assert est.low <= est.value <= est.high


def test_report_is_deterministic_for_the_seed():
    items = _items(40)
    outputs = {"r": _random_judge(items)}
    a = report(items, outputs, config=FAST).to_dict()
    b = report(items, outputs, config=FAST).to_dict()
    assert a == b
    c = report(items, outputs, config=EvaluatorConfig(resamples=400, seed=1)).to_dict()
    assert c["rows"][0]["rho"]["low"] != a["rows"][0]["rho"]["low"]


def test_trust_threshold_is_configurable():
    items = _items()
    judge = _copying_judge(items)
    for it in items[:12]:
        judge[it["record_id"]]["labels"]["acceptability"] = (
            "unacceptable" if it["acceptable"] else "acceptable"
        )
    kappa = {a.axis: a for a in report(items, {"j": judge}, config=FAST).row("j").axes}
    value = kappa["acceptability"].kappa.value
    assert 0.0 < value < 1.0
    strict = EvaluatorConfig(resamples=200, trust_kappa=min(1.0, value + 0.01))
    lax = EvaluatorConfig(resamples=200, trust_kappa=value - 0.01)
    assert not report(items, {"j": judge}, config=strict).row("j").axes[0].trusted
    assert report(items, {"j": judge}, config=lax).row("j").axes[0].trusted


def test_judge_outside_human_alpha_bounds_is_deweighted_in_the_vote():
    items = _items()
    outputs = {"copy": _copying_judge(items), "random": _random_judge(items)}
    rep = report(items, outputs, config=FAST)
    copy = {a.axis: a for a in rep.row("copy").axes}
    rand = {a.axis: a for a in rep.row("random").axes}
    assert copy["grounding"].within_alpha_bounds is True
    assert copy["grounding"].vote_weight == 1.0
    assert rand["grounding"].within_alpha_bounds is False
    assert rand["grounding"].vote_weight < 1.0
    vote = {a.axis: a for a in rep.row("weighted vote").axes}
    # with the random judge deweighted, the vote follows the copying judge
    assert vote["grounding"].kappa.value == pytest.approx(1.0)


def test_drift_alert_when_a_trusted_judge_falls_below_threshold_in_one_week():
    items = _items(90)
    judge = _copying_judge(items)
    rng = np.random.default_rng(1)
    for it in items:
        if it["week"] == "2026-W42" and rng.random() < 0.7:
            judge[it["record_id"]]["labels"]["acceptability"] = (
                "unacceptable" if it["acceptable"] else "acceptable"
            )
    rep = report(items, {"j": judge}, config=FAST)
    assert {a.axis: a for a in rep.row("j").axes}["grounding"].trusted
    alerts = {(a.week, a.axis) for a in rep.alerts}
    assert ("2026-W42", "acceptability") in alerts
    assert all(a.week == "2026-W42" for a in rep.alerts)


def test_fisher_z_matches_hand_computation():
    z, p = fisher_z_test(0.72, 480, 0.47, 480)
    expected = (np.arctanh(0.72) - np.arctanh(0.47)) / np.sqrt(2 / 477)
    assert z == pytest.approx(expected)
    assert p == pytest.approx(2 * sps.norm.sf(expected))
    # dependent correlations: a high correlation between the scores makes the test stronger
    z_dep, _ = fisher_z_test(0.72, 480, 0.47, r12=0.6)
    assert z_dep > z


def test_comparisons_test_each_row_against_the_best_with_holm():
    items = _items()
    rep = report(
        items,
        {"copy": _copying_judge(items), "random": _random_judge(items)},
        scores=["pcs"],
        config=FAST,
    )
    names = {c.name for c in rep.comparisons}
    assert "random" in names and "copy" not in names
    for c in rep.comparisons:
        assert c.against == "copy"
        if c.name == "weighted vote":
            # The random judge is untrusted (weight 0): the vote is the copying judge's own
            # scores, and a correlation cannot be tested against itself.
            assert c.pvalue is None and c.reason
            continue
        assert c.pvalue_holm >= c.pvalue
