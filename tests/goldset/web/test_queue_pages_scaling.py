"""Queue pages at two pool sizes (issue 17): the same number of statements, and on PostgreSQL no
statement scans the pool (EXPLAIN shows index scans only)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import AnswerRecord, TripleRevision
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import qualified_annotators
from tests.goldset.bulk_support import grow_answer_pool, grow_revision_pool
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

POOL_TABLES = (AnswerRecord._meta.db_table, TripleRevision._meta.db_table)


def _get(client, url) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


def _assert_no_pool_scans(statements):
    with connection.cursor() as cursor:
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT") and any(t in sql for t in POOL_TABLES):
                cursor.execute("EXPLAIN " + sql)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                for table in POOL_TABLES:
                    assert f"Seq Scan on {table}" not in plan, plan


def test_label_queue_page_costs_the_same_at_two_pool_sizes(client_for, postgres):
    domain = DomainFactory(slug="supply_chain")
    template = AnswerRecordFactory(question__domain=domain)
    grow_answer_pool(template, 200, tag="small")
    (annotator,) = qualified_annotators(domain, 1)
    client = client_for(annotator)
    small = _get(client, reverse("answers:queue"))
    grow_answer_pool(template, 20_000, tag="large")
    large = _get(client, reverse("answers:queue"))
    assert len(small) == len(large)
    _assert_no_pool_scans(large)


def test_review_queue_page_costs_the_same_at_two_pool_sizes(client_for, postgres):
    template = write_triple(UserFactory(role=Role.ANNOTATOR, username="author"))
    grow_revision_pool(template, 200, tag="small")
    client = client_for(UserFactory(role=Role.ANNOTATOR, username="rev1"))
    small = _get(client, reverse("curation:queue"))
    grow_revision_pool(template, 20_000, tag="large")
    response_sql = _get(client, reverse("curation:queue"))
    assert len(small) == len(response_sql)
    _assert_no_pool_scans(response_sql)
    assert "100+ revisions waiting" in client.get(reverse("curation:queue")).content.decode()
