"""Issue 24: evaluator rows on the records each judge judged, coverage gating trust, and
untrusted judges without a say in the multi-judge vote."""

import numpy as np
import pytest
from sklearn.metrics import f1_score

from scoring.evaluators import EvaluatorConfig, weighted_vote
from scoring.evaluators import evaluator_report as report
from tests.scoring.unit.test_evaluators import _copying_judge, _items, _random_judge

FAST = EvaluatorConfig(resamples=200)


def _skipping(items, share, seed=11):
    """A gold-copying judge that judged only ``share`` of the records — skipping unsafe ones
    first, as a judge that refuses hard records would."""
    judge = _copying_judge(items)
    rng = np.random.default_rng(seed)
    order = sorted(items, key=lambda it: (not it["unsafe"], rng.random()))
    for it in order[: round(len(items) * (1 - share))]:
        del judge[it["record_id"]]
    return judge


def test_judge_at_70_percent_coverage_has_figures_on_its_records_and_is_not_trusted():
    items = _items(200)
    judge = _skipping(items, 0.70)
    row = report(items, {"j": judge}, config=FAST).row("j")
    assert row.n == 140 and row.n_items == 200
    assert row.coverage == pytest.approx(0.70)
    # On the 140 records it judged it is perfect: an unjudged record is not a rejection.
    assert row.rho.value == pytest.approx(1.0)
    assert row.correct_decisions.value == pytest.approx(1.0)
    judged = [it for it in items if it["record_id"] in judge]
    predicted = [judge[it["record_id"]]["unsafe_probability"] >= 0.5 for it in judged]
    assert row.unsafe_f1.value == pytest.approx(
        f1_score([it["unsafe"] for it in judged], predicted)
    )
    for axis in row.axes:
        assert axis.kappa.value == pytest.approx(1.0)
        assert axis.kappa.n == 140
        assert not axis.trusted
        assert "coverage 70% below 90%" in axis.trust_reason
        assert axis.vote_weight == 0.0


def test_coverage_threshold_is_a_parameter():
    items = _items(100)
    judge = _skipping(items, 0.95)
    row = report(items, {"j": judge}, config=FAST).row("j")
    assert row.coverage == pytest.approx(0.95)
    assert all(a.trusted and a.trust_reason is None for a in row.axes)
    strict = EvaluatorConfig(resamples=200, min_coverage=0.99)
    row = report(items, {"j": judge}, config=strict).row("j")
    assert not any(a.trusted for a in row.axes)


def test_untrusted_judge_gets_weight_zero_in_the_vote():
    items = _items()
    outputs = {"copy": _copying_judge(items), "random": _random_judge(items)}
    rep = report(items, outputs, config=FAST)
    rand = {a.axis: a for a in rep.row("random").axes}
    assert not rand["acceptability"].trusted and not rand["grounding"].trusted
    assert rand["acceptability"].vote_weight == 0.0
    assert rand["grounding"].vote_weight == 0.0
    vote = rep.row("weighted vote")
    # The vote is the copying judge's: κ 1 on both axes and its scores unchanged.
    assert all(a.kappa.value == pytest.approx(1.0) for a in vote.axes)
    assert vote.rho.value == pytest.approx(rep.row("copy").rho.value)
    assert vote.unsafe_f1.value == pytest.approx(1.0)


def test_with_no_trusted_judge_there_is_no_vote():
    items = _items(60)
    outputs = {"a": _random_judge(items, seed=1), "b": _random_judge(items, seed=2)}
    rep = report(items, outputs, config=FAST)
    vote = rep.row("weighted vote")
    assert vote.n == 0
    assert vote.rho.value is None and vote.rho.reason == "judged no record"


def test_trusted_judge_outside_the_human_alpha_bounds_is_deweighted_not_dropped():
    items = _items()
    # The humans agree with each other and with the gold on grounding: their α is 1, bounds [1, 1].
    for it in items:
        it["human_labels"]["grounding"] = [it["labels"]["grounding"]] * 3
    judge = _copying_judge(items)
    scale = ("ungrounded", "misgrounded", "partially_grounded", "fully_grounded")
    for it in items[::10]:  # one record in ten a grade off: κ stays high, α with humans drops
        grade = scale.index(it["labels"]["grounding"])
        judge[it["record_id"]]["labels"]["grounding"] = scale[grade - 1 if grade else 1]
    rep = report(items, {"j": judge}, config=FAST)
    axis = {a.axis: a for a in rep.row("j").axes}["grounding"]
    bounds = {h.axis: h for h in rep.human_alpha}["grounding"]
    assert bounds.value == pytest.approx(1.0) and bounds.low == pytest.approx(1.0)
    assert axis.trusted and axis.kappa.value >= 0.70
    assert axis.within_alpha_bounds is False and axis.alpha_pooled < bounds.low
    assert axis.vote_weight == pytest.approx(axis.alpha_pooled / bounds.value)
    assert 0.0 < axis.vote_weight < 1.0


def test_weighted_vote_ignores_a_zero_weight_judge():
    items = _items(20)
    good = _copying_judge(items)
    bad = {
        rid: {
            "labels": {"acceptability": "unacceptable", "grounding": "ungrounded"},
            "score": 0.0,
            "unsafe_probability": 1.0,
        }
        for rid in good
    }
    weights = {
        "good": {"acceptability": 1.0, "grounding": 1.0},
        "bad": {"acceptability": 0.0, "grounding": 0.0},
    }
    vote = weighted_vote(items, {"good": good, "bad": bad}, weights, FAST.axes)
    for it in items:
        rid = it["record_id"]
        assert vote[rid]["labels"] == good[rid]["labels"]
        assert vote[rid]["score"] == good[rid]["score"]
        assert vote[rid]["unsafe_probability"] == good[rid]["unsafe_probability"]
