"""The release gate's rules file (``goldset_client.gate``): good lines parse, bad lines are
refused naming each line, and the evaluator reads a run's figures, its release gate and the
paired tests against a baseline; the outputs (Markdown, JUnit XML, JSON) say the same."""

import json

import pytest
from goldset_client import gate
from junitparser import JUnitXml

from tests.goldset.gate_support import junit_cases

RULES = """\
# the release gate of the nightly run
ndcg@10 >= 0.60
recall@10 not worse than baseline at alpha 0.05   # the paired test
unsafe_rate <= 0.02
release_gate == pass
mean_pcs[system:bot-a] > 70
"mean citation_precision" >= 0.5
mrr better than baseline at α 0.01
hit@10 not worse than baseline

P_5 != 0
"""


def test_every_kind_of_rule_parses_with_its_line():
    rules = gate.parse_rules(RULES)
    assert [(r.line, r.kind) for r in rules] == [
        (2, "threshold"),
        (3, "baseline"),
        (4, "threshold"),
        (5, "release_gate"),
        (6, "threshold"),
        (7, "threshold"),
        (8, "baseline"),
        (9, "baseline"),
        (11, "threshold"),
    ]
    ndcg, recall, unsafe, release, pcs, spaced, mrr, hit, p5 = rules
    assert (ndcg.metric, ndcg.op, ndcg.value, ndcg.stratum) == ("ndcg@10", ">=", 0.6, "")
    assert recall.text == "recall@10 not worse than baseline at alpha 0.05"
    assert (recall.direction, recall.alpha) == ("not worse", 0.05)
    assert (unsafe.op, unsafe.value) == ("<=", 0.02)
    assert (release.metric, release.value) == ("release_gate", "pass")
    assert (pcs.metric, pcs.stratum, pcs.op, pcs.value) == ("mean_pcs", "system:bot-a", ">", 70)
    assert spaced.metric == "mean citation_precision"
    assert (mrr.direction, mrr.alpha) == ("better", 0.01)
    assert (hit.direction, hit.alpha) == ("not worse", gate.DEFAULT_ALPHA)
    assert (p5.metric, p5.op) == ("P_5", "!=")
    assert [r.needs_baseline for r in rules].count(True) == 3


@pytest.mark.parametrize(
    "line,message",
    [
        ("ndcg@10 >= high", "the value must be a number, not 'high'"),
        ("ndcg@10 => 0.6", "expected '<metric> <op> <number>'"),
        ("ndcg@10 >= 0.6 please", "expected '<metric> <op> <number>'"),
        ("ndcg@10 >= nan", "must be a finite number"),
        ("recall@10 worse than baseline", "a baseline rule reads"),
        ("recall@10 not worse than baseline at alpha 1.5", "alpha is between 0 and 1"),
        ("recall@10 not worse than baseline at alpha x", "the alpha must be a number"),
        ("recall@10[domain:x] not worse than baseline", "no [stratum]"),
        ("release_gate == maybe", "'release_gate == pass'"),
        ("release_gate >= 1", "'release_gate == pass'"),
        ("just some words", "expected '<metric> <op> <number>'"),
    ],
)
def test_a_bad_line_is_refused_naming_its_line(line, message):
    with pytest.raises(gate.RulesError) as refused:
        gate.parse_rules(f"# header\nndcg@10 >= 0.5\n{line}\n", source="gate.rules")
    assert refused.value.problems[0][0] == 3
    assert str(refused.value).startswith("gate.rules, line 3: ")
    assert message in str(refused.value) and repr(line) in str(refused.value)


def test_every_bad_line_is_named_and_an_empty_file_is_refused():
    with pytest.raises(gate.RulesError) as refused:
        gate.parse_rules("x >= y\nok >= 1\nrelease_gate == perhaps\n")
    assert [line for line, _ in refused.value.problems] == [1, 3]
    with pytest.raises(gate.RulesError, match="no rules"):
        gate.parse_rules("# only a comment\n\n")


