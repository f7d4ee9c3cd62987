"""The schema says what the API does (issue 29): the JSON run body, 409 on cancel and retry,
response headers (X-Request-ID on every answer, Retry-After on every 429 and 503, Allow on
405), 415 where a body is read, Idempotency-Key on writes; lists refuse unknown filters and bad page sizes
(400 problem+json) and filter on ``updated_since``; any path, even with a newline, is a
problem+json 404."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from goldset.models import Document, ImportJob, default_project_id
from tests.factories import DocumentFactory, DomainFactory

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


@pytest.fixture
def schema(client):
    return client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()


def test_the_json_run_body_is_in_the_schema_with_its_run_field(schema):
    body = schema["paths"]["/api/v1/jobs/"]["post"]["requestBody"]["content"]
    ref = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    component = schema["components"]["schemas"][ref]
    assert "run" in component["required"]
    assert component["properties"]["run"]["type"] == "array"
    assert component["properties"]["run"]["items"]["type"] == "object"


def test_cancel_and_retry_document_their_409(schema):
    for path in ("/api/v1/imports/{id}/cancel/", "/api/v1/imports/{id}/retry/"):
        responses = schema["paths"][path]["post"]["responses"]
        assert PROBLEM in responses["409"]["content"]


def test_response_headers_and_the_idempotency_key_are_in_the_schema(schema):
    paths = schema["paths"]
    created = paths["/api/v1/jobs/"]["post"]
    assert {"Location", "Idempotent-Replayed"} <= set(created["responses"]["202"]["headers"])
    assert "Idempotency-Key" in {p["name"] for p in created["parameters"]}
    download = paths["/api/v1/versions/{ref}/download/{fmt}/"]["get"]["responses"]["200"]
    assert "X-Checksum-SHA256" in download["headers"]
    assert (
        PROBLEM
        in paths["/api/v1/versions/{ref}/download/{fmt}/"]["get"]["responses"]["500"]["content"]
    )
    for operations in paths.values():
        for method, operation in operations.items():
            responses = operation["responses"]
            if method != "get":  # a write: its key, and 409 while a request with it runs
                assert {"408", "409", "413", "422"} <= set(responses)
                assert "Idempotency-Key" in {p["name"] for p in operation["parameters"]}
                assert all("Idempotent-Replayed" in responses[c]["headers"] for c in responses
                           if c.startswith("2"))  # fmt: skip
            if "requestBody" in operation:
                assert {"408", "413", "415"} <= set(responses), operation["operationId"]
            assert "Retry-After" in responses["429"]["headers"]
            assert "WWW-Authenticate" in responses["401"]["headers"]
            assert "Allow" in responses["405"]["headers"]
            for code, response in responses.items():
                # every answer carries its request id (RequestIdMiddleware wraps them all)
                assert response["headers"]["X-Request-ID"]["required"] is True, code
                assert not response["headers"]["X-Query-Count"].get("required")


def test_every_503_documents_its_retry_after(schema):
    busy = {
        operation["operationId"]: operation["responses"]["503"]
        for operations in schema["paths"].values()
        for operation in operations.values()
        if "503" in operation["responses"]
    }
    assert set(busy) == {
        "labels_create", "reviews_create", "adjudications_create",
        "pairwise_pairs_judgment_create", "pairwise_adjudications_create",
    }  # fmt: skip
    for response in busy.values():
        assert response["headers"]["Retry-After"]["schema"]["type"] == "integer"
        assert PROBLEM in response["content"]


def test_every_paginated_list_documents_page_size_bounds_and_updated_since(schema):
    lists = [op for ops in schema["paths"].values() for op in ops.values() if "cursor" in str(op)]
    assert len(lists) >= 9
    for operation in lists:
        page_size = next(p for p in operation["parameters"] if p["name"] == "page_size")
        assert page_size["schema"]["minimum"] == 1 and page_size["schema"]["maximum"] == 500
    with_since = [
        op["operationId"]
        for op in lists
        if any(p["name"] == "updated_since" for p in op["parameters"])
    ]
    assert set(with_since) >= {
        "documents_list", "triples_list", "versions_list", "jobs_list", "agreement_list",
        "blocks_versions_list",
    }  # fmt: skip


@pytest.mark.parametrize(
    "query",
    ["?domian=federal_it", "?page_size=0", "?page_size=501", "?page_size=ten", "?updated_since=x"],
)
def test_a_misspelt_filter_or_a_bad_page_size_is_a_400_naming_it(client_for, annotator, query):
    response = client_for(annotator).get(reverse("api:documents") + query)
    assert response.status_code == 400
    assert response["Content-Type"] == PROBLEM
    name = query[1:].split("=")[0]
    assert [e["field"] for e in response.json()["errors"]] == [name]


def test_an_unknown_filter_on_a_list_without_filters_is_a_400(client_for, admin_user):
    for name in ("api:domains", "api:alerts", "api:versions"):  # jobs/ filters by status
        response = client_for(admin_user).get(reverse(name) + "?status=queued")
        assert response.status_code == 400, name
        assert response.json()["errors"][0]["field"] == "status"


def test_updated_since_returns_only_rows_created_or_changed_since(client_for, annotator):
    domain = DomainFactory(slug="federal_it")
    old, new = DocumentFactory(domain=domain), DocumentFactory(domain=domain)
    Document.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    since = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    api = client_for(annotator)
    rows = api.get(reverse("api:documents"), {"updated_since": since}).json()["results"]
    assert [d["document_id"] for d in rows] == [new.document_id]
    everything = api.get(reverse("api:documents"), {"updated_since": "2000-01-01T00:00:00+00:00"})
    assert len(everything.json()["results"]) == 2


def test_updated_since_on_jobs_counts_a_finish_as_a_change(client_for, admin_user, job):
    type(job).objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(days=5))
    since = (timezone.now() - timedelta(days=1)).isoformat()
    api = client_for(admin_user)
    assert api.get(reverse("api:jobs"), {"updated_since": since}).json()["results"] == []
    type(job).objects.filter(pk=job.pk).update(finished_at=timezone.now())
    rows = api.get(reverse("api:jobs"), {"updated_since": since}).json()["results"]
    assert [r["id"] for r in rows] == [job.pk]


@pytest.mark.parametrize(
    "path", ["/api/v1/jobs/%0A", "/api/v1/a%0Ab/", "/api/v1/%0A%0A", "/api/v1/x%0D%0A/"]
)
def test_a_path_with_a_newline_is_a_problem_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM


def test_cancelling_an_ended_import_is_the_documented_409(client_for, admin_user):
    job = ImportJob.objects.create(project_id=default_project_id(),
        kind="run", dedupe_key="k", filename="f", sha256="0" * 64, size=1,
        created_by=admin_user, status="succeeded",
    )  # fmt: skip
    response = client_for(admin_user).post(reverse("api:import_cancel", args=[job.pk]))
    assert response.status_code == 409
    assert response["Content-Type"] == PROBLEM


@pytest.mark.parametrize(
    "moment",
    ["0274-06-15T01:19:59.7+22:53", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-12:00"],
)
def test_updated_since_takes_any_rfc_3339_offset_and_edge_year(client_for, admin_user, moment):
    response = client_for(admin_user).get(reverse("api:jobs"), {"updated_since": moment})
    assert response.status_code == 200
