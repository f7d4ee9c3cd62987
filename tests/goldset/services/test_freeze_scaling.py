"""A freeze's statements do not grow with the gold set or the labeled items (issue 26): rows,
reviewers, labels, evidence and pinned blocks are read a batch of thousands at a time, never a
statement per triple or item, so two sizes within one batch send the same statements."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.services.freeze import FreezeFilters, freeze_gold_version
from tests.factories import AnswerRecordFactory, default_project
from tests.goldset.bulk_support import grow_answer_pool, grow_decision_pool, grow_revision_pool
from tests.goldset.curation_support import review, write_triple

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _grow_gold(triple, record, n: int, *, tag: str, team) -> None:
    """``n`` more gold triples like ``triple``, each reviewed, and ``n`` more final answer
    records like ``record``, each labeled (the benchmark's seed, smaller)."""
    grow_revision_pool(triple, n, tag=tag)
    grow_answer_pool(record, n, tag=tag)
    grow_decision_pool(tag=tag, annotator=team["r3"], reviewer=team["r4"])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE goldset_triple SET state = 'gold', resolution = 'consensus', gold_at = now()"
            " WHERE external_id LIKE %s",
            [f"{tag}-%"],
        )
        cursor.execute(
            "UPDATE goldset_answerrecord SET status = 'final', final_source = 'majority',"
            " final_acceptability = 'acceptable', final_grounding = 'fully_grounded',"
            " finalized_at = now() WHERE question_id IN"
            " (SELECT id FROM goldset_question WHERE question_id LIKE %s)",
            [f"{tag}-%"],
        )


def _freeze_statements(admin) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        version = freeze_gold_version(
            project=default_project(), filters=FreezeFilters(include_superseded=True), actor=admin
        )
    # each statement by its start (the values bound into it differ: checksums, the manifest)
    return version.row_count, [re.sub(r"\d+", "N", q["sql"])[:70] for q in ctx.captured_queries]


def test_a_freeze_sends_the_same_statements_for_6_and_1506_gold_triples(postgres, team):
    triple = write_triple(team["author"])
    review(team["r1"], triple)
    review(team["r2"], triple)
    record = AnswerRecordFactory()
    freeze_gold_version(
        project=default_project(), filters=FreezeFilters(include_superseded=True), actor=None
    )

    _grow_gold(triple, record, 5, tag="small", team=team)
    small, small_sql = _freeze_statements(team["admin"])
    _grow_gold(triple, record, 1500, tag="large", team=team)
    large, large_sql = _freeze_statements(team["admin"])

    assert (small, large) == (6, 1506)
    assert len(large_sql) == len(small_sql)
    assert large_sql == small_sql