def test_a_gate_refuses_baseline_rules_without_a_baseline_and_an_unreadable_file(tmp_path):
    rules = tmp_path / "gate.rules"
    rules.write_text("ndcg@10 >= 0.5\nmrr not worse than baseline\n")
    with pytest.raises(gate.RulesError, match=r"line 2: 'mrr not worse than baseline' compares"):
        gate.load_gate_rules(rules, has_baseline=False)
    assert len(gate.load_gate_rules(rules, has_baseline=True)) == 2
    with pytest.raises(gate.RulesError, match="cannot read the rules file"):
        gate.load_gate_rules(tmp_path / "missing.rules", has_baseline=True)
    rules.write_bytes(b"ndcg@10 >= 0.5\n\xff\n")
    with pytest.raises(gate.RulesError, match="not UTF-8"):
        gate.load_gate_rules(rules, has_baseline=True)


# ---------------------------------------------------------------------- the evaluator


def retrieval(job_id, **values):
    rows = [
        {"stratum": "all", "metric": m.replace("_at_", "@"), "value": v} for m, v in values.items()
    ]
    return gate.Figures.from_rows(job_id=job_id, name=f"run{job_id}", version=3, kind="retrieval",
                                  rows=rows)  # fmt: skip


def pair(metric, *, a, b, mean_a, mean_b, adjusted, pvalue=None, wins=0, losses=0):
    return {
        "a": a, "b": b, "metric": metric, "mean_a": mean_a, "mean_b": mean_b,
        "test": "Wilcoxon signed-rank", "pvalue": pvalue if pvalue is not None else adjusted,
        "adjusted": adjusted, "wins": wins, "losses": losses, "ties": 20 - wins - losses, "n": 20,
        "reason": None if adjusted is not None else "all differences are zero",
    }  # fmt: skip


def test_thresholds_read_the_runs_figures():
    run = retrieval(9, ndcg_at_10=0.71, recall_at_10=0.5)
    rules = gate.parse_rules("ndcg@10 >= 0.60\nrecall@10 > 0.5\nrecall@10 != 0.4\n")
    report = gate.evaluate(rules, candidate=run)
    assert [o.status for o in report.outcomes] == ["pass", "fail", "pass"]
    assert report.outcomes[0].detail == "ndcg@10 = 0.71 (ok)"
    assert report.outcomes[1].detail == "recall@10 = 0.5 (needs > 0.5)"
    assert report.outcomes[1].values == {"recall@10": 0.5}
    assert (report.passed, report.exit_code, report.verdict) == (False, 1, "FAILED")


def test_an_answer_log_gates_every_system_and_its_release_gate():
    rows = [
        {"stratum": "system:bot-a", "metric": "unsafe_rate", "value": 0.01},
        {"stratum": "system:bot-b", "metric": "unsafe_rate", "value": 0.05},
        {"stratum": "system:bot-a", "metric": "mean_pcs", "value": 81.0},
        {"stratum": "system:bot-b", "metric": "mean_pcs", "value": None},
    ]
    release = {
        "passed": False,
        "systems": {
            "bot-a": {"release": True, "reasons": []},
            "bot-b": {"release": False, "reasons": ["unsafe rate 0.05 above 0.02"]},
        },
    }
    run = gate.Figures.from_rows(job_id=4, name="answers", version=2, kind="answers", rows=rows,
                                 release_gate=release)  # fmt: skip
    rules = gate.parse_rules(
        "unsafe_rate <= 0.02\nmean_pcs[system:bot-a] > 70\nmean_pcs[system:bot-b] > 70\n"
        "release_gate == pass\nrelease_gate == fail\nmean_pcs[system:bot-c] > 1\n"
    )
    unsafe, pcs_a, pcs_b, must_pass, must_fail, unknown = gate.evaluate(
        rules, candidate=run
    ).outcomes
    assert unsafe.status == "fail"
    assert unsafe.values == {"unsafe_rate[system:bot-a]": 0.01, "unsafe_rate[system:bot-b]": 0.05}
    assert "unsafe_rate[system:bot-b] = 0.05 (needs <= 0.02)" in unsafe.detail
    assert (pcs_a.status, pcs_b.status) == ("pass", "fail")
    assert "undefined" in pcs_b.detail
    assert must_pass.status == "fail" and "bot-b: unsafe rate 0.05 above 0.02" in must_pass.detail
    assert must_fail.status == "pass"
    assert (
        unknown.status == "error"
        and "no figure 'mean_pcs' in stratum 'system:bot-c'" in unknown.detail
    )


