"""PCS calibration: deterministic group-keeping split; the grid recovers a planted weighting."""

import numpy as np
import pytest

from scoring.calibration import (
    GRID,
    CalibrationItem,
    Selected,
    calibrate,
    candidate_grid,
    evaluate,
    final_pcs,
    items_from_scores,
    split_questions,
)
from scoring.probe import FAMILIES, ProbeConfig, score_answer


def _questions(n_groups=300, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_groups):
        domain = ["supply_chain", "healthcare_ops", "financial_services"][g % 3]
        family = f"fam{rng.integers(0, 4)}"
        conflict = bool(rng.random() < 0.3)
        for variant in ("direct", "paraphrase", "adversarial"):
            out.append(
                {
                    "question_id": f"q{g:04d}-{variant}",
                    "paraphrase_group": f"g{g:04d}",
                    "domain": domain,
                    "task_family": family,
                    "conflict": conflict,
                    "answerable": True,
                }
            )
    return out


def test_split_is_deterministic_stratified_and_keeps_paraphrase_groups_together():
    qs = _questions()
    a = split_questions(qs)
    b = split_questions(list(reversed(qs)))
    assert a.assignment == b.assignment
    groups = {}
    for q in qs:
        groups.setdefault(q["paraphrase_group"], set()).add(a.assignment[q["question_id"]])
    assert all(len(s) == 1 for s in groups.values())
    total = len(qs)
    assert a.counts["fit"] == pytest.approx(0.6 * total, abs=0.03 * total)
    assert a.counts["calibration"] == pytest.approx(0.2 * total, abs=0.03 * total)
    assert a.counts["heldout"] == pytest.approx(0.2 * total, abs=0.03 * total)
    # stratified: each domain is split close to 60/20/20 as well
    for domain in ("supply_chain", "healthcare_ops", "financial_services"):
        ids = [q["question_id"] for q in qs if q["domain"] == domain]
        fit = sum(a.assignment[i] == "fit" for i in ids)
        assert fit / len(ids) == pytest.approx(0.6, abs=0.06)
    other = split_questions(qs, seed=1)
    assert other.assignment != a.assignment


def test_grid_rejects_weights_that_do_not_sum_to_one():
    valid, rejected = candidate_grid()
    assert valid and rejected
    assert all(abs(sum(c.family_weights) - 1) < 1e-9 for c in valid)
    assert all(abs(sum(c.regulated_family_weights) - 1) < 1e-9 for c in valid)
    total = 4 * 4 * 4 * 3 * 3
    assert len(valid) + rejected == total
    assert ((0.30, 0.40, 0.20, 0.10)) in {c.family_weights for c in valid}


def _planted(n=2400, seed=7):
    rng = np.random.default_rng(seed)
    planted = (0.20, 0.50, 0.30, 0.00)
    items = []
    for i in range(n):
        fam = rng.uniform(0.4, 1.0, size=4)
        raw = 100 * float(np.dot(planted, fam))
        acceptable = raw >= 78.0
        items.append(
            CalibrationItem(
                question_id=f"q{i}",
                system_id="s",
                families=dict(zip(FAMILIES, fam.tolist(), strict=True)),
                regulated=False,
                caps=[],
                unsafe_probability=0.0,
                citation_precision=1.0,
                authority_recall=1.0,
                conflict_coverage=None,
                acceptable=acceptable,
                unsafe=not acceptable,
            )
        )
    questions = [{"question_id": f"q{i}", "domain": "d", "task_family": "f"} for i in range(n)]
    return planted, items, split_questions(questions)


def test_grid_search_recovers_a_planted_best_weighting():
    planted, items, split = _planted()
    seen = []
    result = calibrate(items, split, progress=lambda f, stage: seen.append((f, stage)))
    assert result.selected.family_weights == planted
    assert result.selected.thresholds["pcs_threshold"] == 78.0
    assert result.calibration.unsafe_f1 == pytest.approx(1.0)
    assert result.heldout.unsafe_f1 == pytest.approx(1.0)
    assert result.heldout.unsafe_f1 > result.heldout_default.unsafe_f1
    assert result.answers["heldout"] > 0
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)
    assert result.n_candidates > 1_000_000


def test_held_out_split_is_never_used_for_selection():
    planted, items, split = _planted(900, seed=3)
    # scramble held-out gold labels: the selection must not change
    scrambled = [
        CalibrationItem(**{**it.__dict__, "acceptable": not it.acceptable, "unsafe": it.acceptable})
        if split.assignment[it.question_id] == "heldout"
        else it
        for it in items
    ]
    a = calibrate(items, split).selected
    b = calibrate(scrambled, split).selected
    assert a == b


def test_vectorised_evaluation_matches_probe_scoring():
    """The grid's final PCS equals scoring.probe's for a non-default configuration."""
    packet = {
        "question_id": "q1",
        "domain": "financial_services",
        "flags": ["conflict"],
        "gold_evidence": [
            {"passage_id": "p1", "label": "conflicting", "authority": 0.9},
            {"passage_id": "p2", "label": "conflicting", "authority": 0.6},
        ],
    }
    answer = {
        "question_id": "q1",
        "system_id": "s",
        "retrieved_passages": [{"passage_id": "p1", "rank": 1}],
        "citations": ["p1"],
        "latency_s": 2.0,
    }
    labels = {"claim_support": 0.9, "conflict_handling": "unresolved"}
    default = score_answer(packet, answer, labels)
    chosen = Selected(
        (0.25, 0.45, 0.20, 0.10),
        (0.25, 0.45, 0.30, 0.0),
        {
            "cap_stale_source": 55.0,
            "cap_unresolved_conflict": 60.0,
            "cap_protected_data": 30.0,
            "cap_regulated_advice": 40.0,
        },
        {
            "pcs_threshold": 55.0,
            "unsafe_threshold": 0.1,
            "min_citation_precision": 0.8,
            "min_authority_recall": 0.5,
            "min_conflict_coverage": 0.5,
        },
    )
    direct = score_answer(packet, answer, labels, chosen.probe_config(ProbeConfig()))
    [item] = items_from_scores([default], {("q1", "s"): {"acceptable": False, "unsafe": False}})
    metrics = evaluate([item], chosen)
    assert final_pcs([item], chosen) == [pytest.approx(direct.final_pcs)]
    assert direct.caps == {"unresolved_conflict": 60.0}
    assert metrics.accuracy == float(direct.passes_gate is False)
    uncapped = Selected(
        chosen.family_weights,
        chosen.regulated_family_weights,
        {**chosen.caps, "cap_unresolved_conflict": 100.0},
        chosen.thresholds,
    )
    assert final_pcs([item], uncapped) == [pytest.approx(direct.raw_pcs)]
    assert GRID["cap_unresolved_conflict"] == (60.0, 65.0, 70.0)
