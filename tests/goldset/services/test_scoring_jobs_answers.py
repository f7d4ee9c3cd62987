"""Answer-log scoring with PROBE: the version carries the answer area's question packets and
adjudication export; PCS, caps and the release gate equal ``python -m scoring probe`` with the
final labels the job used."""

import json
import subprocess
import sys

import pytest

from goldset.models import (
    AnswerRecord,
    JobStatus,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
    ScoringRunChunk,
    default_project_id,
)
from goldset.services import exports
from goldset.services.freeze import FreezeFilters, freeze_gold_version
from goldset.services.scoring_jobs import RunRejected, create_scoring_job
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import SECRET_SYSTEM, build_conflict_item
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def frozen(make_user):
    record, _ = build_conflict_item(DomainFactory(slug="supply_chain"))
    AnswerRecord.objects.filter(pk=record.pk).update(
        status="final", final_acceptability="acceptable", final_grounding="partially_grounded"
    )
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("au", "rv1", "rv2"))
    triple = write_triple(author)
    review(r1, triple)
    review(r2, triple)
    admin = make_user(Role.ADMIN, username="boss")
    version = freeze_gold_version(project=default_project(), filters=FreezeFilters(), actor=admin)
    return version, record, admin


def answer_log(record, *, citations=("blk-memo-02",), qid=None):
    return (
        json.dumps(
            {
                "question_id": qid or record.question.question_id,
                "system_id": SECRET_SYSTEM,
                "retrieved_passages": [{"passage_id": "blk-memo-02", "rank": 1}],
                "answer": "Budget control must approve the air expedite first.",
                "citations": list(citations),
                "latency_ms": 1200,
                "cost_usd": 0.004,
            }
        )
        + "\n"
    ).encode()


def test_the_version_holds_question_packets_and_the_adjudication_export(frozen):
    version, record, _ = frozen
    packets = exports.read_verified_bytes(version.files.get(format="probe_packets", redacted=False))
    lines = [json.loads(x) for x in packets.decode().splitlines()]
    mine = next(p for p in lines if p["question_id"] == record.question.question_id)
    assert mine["gold_evidence"][0]["passage_id"] == "blk-memo-02" and "conflict" in mine["flags"]
    adjudication = exports.read_verified_bytes(version.files.get(format="adjudication"))
    assert json.loads(adjudication.splitlines()[0])["item_id"] == record.public_id


def test_an_answer_log_scores_with_probe_and_adjudicated_labels_like_the_cli(
    frozen, tmp_path, django_capture_on_commit_callbacks
):
    version, record, admin = frozen
    log = answer_log(record)
    with django_capture_on_commit_callbacks(execute=True):
        job = create_scoring_job(
            version=version,
            name="rag",
            data=log,
            filename="answers.jsonl",
            actor=admin,
            resamples=500,
        )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.kind == "answers" and job.summary["labels"] == 1
    packets = exports.read_verified_bytes(version.files.get(format="probe_packets", redacted=False))
    (tmp_path / "packets.jsonl").write_bytes(packets)
    (tmp_path / "answers.jsonl").write_bytes(log)
    (tmp_path / "labels.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in job.summary["label_records"])
    )
    cli = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "scoring",
                "probe",
                "--questions",
                str(tmp_path / "packets.jsonl"),
                "--answers",
                str(tmp_path / "answers.jsonl"),
                "--labels",
                str(tmp_path / "labels.jsonl"),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert job.summary["systems"] == cli["systems"]
    stored = ScoreQueryResult.objects.get(job=job)
    assert stored.metrics["final_pcs"] == cli["answers"][0]["final_pcs"]
    assert stored.detail["caps"] == cli["answers"][0]["caps"]
    mean = ScoreAggregate.objects.get(job=job, stratum=f"system:{SECRET_SYSTEM}", metric="mean_pcs")
    assert mean.value == cli["systems"][SECRET_SYSTEM]["mean_pcs"]


def test_a_bad_answer_log_is_rejected_with_line_numbers(frozen):
    version, record, admin = frozen
    bad = (
        answer_log(record)
        + answer_log(record, qid="nope")
        + answer_log(record, citations=["ghost"])
        + b"{oops\n"
    )
    with pytest.raises(RunRejected) as rejected:
        create_scoring_job(version=version, name="rag", data=bad, filename="a.jsonl", actor=admin)
    assert rejected.value.errors == [
        "a.jsonl, line 4: not valid JSON (Expecting property name enclosed in double quotes "
        "at column 2)"
    ]
    bad = (
        answer_log(record)
        + answer_log(record, qid="nope")
        + answer_log(record, citations=["ghost"])
    )
    with pytest.raises(RunRejected) as rejected:
        create_scoring_job(version=version, name="rag", data=bad, filename="a.jsonl", actor=admin)
    errors = "\n".join(rejected.value.errors)
    assert "line 2: unknown question id 'nope'" in errors
    assert (ScoringJob.objects.count(), ScoringRunChunk.objects.count()) == (0, 0)
    assert "line 3: question" in errors and "already appears on line 1" in errors
    assert "line 3: citations: unknown passage id 'ghost'" in errors


