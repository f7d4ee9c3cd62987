"""Queue pages at two pool sizes (issue 17): the same number of statements, and on PostgreSQL no
statement scans the pool (EXPLAIN shows index scans only)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import AnswerRecord, TripleRevision
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import GOOD, qualified_annotators
from tests.goldset.bulk_support import analyze, grow_answer_pool, grow_revision_pool
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


def _adjudication_pool(template, n, *, tag):
    grow_answer_pool(template, n, tag=tag)
    AnswerRecord.objects.filter(question__question_id__startswith=f"{tag}-").update(
        status="needs_adjudication", adjudication_reason="no_majority"
    )
    analyze(AnswerRecord)


def test_adjudication_queue_pages_by_keyset_at_the_same_cost_at_two_sizes(
    client_for, lead, postgres
):
    template = AnswerRecordFactory(question__domain=DomainFactory(slug="supply_chain"))
    _adjudication_pool(template, 60, tag="small")
    client = client_for(lead)
    url = reverse("answers:adjudication_queue")
    small = _get(client, url)
    first = client.get(url)
    cursor = first.context["page"].next_cursor
    seen = [r.public_id for r in first.context["page"]]
    second = client.get(url, {"after": cursor})
    seen += [r.public_id for r in second.context["page"]]
    assert len(seen) == len(set(seen)) == 50
    assert 'rel="next"' in second.content.decode() and 'rel="first"' in second.content.decode()

    _adjudication_pool(template, 20_000, tag="large")
    large = _get(client, url)
    deep = _get(client, f"{url}?after={cursor}")
    assert len(small) == len(large) == len(deep)
    _assert_no_pool_scans(large + deep)
    assert client.get(url, {"after": "not-a-cursor"}).status_code == 404


# One motion per item: the htmx submit stores the decision, claims the next item and renders it.
# Its statement count is pinned so that a change adding statements to the hot path is noticed
# (counted inside the test's transaction: in production the submit's own transaction adds its
# lock-wait bound, and BEGIN/COMMIT, instead of the savepoints).
# The next item's "5 of 16" counter (goldset/selectors/positions.py, issue 25) is part of it:
# 6 indexed reads for a label (labels today, qualified domains, three load counters, one bounded
# walk per open domain), 3 for a review (today's and held claims, the bounded claimable count).
LABEL_SUBMIT_STATEMENTS = 36 + 6 + 1  # + the look-up of label.submitted subscribers (issue 29)
# + the next item's retrieved passages with their scores and its unmatched passages (issue 28:
# what a traced retriever returned, shown to the labeler; one statement each, whatever the pool).
LABEL_SUBMIT_STATEMENTS += 2
# Projects (issue 27) added 2 statements to the review motion (its project-scoped claim and
# counters); they are counted here until the motion is brought back to 35.
REVIEW_SUBMIT_STATEMENTS = 32 + 3 + 2


@pytest.fixture
def no_fast_decisions(settings):
    """Whether a decision is flagged fast depends on the clock (a slow machine makes it slow, and
    its FastDecision row goes missing): off, so the counts compare like with like."""
    settings.FAST_DECISION_SECONDS_GOLD = 0
    settings.FAST_DECISION_SECONDS_TRIAGE = 0


def _submit(client, url, data, target) -> tuple[str, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=target)
    assert response.status_code == 200 and "HX-Push-Url" in response
    return response["HX-Push-Url"], [q["sql"] for q in ctx.captured_queries]


def test_label_submit_with_the_next_item_costs_the_same_at_two_pool_sizes(
    client_for, postgres, no_fast_decisions
):
    domain = DomainFactory(slug="supply_chain")
    template = AnswerRecordFactory(question__domain=domain)
    grow_answer_pool(template, 200, tag="small")
    (annotator,) = qualified_annotators(domain, 1)
    client = client_for(annotator)
    label = {**GOOD, "severe_safety": "no", "secondary_failures": []}
    url = client.post(reverse("answers:claim"))["Location"]
    url, _ = _submit(client, url, label, "label-item")  # warms per-process caches
    url, small = _submit(client, url, label, "label-item")
    grow_answer_pool(template, 20_000, tag="large")
    url, large = _submit(client, url, label, "label-item")
    assert len(small) == len(large) == LABEL_SUBMIT_STATEMENTS, (len(small), len(large))
    _assert_no_pool_scans(large)


def test_review_submit_with_the_next_item_costs_the_same_at_two_pool_sizes(
    client_for, postgres, no_fast_decisions
):
    template = write_triple(UserFactory(role=Role.ANNOTATOR, username="author"))
    grow_revision_pool(template, 200, tag="small")
    client = client_for(UserFactory(role=Role.ANNOTATOR, username="rev1"))
    verdict = {"verdict": "confirm"}
    url = client.post(reverse("curation:next"))["Location"]
    url, _ = _submit(client, url, verdict, "review-item")
    url, small = _submit(client, url, verdict, "review-item")
    grow_revision_pool(template, 20_000, tag="large")
    url, large = _submit(client, url, verdict, "review-item")
    assert len(small) == len(large) == REVIEW_SUBMIT_STATEMENTS, (len(small), len(large))
    _assert_no_pool_scans(large)
