"""`python -m scoring evaluators|calibrate|report` on files: JSON out, exit 2 naming line/field."""

from __future__ import annotations

import json

import pytest

from scoring.cli import main
from tests.scoring.unit.test_evaluators import _copying_judge, _items, _random_judge
from tests.scoring.unit.test_report import _benchmark


def _jsonl(records):
    return "\n".join(json.dumps(r) for r in records) + "\n"


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluators_command_reports_table_4_rows_and_gating(capsys, write):
    items = _items(40)
    outputs = [
        {"evaluator": name, "record_id": rid, **rec}
        for name, judged in (("copy", _copying_judge(items)), ("rand", _random_judge(items)))
        for rid, rec in judged.items()
    ]
    code, out, err = _run(
        capsys,
        [
            "evaluators",
            "--items",
            write("items.jsonl", _jsonl(items)),
            "--outputs",
            write("out.jsonl", _jsonl(outputs)),
            "--scores",
            "pcs",
            "--resamples",
            "200",
        ],
    )
    assert code == 0, err
    payload = json.loads(out)
    names = [r["name"] for r in payload["rows"]]
    assert names == ["copy", "rand", "weighted vote", "pcs"]
    copy_axes = {a["axis"]: a for a in payload["rows"][0]["axes"]}
    assert copy_axes["grounding"]["trusted"] is True
    assert copy_axes["grounding"]["kappa"]["value"] == 1.0


def test_evaluators_command_rejects_a_bad_label_naming_line_and_field(capsys, write):
    items = _items(5)
    bad = [
        {"evaluator": "j", "record_id": "r0", "score": 0.4},
        {"evaluator": "j", "record_id": "r1", "labels": {"grounding": "mostly"}},
    ]
    code, out, err = _run(
        capsys,
        [
            "evaluators",
            "--items",
            write("items.jsonl", _jsonl(items)),
            "--outputs",
            write("out.jsonl", _jsonl(bad)),
        ],
    )
    assert code == 2 and out == ""
    assert "out.jsonl, line 2: labels.grounding: 'mostly' is not one of" in err


def test_calibrate_and_report_commands_on_files(capsys, write, tmp_path):
    questions, answers, labels = _benchmark(60)
    files = [
        "--questions",
        write("q.jsonl", _jsonl(questions)),
        "--answers",
        write("a.jsonl", _jsonl(answers)),
        "--labels",
        write("l.jsonl", _jsonl(labels)),
    ]
    code, out, err = _run(capsys, ["calibrate", *files])
    assert code == 0, err
    cal = json.loads(out)
    assert sum(cal["split_counts"].values()) == 60
    assert abs(sum(cal["selected"]["family_weights"]) - 1) < 1e-9
    assert cal["seeds"] == {"split": 3107, "paraphrase_groups": 1442, "grid_order": 2718}
    cal_file = write("cal.json", out)
    html_file = tmp_path / "report.html"
    code, out, err = _run(
        capsys,
        [
            "report",
            *files,
            "--calibration",
            cal_file,
            "--html",
            str(html_file),
            "--resamples",
            "200",
        ],
    )
    assert code == 0, err
    report = json.loads(out)
    assert {s["system_id"] for s in report["systems"]} == {"good", "bad"}
    assert report["ablation"][-1]["variant"] == "No expert calibration"
    assert report["ablation"][-1]["note"] == ""
    assert html_file.read_text().count("<svg") == 2


def test_report_command_rejects_a_bad_answer_file(capsys, write):
    code, out, err = _run(
        capsys,
        [
            "report",
            "--questions",
            write("q.jsonl", _jsonl(_benchmark(3)[0])),
            "--answers",
            write("a.jsonl", '{"question_id": "q000"}\n'),
            "--labels",
            write("l.jsonl", '{"question_id": "q000"}\n'),
        ],
    )
    assert code == 2 and out == ""
    assert "a.jsonl, line 1: retrieved_passages: missing field" in err


def test_evaluators_command_reports_coverage_and_takes_the_minimum(capsys, write):
    items = _items(40)
    judged = _copying_judge(items)
    outputs = [
        {"evaluator": "half", "record_id": rid, **rec} for rid, rec in list(judged.items())[:28]
    ]
    argv = ["evaluators", "--items", write("items.jsonl", _jsonl(items))]
    argv += ["--outputs", write("out.jsonl", _jsonl(outputs)), "--resamples", "100"]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert (row["n"], row["n_items"], row["coverage"]) == (28, 40, 0.7)
    assert not any(a["trusted"] for a in row["axes"])
    code, out, err = _run(capsys, [*argv, "--min-coverage", "0.7"])
    assert code == 0, err
    assert all(a["trusted"] for a in json.loads(out)["rows"][0]["axes"])
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--min-coverage", "1.5"])
    assert exc.value.code == 2
    assert "--min-coverage: must be between 0 and 1" in capsys.readouterr().err
