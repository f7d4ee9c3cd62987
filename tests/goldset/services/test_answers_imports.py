import json
from decimal import Decimal

import pytest

from goldset.exceptions import ImportRejected
from goldset.models import (
    AnswerRecord,
    CalibrationItem,
    DomainLabelLoad,
    EvidencePassage,
    Question,
    Run,
    System,
    Tier,
    default_project_id,
)
from goldset.rules.labeling import queue_rank
from goldset.services.answer_imports import import_answer_logs, import_questions
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    default_project,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    domain = DomainFactory(slug="supply_chain")
    guide = BlockFactory(block_id="route-guide-s4", document=DocumentFactory(domain=domain))
    BlockVersionFactory(block=guide, version=1, text="Operations may approve expedite.")
    BlockVersionFactory(block=guide, version=2, text="Expedite needs budget-control approval.")
    memo = BlockFactory(block_id="nw-memo-s2", document=DocumentFactory(domain=domain))
    BlockVersionFactory(block=memo, version=1, text="Northwest lanes need budget control.")
    return domain


def question_line(**over):
    row = {
        "question_id": "sc-route-0184-p2",
        "domain": "supply_chain",
        "task_family": "routing_policy",
        "question": "Can operations approve air expedite under the standard routing guide?",
        "flags": ["conflict", "freshness"],
        "required_behavior": "cite_exception_and_route_to_budget_control",
        "prohibited_answer_behavior": ["approve_expedite_without_exception"],
        "safety_flags": ["regulated_advice_boundary"],
        "gold_evidence": [
            {
                "passage_id": "route-guide-s4",
                "role": "general_policy",
                "authority": 0.7,
                "label": "partial",
            },
            {
                "passage_id": "nw-memo-s2",
                "role": "regional_exception",
                "effective": "2026-04-01/2026-06-30",
                "label": "sufficient",
            },
        ],
        "near_miss": [{"passage_id": "route-guide-s4@v1", "reason": "superseded_approval_path"}],
    }
    row.update(over)
    return json.dumps(row)


def answer_line(**over):
    row = {
        "run_id": "probe-heldout-2026-04-17",
        "system_id": "hybrid_rrf_cross_encoder",
        "question_id": "sc-route-0184-p2",
        "retrieved_passages": [
            {"passage_id": "nw-memo-s2", "rank": 1},
            {"passage_id": "route-guide-s4", "rank": 2},
        ],
        "answer": "Do not approve under the standard routing guide alone.",
        "citations": ["nw-memo-s2"],
        "model": {"generator": "gpt-4o-mini-2026-02", "temperature": 0},
        "latency_ms": 1900,
        "cost_usd": 0.014,
    }
    row.update(over)
    return json.dumps(row)


def test_question_file_resolves_passages_to_block_versions(corpus):
    summary = import_questions(source=question_line() + "\n", actor=None, project=default_project())
    assert summary.questions_created == 1 and summary.evidence_passages == 3
    question = Question.objects.get()
    assert question.conflict_flag and question.freshness_flag and not question.adversarial
    gold = list(question.evidence.filter(kind="gold").select_related("block_version"))
    assert [str(e.block_version) for e in gold] == ["route-guide-s4@v2", "nw-memo-s2@v1"]
    near = EvidencePassage.objects.get(kind="near_miss")
    assert (
        str(near.block_version) == "route-guide-s4@v1" and near.reason == "superseded_approval_path"
    )
    # authority defaults to the document's when the packet gives none
    assert gold[1].authority == gold[1].block_version.block.document.authority


def test_question_import_is_idempotent_and_questions_are_immutable(corpus):
    import_questions(source=question_line(), actor=None, project=default_project())
    again = import_questions(source=question_line(), actor=None, project=default_project())
    assert again.questions_unchanged == 1 and again.questions_created == 0
    with pytest.raises(ImportRejected) as exc:
        import_questions(
            source=question_line(question="Changed?"), actor=None, project=default_project()
        )
    assert "line 1: question_id" in exc.value.errors[0] and "immutable" in exc.value.errors[0]


def test_bad_question_file_names_line_and_field_and_stores_nothing(corpus):
    text = "\n".join(
        [
            question_line(question_id="ok-1"),
            question_line(question_id="bad-2", domain="nowhere"),
            question_line(
                question_id="bad-3",
                gold_evidence=[{"passage_id": "missing-block", "role": "x", "label": "sufficient"}],
            ),
            question_line(
                question_id="bad-4",
                gold_evidence=[{"passage_id": "nw-memo-s2@v9", "role": "x", "label": "great"}],
            ),
            "{not json",
        ]
    )
    with pytest.raises(ImportRejected) as exc:
        import_questions(source=text, actor=None, project=default_project())
    errors = "\n".join(exc.value.errors)
    assert "line 2: domain: unknown domain 'nowhere'" in errors
    assert "line 3: gold_evidence[0].passage_id: unknown passage 'missing-block'" in errors
    assert "line 4: gold_evidence[0].passage_id: unknown passage 'nw-memo-s2@v9'" in errors
    assert "line 4: gold_evidence[0].label" in errors
    assert "line 5: not valid JSON" in errors
    assert Question.objects.count() == 0


