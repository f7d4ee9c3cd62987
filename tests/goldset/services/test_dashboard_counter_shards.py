"""Dashboard counters (issue 17): concurrent labels and reviews must not queue on one counter row.

Every label adds to today's ``labels_day`` counter inside the submit's transaction; with a single
row per key, a second submit waited for the first one's commit (seen in ``bench/bench_load.py``
as ``Lock transactionid`` waits on ``INSERT INTO goldset_label``). Writers now add to a shard of
the key chosen by their transaction's id (0028; by connection in 0025, which still queued when
more connections than shards were open), and readers sum the shards."""

import psycopg
import pytest
from django.db import connection

from goldset.migrations._counter_triggers import XACT_SHARDS
from goldset.models import AnswerRecord, DashboardCounter, Triple
from goldset.selectors.curation import counter_rows
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.bulk_support import grow_answer_pool, grow_revision_pool
from tests.goldset.curation_support import write_triple
from tests.goldset.project_support import default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def test_readers_sum_the_shards_of_a_key_and_leave_out_zero_totals():
    project = default_project().pk  # keys start with the project (migration 0036)
    for shard, n in ((0, 3), (5, 4), (11, 1)):
        DashboardCounter.objects.create(
            name="labels_day", key=f"{project}|2026-11-23", shard=shard, n=n
        )
    DashboardCounter.objects.create(name="labels_day", key=f"{project}|2026-11-22", shard=2, n=2)
    DashboardCounter.objects.create(name="labels_day", key=f"{project}|2026-11-22", shard=7, n=-2)
    DashboardCounter.objects.create(name="labels_day", key=f"{project + 1}|2026-11-23", n=5)
    assert counter_rows("labels_day", project=default_project()) == {
        "labels_day": [("2026-11-23", 8)]
    }


def _connect():
    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
    )


def _txid(conn) -> int:
    return conn.execute("SELECT txid_current()").fetchone()[0]


def test_two_transactions_count_the_same_key_without_waiting_for_each_other(postgres):
    first, second = _connect(), _connect()
    try:
        count = "SELECT goldset_count('labels_day', '2099-01-01', 1)"
        first.execute(count)  # first's transaction stays open, holding its row
        second.execute("SET lock_timeout = '2s'")
        second.execute(count)  # one row per key: this waited for first's commit (lock timeout)
        rows = second.execute(
            "SELECT shard, n FROM goldset_dashboardcounter WHERE key = '2099-01-01'"
        ).fetchall()
        assert rows == [(_txid(second) % XACT_SHARDS, 1)]
        assert _txid(first) % XACT_SHARDS != _txid(second) % XACT_SHARDS
    finally:
        for conn in (first, second):
            conn.rollback()
            conn.close()


def test_more_connections_than_shards_do_not_share_a_row(postgres):
    """With the shard chosen per connection (0025: 16 shards), 17 open connections always had
    two on one row; transactions started one after another land in distinct rows."""
    connections = [_connect() for _ in range(20)]
    try:
        for conn in connections:
            conn.execute("SET lock_timeout = '2s'")
            conn.execute("SELECT goldset_count('labels_day', '2099-01-02', 1)")  # all stay open
        shards = {_txid(conn) % XACT_SHARDS for conn in connections}
        assert len(shards) == len(connections)
    finally:
        for conn in connections:
            conn.rollback()
            conn.close()


def _counter_writes() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables "
            "WHERE relname = 'goldset_dashboardcounter'"
        )
        return cursor.fetchone()[0]


def test_a_bulk_statement_writes_each_key_once_not_once_per_row(postgres):
    """0023 bumped the counter once per inserted row; PostgreSQL keeps every version of a row a
    transaction updates until commit and each update walks those before it, so one statement of
    n rows cost O(n²) (1M seeded answer records ran for over 37 minutes). Now one write per key."""
    domain = DomainFactory(slug="supply_chain")
    template = AnswerRecordFactory(question__domain=domain)
    triple = write_triple(UserFactory(role=Role.ANNOTATOR, username="bulk-author"))
    before = _counter_writes()
    grow_answer_pool(template, 2_000, tag="bulk")  # one INSERT … SELECT of 2,000 records
    grow_revision_pool(triple, 2_000, tag="bulk")  # 2,000 triples, revisions, one UPDATE
    written = _counter_writes() - before
    # record|tier, record_status|labeling and run_status|run|labeling (0027), and the triples'
    # key (its UPDATE of the current revision changes no counted key)
    assert written <= 4, written
    counts = dict(counter_rows("record", project=default_project())["record"])
    assert (
        counts[template.tier]
        == AnswerRecord.objects.filter(is_calibration=False, tier=template.tier).count()
    )
    triples = sum(n for _, n in counter_rows("triple", project=default_project())["triple"])
    assert triples == Triple.objects.count()