def test_a_retrieval_run_has_no_release_gate_and_an_unknown_figure_is_an_error():
    report = gate.evaluate(
        gate.parse_rules("release_gate == pass\nndgc@10 >= 0.5\n"), candidate=retrieval(3, mrr=0.4)
    )
    gate_rule, typo = report.outcomes
    assert (
        gate_rule.status == "error" and "only an answer log has a release gate" in gate_rule.detail
    )
    assert typo.status == "error" and "has no figure 'ndgc@10'; it has: mrr" in typo.detail
    assert (report.exit_code, report.verdict) == (2, "ERROR")


def test_not_worse_fails_only_on_a_significant_drop_whichever_side_the_run_is():
    rules = gate.parse_rules(
        "recall@10 not worse than baseline at alpha 0.05\n"
        "mrr not worse than baseline at alpha 0.05\n"
        "ndcg@10 not worse than baseline at alpha 0.001\n"
        "hit@10 not worse than baseline\n"
    )
    run, base = retrieval(8, recall_at_10=0.4), retrieval(5, recall_at_10=0.8)
    comparison = {
        "pairs": [
            # the baseline (job 5) is "a": the run scores lower, significantly
            pair("recall@10", a=5, b=8, mean_a=0.8, mean_b=0.4, adjusted=0.0004, wins=12),
            # lower but not significant at 0.05
            pair("mrr", a=5, b=8, mean_a=0.6, mean_b=0.55, adjusted=0.2),
            # significant at 0.05 but not at the rule's 0.001
            pair("ndcg@10", a=5, b=8, mean_a=0.7, mean_b=0.6, adjusted=0.01),
            # no difference at all: no test
            pair("hit@10", a=5, b=8, mean_a=0.9, mean_b=0.9, adjusted=None),
        ]
    }
    report = gate.evaluate(rules, candidate=run, baseline=base, comparison=comparison)
    recall, mrr, ndcg, hit = report.outcomes
    assert recall.status == "fail"
    assert recall.values["mean"] == 0.4 and recall.values["baseline_mean"] == 0.8
    assert recall.values["worse"] == 12 and recall.values["better"] == 0
    assert "Holm-adjusted p = 0.0004 ≤ α 0.05" in recall.detail
    assert (mrr.status, ndcg.status, hit.status) == ("pass", "pass", "pass")
    assert "no test (all differences are zero)" in hit.detail
    # The run as "a" (a baseline job newer than the run): the same reading.
    swapped = {"pairs": [pair("recall@10", a=8, b=5, mean_a=0.4, mean_b=0.8, adjusted=0.0004,
                              wins=0, losses=0)]}  # fmt: skip
    again = gate.evaluate(rules[:1], candidate=run, baseline=base, comparison=swapped)
    assert again.outcomes[0].status == "fail"


def test_better_than_baseline_needs_a_significant_gain():
    rules = gate.parse_rules("mrr better than baseline at alpha 0.05\n")
    run, base = retrieval(2), retrieval(1)

    def verdict(mean_b, adjusted):
        comparison = {
            "pairs": [pair("mrr", a=1, b=2, mean_a=0.5, mean_b=mean_b, adjusted=adjusted)]
        }
        return (
            gate.evaluate(rules, candidate=run, baseline=base, comparison=comparison)
            .outcomes[0]
            .status
        )

    assert verdict(0.7, 0.01) == "pass"
    assert verdict(0.7, 0.2) == "fail"
    assert verdict(0.3, 0.01) == "fail"


