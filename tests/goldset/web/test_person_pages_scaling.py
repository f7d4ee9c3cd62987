"""The pages of the people who work most (issue 26): the label queue, the item page, the review
queue and the review page cost the same statements whether the person has 150 or 6,000 labels
and reviews behind them, and on PostgreSQL no statement of theirs reads more than a page's worth
of decision rows: "my recent labels/reviews" and the undo lookups walk an index that starts with
the person and the time, never every one of the person's rows (a sort) nor everyone's (a walk of
a time index discarding other people's rows)."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import (
    ItemSkip,
    Label,
    LabelAssignment,
    Review,
    ReviewAssignment,
    ReviewSkip,
)
from goldset.selectors.curation import WAITING_WINDOW
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import qualified_annotators
from tests.goldset.bulk_support import grow_answer_pool, grow_decision_pool, grow_revision_pool
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

PERSON_TABLES = tuple(
    m._meta.db_table
    for m in (Label, LabelAssignment, ItemSkip, Review, ReviewAssignment, ReviewSkip)
)
# A page shows at most 20 recent decisions, and the review queue's "waiting" count looks at a
# bounded window of revisions (one probe of the person's claims each); a statement reading more
# decision rows than that is walking someone's whole history.
ROWS_READ_BOUND = WAITING_WINDOW + 100


def _statements(client, url) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def rows_read(sql: str) -> dict[str, int]:
    """Rows each decision table's scans touched when ``sql`` ran (EXPLAIN ANALYZE: rows
    returned plus rows filtered out, times loops), by table."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        (plan,) = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    read: dict[str, int] = {}
    for node in _nodes(plan["Plan"]):
        table = node.get("Relation Name")
        if table in PERSON_TABLES:
            touched = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
            touched += node.get("Rows Removed by Index Recheck", 0)
            read[table] = read.get(table, 0) + touched * node["Actual Loops"]
    return read


def _heavy_reads(statements) -> list[str]:
    found = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT") and any(t in sql for t in PERSON_TABLES):
            read = rows_read(sql)
            if any(n > ROWS_READ_BOUND for n in read.values()):
                found.append(f"{read}: {sql}")
    return found


@pytest.fixture
def worker(postgres):
    """A qualified annotator who also reviews, with an open label claim and an open review
    claim, a pool to grow their history on, and another person whose history is newer."""
    domain = DomainFactory(slug="supply_chain")
    template = AnswerRecordFactory(question__domain=domain, labels_required=3)
    person, other = qualified_annotators(domain, 2, prefix="heavy")
    triple = write_triple(UserFactory(role=Role.ANNOTATOR, username="author"))

    def grow(n: int, tag: str, *, who) -> None:
        grow_answer_pool(template, n, tag=tag)
        grow_revision_pool(triple, n, tag=tag)
        grow_decision_pool(tag=tag, annotator=who, reviewer=who)

    return person, other, grow


def _history_before_today(*people) -> None:
    """A long history is months of work: what the people decided so far moves to yesterday, so
    the position counter's "decided today" (which grows with one day's work, by design) counts
    today's decisions only, as in use; the history walks are what this test measures."""
    day = timedelta(days=1)
    done_labels = LabelAssignment.objects.filter(annotator__in=people, completed_at__isnull=False)
    done_labels.update(claimed_at=F("claimed_at") - day, completed_at=F("completed_at") - day)
    Label.objects.filter(annotator__in=people).update(created_at=F("created_at") - day)
    done_reviews = ReviewAssignment.objects.filter(reviewer__in=people, completed_at__isnull=False)
    done_reviews.update(assigned_at=F("assigned_at") - day, completed_at=F("completed_at") - day)
    Review.objects.filter(reviewer__in=people).update(submitted_at=F("submitted_at") - day)
    with connection.cursor() as cursor:  # as autovacuum would after such growth
        cursor.execute("ANALYZE " + ", ".join(PERSON_TABLES))


def _pages(client) -> dict[str, str]:
    item = client.post(reverse("answers:claim"))["Location"]
    review = client.post(reverse("curation:next"))["Location"]
    assert "/answers/" in item and "/review" in review, (item, review)
    return {
        "label queue": reverse("answers:queue"),
        "item page": item,
        "review queue": reverse("curation:queue"),
        "review page": review,
    }


def test_person_pages_cost_the_same_with_a_long_history(worker, client_for):
    person, other, grow = worker
    grow(150, "mine-small", who=person)
    _history_before_today(person)
    client = client_for(person)
    pages = _pages(client)
    small = {name: _statements(client, url) for name, url in pages.items()}
    # the person's history grows 40-fold, and someone else's newer history is larger still
    grow(6_000, "mine-large", who=person)
    grow(12_000, "theirs", who=other)
    _history_before_today(person, other)
    large = {name: _statements(client, url) for name, url in pages.items()}
    for name in pages:
        assert len(small[name]) == len(large[name]), name
    heavy = _heavy_reads(sql for statements in large.values() for sql in statements)
    assert heavy == [], "\n\n".join(heavy)


def test_recent_lists_show_the_persons_latest_decisions_only(worker, client_for):
    person, other, grow = worker
    grow(300, "mine", who=person)
    grow(300, "theirs", who=other)
    client = client_for(person)
    labels = client.get(reverse("answers:queue")).context["done"]
    reviews = client.get(reverse("curation:queue")).context["recent"]
    assert len(labels) == len(reviews) == 20
    assert {a.annotator_id for a in labels} == {r.reviewer_id for r in reviews} == {person.pk}
    newest = LabelAssignment.objects.filter(annotator=person).order_by("-completed_at", "-id")
    assert [a.pk for a in labels] == list(newest.values_list("pk", flat=True)[:20])
    latest = Review.objects.filter(reviewer=person).order_by("-submitted_at", "-id")
    assert [r.pk for r in reviews] == list(latest.values_list("pk", flat=True)[:20])
