"""Lead and admin dashboards, lists and queues at two pool sizes (issue 17, pages that stay
fast): the same statements at 200 and 20,000 items (each with a label and a review), and on
PostgreSQL no statement scans a grown table (EXPLAIN shows no sequential scan of triples,
revisions, answer records, labels or reviews). The "needs re-review" preview and list walk
their partial index; the time-on-item table reads stored figures, never decisions; the
promotion list walks the promotable index; runs, export, customers and calibration status read
maintained counters."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import AnswerRecord, Label, Review, Tier, Triple, TripleRevision
from goldset.rules.time_on_item import ItemTiming
from goldset.services.time_on_item import refresh_time_on_item_figures
from tests.factories import (
    AnswerRecordFactory,
    BlockVersionFactory,
    CustomerPermissionFactory,
    DomainFactory,
    UserFactory,
)
from tests.goldset.bulk_support import (
    analyze,
    grow_answer_pool,
    grow_decision_pool,
    grow_revision_pool,
    vacuum_test_database,
)
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

DECISION_TABLES = tuple(m._meta.db_table for m in (Label, Review))
GROWN_TABLES = (
    *(m._meta.db_table for m in (AnswerRecord, Triple, TripleRevision)),
    *DECISION_TABLES,
)
LEAD_PAGES = (
    "quality:agreement",
    "quality:alerts",
    "quality:disagreements",
    "quality:fast_decisions",
    "curation:dashboard",
    "curation:rereview",
    "curation:quality",
    "curation:slices",
    "curation:spot_checks",
    "answers:adjudication_queue",
    "corpus:documents",
    "inbox:notifications",
    "inbox:retakes",
    "guidelines:list",
    "promotion:index",
    "promotion:index?kind=answer_record",
    "answers:calibration_status",
)
ADMIN_PAGES = (
    "exports:jobs",
    "exports:versions",
    "evaluators:list",
    "routing:rules",
    "webhooks:endpoints",
    "answers:runs",
    "answers:export",
    "curation:customers",
)


def _url(page: str) -> str:
    name, _, query = page.partition("?")
    return reverse(name) + (f"?{query}" if query else "")


def _statements(client, url) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def _walks_pk(sql: str, table: str) -> bool:
    """``sql`` reads ``table`` in primary-key order through its primary key, stopping at a
    LIMIT."""
    plan = _plan(sql)
    return plan.startswith("Limit") and f"Index Scan using {table}_pkey on {table} " in plan


def _seq_scans(statements, tables=GROWN_TABLES) -> list[str]:
    found = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT") and any(t in sql for t in tables):
            plan = _plan(sql)
            found += [f"{t}: {sql}\n{plan}" for t in tables if f"Seq Scan on {t} " in plan]
    return found


def _grow(answer_template, triple, n, tag, *, annotator, reviewer):
    grow_answer_pool(answer_template, n, tag=tag)
    grow_revision_pool(triple, n, tag=tag)
    grow_decision_pool(tag=tag, annotator=annotator, reviewer=reviewer)
    analyze(AnswerRecord, Triple, TripleRevision, Review, Label)


def test_lead_pages_cost_the_same_at_two_sizes(client_for, lead, admin_user, postgres):
    vacuum_test_database()  # what earlier tests rolled back (see bulk_support)
    domain = DomainFactory(slug="supply_chain")
    # TRIAGE, so the grown records are promotable (the promotion list has rows to walk)
    template = AnswerRecordFactory(question__domain=domain, tier=Tier.TRIAGE)
    author = UserFactory(role=Role.ANNOTATOR, username="scale-author")
    triple = write_triple(author)
    review(
        UserFactory(role=Role.ANNOTATOR, username="rev1"),
        triple,
        timing=ItemTiming(active_ms=4000),
    )
    # a few triples on a superseded pin
    old = block_version()
    stale = [write_triple(author, version=old) for _ in range(3)]
    BlockVersionFactory(block=old.block, version=2, text="Newer text.")
    refresh_time_on_item_figures()
    CustomerPermissionFactory(customer__slug="acme", customer__name="Acme")
    clients = {page: client_for(lead) for page in LEAD_PAGES} | {
        page: client_for(admin_user) for page in ADMIN_PAGES
    }
    people = {
        "annotator": UserFactory(role=Role.ANNOTATOR, username="bulk-labeler"),
        "reviewer": UserFactory(role=Role.ANNOTATOR, username="bulk-reviewer"),
    }
    _grow(template, triple, 200, "small", **people)
    small = {page: _statements(c, _url(page)) for page, c in clients.items()}
    _grow(template, triple, 20_000, "large", **people)
    large = {page: _statements(c, _url(page)) for page, c in clients.items()}
    for page in clients:
        assert len(small[page]) == len(large[page]), page
    every = [sql for page in clients for sql in large[page]]
    assert _seq_scans(every) == []
    # the re-review preview and list walk the partial index, bounded by the page size
    rereview = [sql for sql in every if 'ORDER BY "goldset_triple"."updated_at"' in sql]
    assert len(rereview) == 2, rereview
    for sql in rereview:
        assert "triple_needs_rereview" in _plan(sql), _plan(sql)
    # the promotion list and batch walk the promotable indexes, a page and a batch at a time
    for page, index, table in (
        ("promotion:index", "triple_promotable", "goldset_triple"),
        ("promotion:index?kind=answer_record", "answer_record_promotable", "goldset_answerrecord"),
    ):
        selects = [sql for sql in large[page] if sql.lstrip().upper().startswith("SELECT")]
        # the partial index, or the primary key in id order when (as here) nearly every row
        # is promotable and the planner finds the two equal: either way a bounded index walk
        walks = [sql for sql in selects if index in _plan(sql) or _walks_pk(sql, table)]
        assert len(walks) == 2 and all("LIMIT" in sql for sql in walks), (page, walks)
    # calibration status finds calibration claims through their own index
    (claims,) = [s for s in large["answers:calibration_status"] if "goldset_labelassignment" in s]
    assert "assignment_calibration" in _plan(claims), _plan(claims)
    # the agreement dashboard reads no label or review (time on item is stored)
    assert not [s for s in large["quality:agreement"] if any(t in s for t in DECISION_TABLES)]
    html = clients["curation:dashboard"].get(reverse("curation:dashboard")).content.decode()
    assert all(t.external_id in html for t in stale)
    # The counters saw every bulk-inserted row.
    html = clients["quality:agreement"].get(reverse("quality:agreement")).content.decode()
    assert "20201" in html or "20,201" in html
    # The runs and export pages count the grown records from the maintained counters.
    for page in ("answers:runs", "answers:export"):
        html = clients[page].get(reverse(page)).content.decode()
        assert "Items by status: Collecting labels 20201<" in html, page
    html = clients["answers:runs"].get(reverse("answers:runs")).content.decode()
    assert "<td>20201</td>" in html
    # Promotion: a bounded batch, not every matching case.
    html = clients["promotion:index"].get(_url("promotion:index?kind=answer_record"))
    assert "1000+ promotable TRIAGE answer records" in html.content.decode()
    assert "Promote the first 1000 matching" in html.content.decode()