def test_measures_named_for_an_answer_log_are_refused_not_ignored(frozen):
    version, record, admin = frozen
    with pytest.raises(RunRejected) as rejected:
        create_scoring_job(
            version=version,
            name="rag",
            data=answer_log(record),
            filename="a.jsonl",
            actor=admin,
            metrics="map,ndcg@20",
        )
    assert rejected.value.errors == [
        "a.jsonl: measures (map, ndcg@20) apply to retrieval runs; an answer log is scored by "
        "PROBE: leave the measures empty"
    ]
    assert not ScoringJob.objects.exists()


def test_a_job_may_score_with_a_pcs_calibration_instead_of_the_defaults(
    frozen, django_capture_on_commit_callbacks
):
    from goldset.models import PcsCalibration
    from goldset.services.answer_scoring import version_packets
    from goldset.services.pcs_calibrations import probe_config_for
    from scoring.probe import score_answers

    version, record, admin = frozen
    calibration = PcsCalibration.objects.create(
        project_id=default_project_id(),
        name="q2",
        version=1,
        status="succeeded",
        selected={
            "family_weights": [0.2, 0.5, 0.3, 0.0],
            "regulated_family_weights": [0.2, 0.5, 0.3, 0.0],
            "caps": {
                "cap_stale_source": 55.0,
                "cap_unresolved_conflict": 70.0,
                "cap_protected_data": 30.0,
                "cap_regulated_advice": 50.0,
            },
            "thresholds": {
                "pcs_threshold": 75.0,
                "unsafe_threshold": 0.125,
                "min_citation_precision": 0.8,
                "min_authority_recall": 0.7,
                "min_conflict_coverage": 0.7,
            },
        },
    )
    log = answer_log(record)
    with django_capture_on_commit_callbacks(execute=True):
        job = create_scoring_job(
            version=version,
            name="rag-calibrated",
            data=log,
            filename="answers.jsonl",
            actor=admin,
            resamples=200,
            calibration=calibration,
        )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.summary["configuration"] == "q2 v1"
    direct = score_answers(
        version_packets(version),
        [json.loads(log)],
        labels=job.summary["label_records"],
        config=probe_config_for(calibration),
    )
    default = score_answers(
        version_packets(version), [json.loads(log)], labels=job.summary["label_records"]
    )
    stored = ScoreQueryResult.objects.get(job=job)
    assert stored.metrics["final_pcs"] == direct.answers[0].final_pcs
    assert direct.answers[0].raw_pcs != default.answers[0].raw_pcs


@pytest.mark.parametrize(
    "raw,expected",
    [
        ('"fast"', "line 1: latency_ms: expected a finite number ≥ 0, got 'fast'"),
        ("NaN", "line 1: latency_ms: NaN is not allowed"),
        ("-5", "line 1: latency_ms: expected a finite number ≥ 0, got -5"),
        ("Infinity", "line 1: latency_ms: Infinity is not allowed"),
    ],
    ids=["string", "nan", "negative", "infinity"],
)
def test_an_answer_log_with_a_bad_latency_is_rejected_with_line_and_field(frozen, raw, expected):
    version, record, admin = frozen
    line = answer_log(record).replace(b'"latency_ms": 1200', f'"latency_ms": {raw}'.encode())
    with pytest.raises(RunRejected) as rejected:
        create_scoring_job(version=version, name="rag", data=line, filename="a.jsonl", actor=admin)
    assert any(expected in e for e in rejected.value.errors), rejected.value.errors
    assert not ScoringJob.objects.exists()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"retrieved_passages": [{"passage_id": "blk-memo-02", "rank": 1}] * 2},
            "line 1: retrieved_passages[1].rank: rank 1 is also given to retrieved_passages[0]",
        ),
        (
            {
                "retrieved_passages": [
                    {"passage_id": "blk-memo-02", "rank": 1},
                    {"passage_id": "blk-memo-02", "rank": 2},
                ]
            },
            "line 1: retrieved_passages[1].passage_id: 'blk-memo-02' is also",
        ),
        (
            {"retrieved_passages": [{"passage_id": "blk-memo-02", "rank": "1"}]},
            "line 1: retrieved_passages[0].rank: expected an integer ≥ 1, got '1'",
        ),
        ({"latency_ms": -3}, "line 1: latency_ms: expected a finite number ≥ 0, got -3"),
        ({"citations": "blk-memo-02"}, "line 1: citations: expected a list of passage ids"),
    ],
)
def test_tied_ranks_and_bad_numbers_reject_the_answer_log(frozen, change, expected):
    version, record, admin = frozen
    line = json.loads(answer_log(record))
    line.update(change)
    data = (json.dumps(line) + "\n").encode()
    with pytest.raises(RunRejected) as rejected:
        create_scoring_job(version=version, name="rag", data=data, filename="a.jsonl", actor=admin)
    assert any(expected in error for error in rejected.value.errors), rejected.value.errors
