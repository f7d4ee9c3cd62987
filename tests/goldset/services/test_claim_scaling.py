"""Claims whose cost does not depend on the pool (issue 17): the same statements at two pool
sizes, and on PostgreSQL every statement that touches the pool is an index scan."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.models import AnswerRecord, TripleRevision
from goldset.services.labeling import claim_next_answer
from goldset.services.reviews import claim_next_review
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory, default_project
from tests.goldset.answers_helpers import qualified_annotators
from tests.goldset.bulk_support import grow_answer_pool, grow_revision_pool
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

POOL_TABLES = (AnswerRecord._meta.db_table, TripleRevision._meta.db_table)


def _captured(call):
    with CaptureQueriesContext(connection) as ctx:
        result = call()
    return result, [q["sql"] for q in ctx.captured_queries]


def _plans(statements) -> list[str]:
    plans = []
    with connection.cursor() as cursor:
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT") and any(t in sql for t in POOL_TABLES):
                cursor.execute("EXPLAIN " + sql)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


def _assert_index_scans(plans, index_name):
    assert plans, "no statement read the pool"
    for plan in plans:
        for table in POOL_TABLES:
            assert f"Seq Scan on {table}" not in plan, plan
    assert any(index_name in plan for plan in plans), plans


def test_answer_claim_runs_the_same_statements_at_two_pool_sizes_and_uses_the_index(postgres):
    domain = DomainFactory(slug="supply_chain")
    template = AnswerRecordFactory(question__domain=domain)
    grow_answer_pool(template, 200, tag="small")
    first, second = qualified_annotators(domain, 2)
    small, small_sql = _captured(
        lambda: claim_next_answer(annotator=first, project=default_project())
    )

    grow_answer_pool(template, 20_000, tag="large")
    large, large_sql = _captured(
        lambda: claim_next_answer(annotator=second, project=default_project())
    )

    assert small.reason == large.reason == "claimed"
    assert len(small_sql) == len(large_sql)
    _assert_index_scans(_plans(large_sql), "answer_record_open_slots")


def test_review_claim_runs_the_same_statements_at_two_pool_sizes_and_uses_the_index(postgres):
    author = UserFactory(role=Role.ANNOTATOR, username="author")
    template = write_triple(author)
    grow_revision_pool(template, 200, tag="small")
    first = UserFactory(role=Role.ANNOTATOR, username="rev1")
    second = UserFactory(role=Role.ANNOTATOR, username="rev2")
    project = default_project()
    small, small_sql = _captured(lambda: claim_next_review(project=project, reviewer=first))

    grow_revision_pool(template, 20_000, tag="large")
    large, large_sql = _captured(lambda: claim_next_review(project=project, reviewer=second))

    assert small is not None and large is not None
    assert len(small_sql) == len(large_sql)
    _assert_index_scans(_plans(large_sql), "revision_open_slots")


def test_the_queue_walk_is_compiled_once_and_each_claim_gets_its_own_values(postgres):
    """The walk's SQL is built by the ORM once per process; every claim fills in its own
    annotator, domain and offset (two annotators of two domains get items of their domain)."""
    from goldset.services.labeling import _walk_statement

    domains = [DomainFactory(slug="supply_chain"), DomainFactory(slug="hr_policy")]
    for domain in domains:
        grow_answer_pool(AnswerRecordFactory(question__domain=domain), 50, tag=domain.slug)
    people = [qualified_annotators(d, 1, prefix=d.slug)[0] for d in domains]
    _walk_statement.cache_clear()

    claims = [
        claim_next_answer(annotator=person, project=default_project()) for person in people * 2
    ]

    assert _walk_statement.cache_info().misses == 2  # the two directions of the walk
    assert [c.reason for c in claims] == ["claimed", "claimed", "resumed", "resumed"]
    assert [c.assignment.record.question.domain_id for c in claims[:2]] == [d.pk for d in domains]
    assert claims[0].assignment.annotator == people[0]
