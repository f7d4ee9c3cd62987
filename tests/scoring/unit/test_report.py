"""Release report and ablation on a benchmark with A.9 injected-failure slices."""

import copy
import re

import pytest

from scoring.report import ablation, release_report, render_html
from tests.scoring.unit.test_probe import GOOD_LABELS, PACKET, _answer

DOMAINS = ("supply_chain", "healthcare_ops", "financial_services")


def _benchmark(n=36):
    questions, answers, labels = [], [], []
    for i in range(n):
        qid = f"q{i:03d}"
        packet = copy.deepcopy(PACKET)
        packet.update(question_id=qid, domain=DOMAINS[i % 3], task_family=f"fam{(i // 3) % 2}")
        questions.append(packet)
        good = _answer(question_id=qid, system_id="good", latency_s=2.0, cost_usd=0.01)
        answers.append(good)
        labels.append({**GOOD_LABELS, "question_id": qid, "system_id": "good"})
        slice_ = i % 3
        bad_labels = {**GOOD_LABELS, "question_id": qid, "system_id": "bad"}
        if slice_ == 0:  # A.9: stale route source cited
            bad = _answer(
                question_id=qid,
                system_id="bad",
                latency_s=3.0,
                cost_usd=0.02,
                citations=["accessorial-appendix-2025-s7", "nw-budget-memo-2026-q2-s2"],
            )
            bad_labels.update(
                acceptability="unacceptable",
                primary_failure="stale_source_acceptance",
                secondary_failures=["citation_coverage_gap"],
            )
        elif slice_ == 1:  # A.9: conflict ignored
            bad = _answer(question_id=qid, system_id="bad", latency_s=3.0, cost_usd=0.02)
            bad_labels.pop("contradiction_absence")
            bad_labels.update(
                acceptability="unacceptable",
                conflict_handling="unresolved",
                primary_failure="unresolved_source_conflict",
            )
        else:
            bad = _answer(question_id=qid, system_id="bad", latency_s=8.0, cost_usd=0.02)
        answers.append(bad)
        labels.append(bad_labels)
    return questions, answers, labels


def test_removing_a_check_loses_the_decisions_its_slice_needs():
    questions, answers, labels = _benchmark()
    rows = {r.variant: r for r in ablation(questions, answers, labels)}
    full = rows["Full PCS"].correct_decisions.value
    assert full == pytest.approx(1.0)
    # stale slice: freshness checks and caps catch it; conflict slice: conflict checks and caps
    assert rows["No freshness checks"].correct_decisions.value == pytest.approx(1 - 12 / 72)
    assert rows["No conflict checks"].correct_decisions.value == pytest.approx(1 - 12 / 72)
    assert rows["No safety caps"].correct_decisions.value == pytest.approx(1 - 24 / 72)
    for name in ("No freshness checks", "No conflict checks", "No safety caps"):
        assert rows[name].rho.value <= rows["Full PCS"].rho.value
    assert rows["No expert calibration"].note
    for r in rows.values():
        assert r.correct_decisions.low <= r.correct_decisions.value <= r.correct_decisions.high


def test_release_report_tables_decisions_and_paired_tests():
    questions, answers, labels = _benchmark()
    rep = release_report(questions, answers, labels, resamples=500)
    systems = {s.system_id: s for s in rep.systems}
    good, bad = systems["good"], systems["bad"]
    assert good.release and not bad.release and bad.reasons
    assert bad.caps == {"stale_source": 12, "unresolved_conflict": 12}
    assert good.acceptability.value == 1.0
    assert bad.acceptability.value == pytest.approx(12 / 36)
    assert bad.pcs.high < good.pcs.low
    assert bad.p95_latency_s == pytest.approx(8.0)
    assert good.cost_per_answer.value == pytest.approx(0.01)
    # Table 8: shares of unacceptable answers by primary failure; secondary as remediation notes
    assert rep.n_unacceptable == 24
    assert rep.failures == {"stale_source_acceptance": 0.5, "unresolved_source_conflict": 0.5}
    assert bad.remediation == {"citation_coverage_gap": 12}
    fams = {(d.system_id, d.task_family): d for d in rep.families}
    assert set(fams) == {(s, f) for s in ("bad", "good") for f in ("fam0", "fam1")}
    assert all(fams[("good", f)].release for f in ("fam0", "fam1"))
    tests = {c.test: c for c in rep.comparisons}
    assert tests["McNemar (acceptability)"].pvalue_holm < 0.05
    assert tests["Wilcoxon (PCS)"].reject is True
    assert [s["seed"] for s in rep.seeds] == [3107, 1442, 2718, 5099, 8821, 6601, 9314]
    assert len(rep.checklist) == 6


def test_html_is_self_contained_with_inline_svg():
    questions, answers, labels = _benchmark(12)
    page = render_html(release_report(questions, answers, labels, resamples=200), title="v3")
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 2
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "Stale-source".lower() in page.lower().replace("_", "-").replace(" ", "-") or (
        "stale source acceptance" in page
    )
    assert "Table 9" in page and "3107" in page
