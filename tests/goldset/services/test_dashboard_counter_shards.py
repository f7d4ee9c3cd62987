"""Dashboard counters (issue 17): concurrent labels and reviews must not queue on one counter row.

Every label adds to today's ``labels_day`` counter inside the submit's transaction; with a single
row per key, a second submit waited for the first one's commit (seen in ``bench/bench_load.py``
as ``Lock transactionid`` waits on ``INSERT INTO goldset_label``). Writers now add to a shard of
the key chosen by their connection, and readers sum the shards."""

import psycopg
import pytest
from django.db import connection

from goldset.migrations._counter_triggers import SHARDS
from goldset.models import DashboardCounter
from goldset.selectors.curation import counter_rows

pytestmark = pytest.mark.django_db


def test_readers_sum_the_shards_of_a_key_and_leave_out_zero_totals():
    for shard, n in ((0, 3), (5, 4), (11, 1)):
        DashboardCounter.objects.create(name="labels_day", key="2026-11-23", shard=shard, n=n)
    DashboardCounter.objects.create(name="labels_day", key="2026-11-22", shard=2, n=2)
    DashboardCounter.objects.create(name="labels_day", key="2026-11-22", shard=7, n=-2)
    assert counter_rows("labels_day") == {"labels_day": [("2026-11-23", 8)]}


def _connect():
    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
    )


def _pid(conn) -> int:
    return conn.execute("SELECT pg_backend_pid()").fetchone()[0]


def test_two_connections_count_the_same_key_without_waiting_for_each_other(postgres):
    first = _connect()
    others = []
    try:
        # A second connection whose backend falls in another shard (the shard is the backend
        # pid modulo SHARDS; pids are assigned by the server, so look for one).
        second = _connect()
        while _pid(second) % SHARDS == _pid(first) % SHARDS:
            others.append(second)
            second = _connect()
        others.append(second)
        count = "SELECT goldset_count('labels_day', '2099-01-01', 1)"
        first.execute(count)  # first's transaction stays open, holding its row
        second.execute("SET lock_timeout = '2s'")
        second.execute(count)  # one row per key: this waited for first's commit (lock timeout)
        rows = second.execute(
            "SELECT shard, n FROM goldset_dashboardcounter WHERE key = '2099-01-01'"
        ).fetchall()
        assert rows == [(_pid(second) % SHARDS, 1)]
    finally:
        for conn in (first, *others):
            conn.rollback()
            conn.close()
