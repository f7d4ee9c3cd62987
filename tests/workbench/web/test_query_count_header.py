"""``X-Query-Count`` (benchmarks only): absent by default, the request's own statement count when on."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def test_no_header_unless_switched_on(client):
    assert "X-Query-Count" not in client.get("/login/")


def test_header_counts_every_statement_the_request_ran(client, settings, lead):
    settings.QUERY_COUNT_HEADER = True
    client.force_login(lead)
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/answers/adjudication/")
    assert response.status_code == 200
    # Sessions, authentication and the page's own queries: what the test's capture saw.
    assert int(response["X-Query-Count"]) == len(captured.captured_queries) > 0
