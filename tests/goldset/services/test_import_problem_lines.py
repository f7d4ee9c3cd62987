"""Every import problem carries its line as a number, whatever the importer: corpus JSON lines
and Unrag documents (a member's problem found without a line gets the line its key is written
on), triples, questions, answer logs, evaluator outputs and runs to score (the scoring
library's words, ``run.trec, line 3: …``, read back into line and message); a problem of the
whole file (an empty run, a missing member) is on line 1. Before, Unrag and run problems had
``line: null`` with the line, if any, only in the text."""

import json

import pytest
from django.core.files.base import ContentFile

from goldset.models import ImportJob, ImportStatus
from goldset.services.answer_imports import import_questions
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import run_import_job, submit_import
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DomainFactory,
    default_project,
    gold_row_for,
)

pytestmark = pytest.mark.django_db

QUESTION = {
    "question_id": "q-1",
    "domain": "federal_it",
    "task_family": "routing",
    "question": "Can ops approve expedite?",
    "gold_evidence": [{"passage_id": "blk-1", "role": "rule", "label": "sufficient"}],
}


def lines(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


UNRAG = b"""{"version": "1", "documents": [
  {"sourceId": "u1", "content": "x", "metadata": {"domain": "nowhere"}},
  {"sourceId": "u2",
   "content": "y",
   "metadata": {"domain": "federal_it",
                "authority": 7}},
  null,
  {"sourceId": "u4", "sourceId": "u4b", "content": "z", "metadata": {"domain": "federal_it"}}
]}
"""

# kind, options, file name, bytes, [(line, field, words in the message)]
CASES = [
    (
        "corpus",
        {},
        "c.jsonl",
        lines(
            {
                "document_id": "d1",
                "title": "T",
                "domain": "nowhere",
                "authority": 0.5,
                "blocks": [{"block_id": "b1", "versions": [{"text": "x"}]}],
            },
            "",
            "null",
            '{"document_id": "d2", "document_id": "d3"}',
            "{not json",
        ),
        [
            (1, "domain", "unknown domain"),
            (3, "", "expected a JSON object (one document per line), got null"),
            (4, "document_id", "appears twice"),
            (5, "", "not valid JSON"),
        ],
    ),
    (
        "corpus",
        {},
        "u.json",
        UNRAG,
        [
            (2, "documents[0].domain", "unknown domain"),
            (6, "documents[1].metadata.authority", ""),
            (7, "documents[2]", "expected an object"),
            (8, "documents[3].sourceId", "appears twice"),
        ],
    ),
    ("corpus", {}, "v.json", b'{"documents": [\n]}\n', [(1, "version", "expected")]),
    (
        "triples",
        {},
        "t.jsonl",
        lines({"id": "t-1", "question": "Q?"}, '{"id": 1, "id": 2}'),
        [(1, "expected_block", ""), (2, "id", "appears twice")],
    ),
    (
        "questions",
        {},
        "q.jsonl",
        lines({**QUESTION, "question_id": "q-9", "gold_evidence": [{"passage_id": "nope"}]}, "[]"),
        [(1, "gold_evidence[0].passage_id", "unknown passage"), (2, "", "per line), got an array")],
    ),
    (
        "answers",
        {},
        "a.jsonl",
        lines(
            {"run_id": "r", "system_id": "s", "question_id": "q-404", "answer": "A"},
            "true",
        ),
        [(1, "question_id", "unknown question"), (2, "", "per line), got true")],
    ),
    (
        "evaluator",
        {},
        "e.jsonl",
        lines({"record_id": "nobody", "score": 2}, "null"),
        [
            (1, "record_id", "unknown answer record"),
            (1, "score", ""),
            (2, "", "per line), got null"),
        ],
    ),
    (
        "run",
        {"version": 1, "name": "r", "k": 10},
        "r.trec",
        b"Q-0 Q0 blk-1 1 0.9 sys\nQ-0 Q0 blk-2 2 high sys\n",
        [(2, "", "")],
    ),
    (
        "run",
        {"version": 1, "name": "r", "k": 10},
        "r.jsonl",
        lines({"query_id": "Q-0", "results": "no"}),
        [(1, "", "results")],
    ),
    ("run", {"version": 1, "name": "r", "k": 10}, "blank.trec", b"\n\n", [(1, "", "")]),
]


@pytest.fixture
def world(admin_user):
    domain = DomainFactory(slug="federal_it")
    version = BlockVersionFactory(block=BlockFactory(block_id="blk-1", document__domain=domain))
    import_questions(source=json.dumps(QUESTION), actor=None)
    store_frozen_version(rows=[gold_row_for(version, triple_id="Q-0")], actor=admin_user)
    return create_evaluator(name="judge", version="1", kind="llm_judge")


@pytest.mark.parametrize(
    "kind,options,name,data,expected", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES]
)
def test_every_importer_gives_every_problem_a_line_number(
    kind, options, name, data, expected, world, admin_user
):
    if kind == "evaluator":
        options = {"evaluator": world.pk}
    job = submit_import(
        project=default_project(),
        kind=kind,
        upload=ContentFile(data, name=name),
        actor=admin_user,
        options=options,
    ).job
    run_import_job(job_id=job.pk)
    ended = ImportJob.objects.get(pk=job.pk)
    assert ended.status == ImportStatus.REJECTED, (ended.status, ended.message)
    assert ended.errors
    for problem in ended.errors:
        assert isinstance(problem["line"], int) and problem["line"] >= 1, problem
    found = [(p["line"], p["field"], p["message"]) for p in ended.errors]
    for line, field, words in expected:
        assert any(
            (got_line, got_field) == (line, field) and words in message
            for got_line, got_field, message in found
        ), (line, field, words, found)
