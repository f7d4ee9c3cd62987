import json

import pytest
from django.core.management import CommandError, call_command

from goldset.models import AnswerRecord, Question
from goldset.services.adjudication import record_adjudication
from tests.factories import BlockFactory, BlockVersionFactory, DomainFactory
from tests.goldset.answers_helpers import BAD, GOOD, build_conflict_item, claim_and_label

pytestmark = pytest.mark.django_db


def test_import_commands_load_files_and_reject_bad_ones(tmp_path, capsys):
    domain = DomainFactory(slug="supply_chain")
    BlockVersionFactory(block=BlockFactory(block_id="blk-a", document__domain=domain))
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "question_id": "q1",
                "domain": "supply_chain",
                "task_family": "f",
                "question": "Q?",
                "gold_evidence": [{"passage_id": "blk-a", "label": "sufficient"}],
            }
        )
    )
    call_command("import_questions", str(questions))
    assert json.loads(capsys.readouterr().out)["questions_created"] == 1
    answers = tmp_path / "a.jsonl"
    answers.write_text(
        json.dumps(
            {
                "run_id": "r",
                "system_id": "s",
                "question_id": "q1",
                "answer": "A",
                "citations": ["blk-a"],
            }
        )
    )
    call_command("import_answers", str(answers))
    assert AnswerRecord.objects.count() == 1 and Question.objects.count() == 1
    answers.write_text(
        json.dumps({"run_id": "r2", "system_id": "s", "question_id": "zzz", "answer": "A"})
    )
    with pytest.raises(CommandError, match="line 1: question_id: unknown question 'zzz'"):
        call_command("import_answers", str(answers))


def test_export_adjudication_writes_one_line_per_finished_item(tmp_path, lead):
    record, (one, two, three) = build_conflict_item(DomainFactory(slug="supply_chain"))
    claim_and_label(one, **{**GOOD, "rationale": "memo"})
    claim_and_label(two, **{**GOOD, "grounding": "partially_grounded", "rationale": "x"})
    claim_and_label(three, **BAD)
    record_adjudication(
        lead=lead,
        record=record,
        acceptability="unacceptable",
        grounding="misgrounded",
        primary_failure="wrong_chunk_citation",
        rationale="wrong clause",
    )
    out = tmp_path / "export.jsonl"
    call_command("export_adjudication", "--output", str(out))
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["final"]["source"] == "adjudication"
    assert row["adjudication"]["primary_failure"] == "wrong_chunk_citation"