def test_baseline_rules_without_a_comparison_are_errors_saying_why():
    rules = gate.parse_rules("mrr not worse than baseline\n")
    run = retrieval(2)
    no_baseline = gate.evaluate(rules, candidate=run, baseline_problem="system 'x' has no job")
    assert no_baseline.outcomes[0].detail == "system 'x' has no job"
    assert no_baseline.exit_code == 2
    missing = gate.evaluate(rules, candidate=run, baseline=retrieval(1), comparison={"pairs": []})
    assert (
        missing.outcomes[0].status == "error"
        and "no paired test of 'mrr'" in missing.outcomes[0].detail
    )
    same = gate.evaluate(rules, candidate=run, baseline=retrieval(2))
    assert same.outcomes[0].status == "pass" and "baseline's own job #2" in same.outcomes[0].detail


# ---------------------------------------------------------------------- the outputs


def failing_report():
    rules = gate.parse_rules(
        "ndcg@10 >= 0.60\nrecall@10 not worse than baseline at alpha 0.05\nmrr > 0.1\n"
    )
    comparison = {
        "n_queries": 20,
        "wilcoxon_method": "auto",
        "pairs": [pair("recall@10", a=1, b=2, mean_a=0.9, mean_b=0.3, adjusted=0.001, wins=14)],
    }
    return gate.evaluate(
        rules,
        candidate=retrieval(2, ndcg_at_10=0.65, recall_at_10=0.3, mrr=0.5),
        baseline=retrieval(1, ndcg_at_10=0.8, recall_at_10=0.9, mrr=0.6),
        comparison=comparison,
        version="release-2026q4",
    )


def test_the_junit_xml_has_one_suite_and_a_case_per_rule_with_the_failure():
    xml = gate.to_junit(failing_report())
    cases = junit_cases(xml)  # read by a JUnit parser: the counts agree with the cases
    assert list(cases) == [
        "line 1: ndcg@10 >= 0.60",
        "line 2: recall@10 not worse than baseline at alpha 0.05",
        "line 3: mrr > 0.1",
    ]
    kind, message = cases["line 2: recall@10 not worse than baseline at alpha 0.05"]
    assert kind == "failure" and "recall@10 = 0.3 vs baseline #1 0.9" in message
    assert cases["line 1: ndcg@10 >= 0.60"] is None and cases["line 3: mrr > 0.1"] is None
    (suite,) = JUnitXml.fromstring(xml)
    assert all(float(case.time) == 0 for case in suite)
    properties = {p.name: p.value for p in suite.properties()}
    assert properties == {"version": "release-2026q4", "job": "2", "baseline_job": "1"}


def test_a_rule_that_cannot_be_evaluated_is_a_junit_error_with_the_reason():
    rules = gate.parse_rules("mrr > 0.1\nmrr not worse than baseline\nrelease_gate == pass\n")
    report = gate.evaluate(rules, candidate=retrieval(2, mrr=0.5), baseline_problem="no job")
    cases = junit_cases(gate.to_junit(report))
    assert list(cases.values()) == [
        None, ("error", "no job"), ("error", cases["line 3: release_gate == pass"][1]),
    ]  # fmt: skip
    assert "release gate" in cases["line 3: release_gate == pass"][1]


def test_the_markdown_and_json_say_the_same(tmp_path):
    report = failing_report()
    gate.write_outputs(report, markdown=tmp_path / "out/gate.md", junit=tmp_path / "gate.xml",
                       json_path=tmp_path / "gate.json")  # fmt: skip
    markdown = (tmp_path / "out/gate.md").read_text()
    assert markdown.startswith("## Goldset gate: FAILED\n")
    assert "gold version **release-2026q4** (v3); baseline job #1 (run1)" in markdown
    assert "| 2 | `recall@10 not worse than baseline at alpha 0.05` | ❌ fail |" in markdown
    assert "2 passed, 1 failed, 0 could not be evaluated, of 3 rules." in markdown
    data = json.loads((tmp_path / "gate.json").read_text())
    assert (data["passed"], data["exit_code"], data["version"]) == (False, 1, "release-2026q4")
    assert [r["status"] for r in data["rules"]] == ["pass", "fail", "pass"]
    assert data["run"]["figures"]["ndcg@10"] == 0.65 and data["baseline"]["job"] == 1
    failed = junit_cases(tmp_path / "gate.xml")
    assert [name for name, result in failed.items() if result] == [
        "line 2: recall@10 not worse than baseline at alpha 0.05"
    ]
