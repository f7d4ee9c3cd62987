"""An answer-log import stays as fast in its last batch as in its first (issue 24: the 200 MB
log's write stage grew with the table). Each batch asks which of its (run, question) pairs the
project holds already; that lookup must probe the (run, question) unique index once per pair —
never scan the project's questions to match ids (the join it replaced read every question per
batch) nor walk a run's records: on a table of 20,000 records it reads no more rows than the
batch names."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.exceptions import ImportRejected
from goldset.models import AnswerRecord, Domain, Question, Run
from goldset.services.answer_imports import import_answer_logs
from tests.factories import AnswerRecordFactory, QuestionFactory, default_project
from tests.goldset.bulk_support import analyze, seed_answer_records

pytestmark = pytest.mark.django_db

BATCH = 40


def _explain(sql: str, params) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT TEXT) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_existing_pairs_lookup_probes_the_unique_index(postgres):
    domain = Domain.objects.create(project=default_project(), slug="federal_it", name="Federal IT")
    template = AnswerRecordFactory(question=QuestionFactory(domain=domain))
    seed_answer_records(
        template,
        20_000,
        tag="big",
        domain_ids=[domain.pk],
        labels_required="3",
        assigned_count="0",
    )
    analyze(AnswerRecord, Question, Run)
    run = Run.objects.get(run_id="big-run-1")
    assert AnswerRecord.objects.filter(run=run).count() == 10_000
    lines = "\n".join(
        json.dumps(
            {
                "run_id": run.run_id,
                "system_id": run.system.system_id,
                "question_id": f"big-q-{n}",
                "answer": "Already answered.",
            }
        )
        for n in range(1, BATCH + 1)
    )
    with CaptureQueriesContext(connection) as queries:
        with pytest.raises(ImportRejected) as refused:
            import_answer_logs(source=lines, actor=None, project=default_project())
    assert f"run {run.run_id!r} already has an answer for 'big-q-1'" in str(refused.value.errors)
    (lookup,) = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "goldset_answerrecord"' in q["sql"]
    ]
    plan = _explain(lookup, None)
    assert "answer_record_run_question" in plan, plan
    assert "Seq Scan" not in plan, plan
    # rows read from the records table: the batch's pairs, not the run's 10,000 records
    read = [
        int(line.split("rows=")[-1].split()[0])
        for line in plan.splitlines()
        if "goldset_answerrecord" in line and "actual" in line
    ]
    assert read and max(read) <= BATCH, plan