def test_answer_logs_create_systems_runs_and_routed_records(corpus):
    import_questions(
        source="\n".join(
            [question_line(), question_line(question_id="q-summary", task_type="summarization")]
        ),
        actor=None,
        project=default_project(),
    )
    text = "\n".join(
        [
            answer_line(),
            answer_line(question_id="q-summary"),
            answer_line(run_id="bm25-run", system_id="bm25_only", citations=["route-guide-s4@v1"]),
            answer_line(run_id="calib-run", system_id="bm25_only", calibration=True),
        ]
    )
    summary = import_answer_logs(
        source=text, actor=None, source_name="answers.jsonl", project=default_project()
    )
    assert (
        summary.records_created == 4 and summary.systems_created == 2 and summary.runs_created == 3
    )
    assert summary.calibration_records == 1
    gold = AnswerRecord.objects.get(
        run__run_id="probe-heldout-2026-04-17", question__question_id="sc-route-0184-p2"
    )
    assert (gold.tier, gold.routing_rule, gold.rules_version, gold.labels_required) == (
        Tier.GOLD,
        "task_type:rag_synthesis",
        1,
        3,
    )
    triage = AnswerRecord.objects.get(question__question_id="q-summary")
    assert (triage.tier, triage.routing_rule, triage.labels_required) == (Tier.TRIAGE, "default", 1)
    assert [r.rank for r in gold.retrieved.all()] == [1, 2]
    stale = AnswerRecord.objects.get(run__run_id="bm25-run")
    assert str(stale.citations.get().block_version) == "route-guide-s4@v1"
    assert len(gold.public_id) == 16 and gold.public_id not in text
    assert CalibrationItem.objects.get().record.run.run_id == "calib-run"


def test_bad_answer_log_is_rejected_whole_with_line_numbers(corpus):
    import_questions(source=question_line(), actor=None, project=default_project())
    text = "\n".join(
        [
            answer_line(),
            answer_line(),  # same run and question twice
            answer_line(run_id="r2", question_id="unknown-q"),
            answer_line(
                run_id="r3",
                citations=["nope@v1"],
                retrieved_passages=[{"passage_id": "nw-memo-s2", "rank": 0}],
            ),
            answer_line(
                run_id="probe-heldout-2026-04-17", system_id="other", question_id="sc-route-0184-p2"
            ),
        ]
    )
    with pytest.raises(ImportRejected) as exc:
        import_answer_logs(source=text, actor=None, project=default_project())
    errors = "\n".join(exc.value.errors)
    assert "line 2: question_id: 'sc-route-0184-p2' is answered twice" in errors
    assert "line 3: question_id: unknown question 'unknown-q'" in errors
    assert "line 4: citations[0]: unknown passage 'nope@v1'" in errors
    assert "line 4: retrieved_passages[0].rank" in errors
    assert (
        "line 5: system_id: run 'probe-heldout-2026-04-17' is for system 'hybrid_rrf_cross_encoder'"
        in errors
    )
    assert (AnswerRecord.objects.count(), Run.objects.count(), System.objects.count()) == (0, 0, 0)


def test_answer_records_keep_every_value_of_their_line(corpus):
    import_questions(source=question_line(), actor=None, project=default_project())
    text = "\n".join(
        [
            answer_line(
                latency_ms=1900.6,
                cost_usd=0.0141234567,
                uncertainty=0.25,
                tokens={"prompt": 812, "completion": 96},
                metrics={"faithfulness": 0.5},
                prompt_hash="c0ffee",
                system_config={"reranker": "cross-encoder"},
                citations=["nw-memo-s2", "route-guide-s4@v1"],
            ),
            answer_line(run_id="calib-run", calibration=True, model={}, latency_ms=None),
        ]
    )
    ids = iter(["pub-1", "pub-2"])

    summary = import_answer_logs(
        source=text, actor=None, id_factory=lambda: next(ids), project=default_project()
    )

    assert summary.as_dict() == {
        "records_created": 2,
        "calibration_records": 1,
        "systems_created": 1,
        "runs_created": 2,
        "by_tier": {Tier.GOLD: 2},
    }
    record = AnswerRecord.objects.get(public_id="pub-1")
    assert record.project_id == default_project_id()
    assert (record.latency_ms, record.cost_usd, record.uncertainty) == (
        1901,
        Decimal("0.014123"),
        Decimal("0.250"),
    )
    assert record.model == {"generator": "gpt-4o-mini-2026-02", "temperature": 0}
    assert record.extra == {
        "tokens": {"prompt": 812, "completion": 96},
        "metrics": {"faithfulness": 0.5},
        "prompt_hash": "c0ffee",
    }
    assert (record.domain_id, record.queue_rank) == (corpus.pk, queue_rank(public_id="pub-1"))
    assert (record.status, record.assigned_count, record.is_calibration) == ("labeling", 0, False)
    assert [(str(c.block_version), c.position) for c in record.citations.all()] == [
        ("nw-memo-s2@v1", 0),
        ("route-guide-s4@v1", 1),
    ]
    assert [(str(r.block_version), r.rank) for r in record.retrieved.all()] == [
        ("nw-memo-s2@v1", 1),
        ("route-guide-s4@v2", 2),
    ]
    assert System.objects.get().config == {"reranker": "cross-encoder"}
    calibration = AnswerRecord.objects.get(public_id="pub-2")
    assert calibration.is_calibration and calibration.model == {} and calibration.extra == {}
    assert calibration.latency_ms is None
    assert CalibrationItem.objects.get().record == calibration
    assert DomainLabelLoad.objects.get(domain=corpus).slots == 3
