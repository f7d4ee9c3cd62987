"""``X-Query-Count`` and ``Server-Timing`` (benchmarks only): absent by default; when on, the
request's own statement count and where its time went."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def test_no_header_unless_switched_on(client):
    response = client.get("/login/")
    assert "X-Query-Count" not in response
    assert "Server-Timing" not in response


def test_header_counts_every_statement_the_request_ran(client, settings, lead):
    settings.QUERY_COUNT_HEADER = True
    client.force_login(lead)
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/answers/adjudication/")
    assert response.status_code == 200
    # Sessions, authentication and the page's own queries: what the test's capture saw.
    assert int(response["X-Query-Count"]) == len(captured.captured_queries) > 0


def test_server_timing_splits_the_request_into_sql_and_cpu(client, settings, lead):
    settings.QUERY_COUNT_HEADER = True
    client.force_login(lead)
    response = client.get("/answers/adjudication/")
    timing = dict(part.split(";dur=") for part in response["Server-Timing"].split(", "))
    assert list(timing) == ["app", "db", "cpu"]
    app, db, cpu = (float(timing[name]) for name in ("app", "db", "cpu"))
    assert 0 < db <= app and 0 < cpu
