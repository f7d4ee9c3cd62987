"""REST API v1: every endpoint answers each role as the access table says (the pages' rule),
errors are problem+json, lists paginate with cursors at a constant query count, downloads carry
their sha256, and imports (a run as a JSON body) become background jobs with line and field."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import ImportJob, ScoringJob
from goldset.urls.api import urlpatterns
from goldset.views.api import IMPORT_PAGE
from tests.factories import DocumentFactory, DomainFactory
from workbench.access import entry_for

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


# (url name, args, anonymous, annotator, lead, admin); args name objects of api_objects
ENDPOINTS = [
    ("api:schema", [], 200, 200, 200, 200),
    ("api:docs", [], 200, 200, 200, 200),
    ("api:projects", [], 401, 200, 200, 200),
    ("api:domains", [], 401, 200, 200, 200),
    ("api:documents", [], 401, 200, 200, 200),
    ("api:document", ["DOC"], 401, 200, 200, 200),
    ("api:document_blocks", ["DOC"], 401, 200, 200, 200),
    ("api:block_versions", ["BLOCK"], 401, 200, 200, 200),
    ("api:block_version", ["BLOCK", 1], 401, 200, 200, 200),
    ("api:triples", [], 401, 200, 200, 200),
    ("api:triple", ["TRIPLE"], 401, 200, 200, 200),  # the annotator wrote it
    ("api:import", ["IMPORT"], 401, 404, 404, 200),
    ("api:versions", [], 401, 403, 200, 200),
    ("api:version", [1], 401, 403, 200, 200),
    ("api:version_diff", [], 401, 403, 200, 200),
    ("api:version_download", [1, "gold_jsonl"], 401, 403, 200, 200),
    ("api:tags", [], 401, 403, 200, 200),
    ("api:tag", ["TAG"], 401, 403, 200, 200),
    ("api:jobs", [], 401, 403, 403, 200),
    ("api:job", ["JOB"], 401, 403, 403, 200),
    ("api:job_queries", ["JOB"], 401, 403, 403, 200),
    ("api:job_compare", [], 401, 403, 403, 200),
    ("api:agreement_snapshots", [], 401, 403, 200, 200),
    ("api:alerts", [], 401, 403, 200, 200),
    # labels, reviews, adjudications, webhooks (issue 29; their own tests:
    # test_decisions_api.py, test_webhooks_api.py); an unknown id is a 404 for those admitted
    ("api:labels", [], 401, 200, 200, 200),
    ("api:label", [999999], 401, 404, 404, 404),
    ("api:reviews", [], 401, 200, 200, 200),
    ("api:review", [999999], 401, 404, 404, 404),
    ("api:adjudications", [], 401, 403, 200, 200),
    ("api:adjudication", [999999], 401, 403, 404, 404),
    ("api:adjudication_queue", [], 401, 403, 200, 200),
    ("api:webhooks", [], 401, 403, 403, 200),
    ("api:webhook", [999999], 401, 403, 403, 404),
    ("api:webhook_deliveries", [999999], 401, 403, 403, 404),
    ("api:pairwise_tasks", [], 401, 403, 200, 200),
    ("api:pairwise_judgments", ["PAIRWISE_TASK"], 401, 403, 200, 200),
    ("api:pairwise_analysis", ["PAIRWISE_TASK"], 401, 403, 200, 200),
    ("api:pairwise_pair", ["PAIR"], 401, 200, 403, 403),  # the annotator holds it
    ("api:pairwise_calibration_pairs", [], 401, 403, 200, 200),
    ("api:pairwise_calibration_candidate", [], 401, 403, 200, 200),
    ("api:pairwise_qualifications", [], 401, 403, 200, 200),
    ("api:pairwise_qualification", [], 401, 200, 403, 403),
    ("api:pairwise_runs", [], 401, 403, 200, 200),
    ("api:pairwise_adjudications", [], 401, 403, 200, 200),
    ("api:pairwise_adjudication", ["PAIR"], 401, 403, 404, 404),  # not split: not waiting
    # sampling rules (issue 28; their own tests: test_sampling_rules_api.py)
    ("api:sampling_rules", [], 401, 403, 403, 200),
    ("api:sampling_rule", [999999], 401, 403, 403, 404),
    # the project itself, its settings and members (issue 27; their own tests:
    # test_project_management_api.py)
    ("api:project", [], 401, 200, 200, 200),
    ("api:project_settings", [], 401, 403, 403, 200),
    ("api:project_members", [], 401, 403, 403, 200),
    ("api:project_member", ["ann-test"], 401, 403, 403, 200),
]
# write endpoints (POST), answered before their body is read for roles that may not call them
WRITE_ENDPOINTS = [
    ("api:imports", [], 401, 400, 400, 400),
    ("api:triples_import", [], 401, 403, 400, 400),
    ("api:questions_import", [], 401, 403, 403, 400),
    ("api:answers_import", [], 401, 403, 403, 400),
    ("api:evaluator_outputs_import", ["EVALUATOR"], 401, 403, 403, 400),
    ("api:version_freeze", [], 401, 403, 403, 422),  # no gold triples: nothing to freeze
    ("api:jobs", [], 401, 403, 403, 400),
    # the import is the admin's and failed with its file gone: leads 404 (not theirs), the
    # admin 409 (cannot cancel an ended import; cannot retry without its file)
    ("api:import_cancel", ["IMPORT"], 401, 403, 404, 409),
    ("api:import_retry", ["IMPORT"], 401, 403, 404, 409),
    # an empty form is not an OTLP body: 415 (application/x-protobuf or application/json)
    ("api:otlp_traces", [], 401, 403, 403, 415),
    # claims need no body: an annotator with nothing to claim gets claimed: false
    ("api:label_claim", [], 401, 200, 403, 403),
    ("api:review_claim", [], 401, 200, 403, 403),
    ("api:webhook_test", [999999], 401, 403, 403, 404),
    ("api:webhook_redeliver", [999999], 401, 403, 403, 404),
    # the annotator has not passed the pairwise calibration: 409; an empty judgment: 400
    ("api:pairwise_claim", [], 401, 409, 403, 403),
    ("api:pairwise_judge", ["PAIR"], 401, 400, 403, 403),
    ("api:pairwise_judgments_import", ["PAIRWISE_TASK"], 401, 403, 403, 400),
    # a skip without a reason: 422 naming it; nothing to undo: 422; a task without name and
    # runs: 400; an adjudication of a pair that is not split: 404
    ("api:pairwise_skip", ["PAIR"], 401, 422, 403, 403),
    ("api:pairwise_undo", [], 401, 422, 403, 403),
    ("api:pairwise_tasks", [], 401, 403, 400, 400),
    ("api:pairwise_adjudication", ["PAIR"], 401, 403, 404, 404),
    # no calibration pair yet: nothing can qualify (409), no such one to judge (404); a lead's
    # add without a pair: 400
    ("api:pairwise_calibration_pairs", [], 401, 403, 400, 400),
    ("api:pairwise_calibration_claim", [], 401, 409, 403, 403),
    ("api:pairwise_calibration_judge", ["nope"], 401, 404, 403, 403),
    ("api:sampling_rules", [], 401, 403, 403, 400),  # no name, no kind
    # a new project (installation admins: admin_user is staff), a new member: no name, slug
    ("api:projects", [], 401, 403, 403, 400),
    ("api:project_members", [], 401, 403, 403, 400),
]


def empty_body(name):
    """An empty request body in the content type the endpoint reads (JSON for a freeze, a
    sampling rule, a project and a member)."""
    if name in ("api:version_freeze", "api:sampling_rules", "api:projects", "api:project_members"):
        return {"data": {}, "content_type": "application/json"}
    return {"data": {}}


def url_for(name, args, objects):
    url = reverse(name, args=[objects.get(a, a) for a in args])
    return url + objects["?"].get(name, "")


@pytest.mark.parametrize("name,args,anon,ann,lead_status,admin_status", ENDPOINTS)
def test_every_endpoint_answers_each_role_as_the_table_says(
    client, client_for, annotator, lead, admin_user, api_objects,
    name, args, anon, ann, lead_status, admin_status,
):  # fmt: skip
    url = url_for(name, args, api_objects)
    for who, expected in [
        (client, anon),
        (client_for(annotator), ann),
        (client_for(lead), lead_status),
        (client_for(admin_user), admin_status),
    ]:
        response = who.get(url)
        assert response.status_code == expected, (who, response.content[:300])
        if expected >= 400:
            assert response["Content-Type"] == PROBLEM
            assert response.json()["status"] == expected


@pytest.mark.parametrize("name,args,anon,ann,lead_status,admin_status", WRITE_ENDPOINTS)
def test_every_write_endpoint_answers_each_role_as_the_table_says(
    client, client_for, annotator, lead, admin_user, api_objects,
    name, args, anon, ann, lead_status, admin_status,
):  # fmt: skip
    """An empty body: roles the table refuses get 401/403 before it is read; the others get
    400 naming the missing fields (or 422 when the body needs none)."""
    url = url_for(name, args, api_objects)
    for who, expected in [
        (client, anon),
        (client_for(annotator), ann),
        (client_for(lead), lead_status),
        (client_for(admin_user), admin_status),
    ]:
        response = who.post(url, **empty_body(name))
        assert response.status_code == expected, (who, response.content[:300])
        if expected >= 400:
            assert response["Content-Type"] == PROBLEM
            assert response.json()["status"] == expected


def test_every_api_url_is_in_an_endpoint_table():
    assert {f"api:{p.name}" for p in urlpatterns} - {"api:not_found"} == {
        e[0] for e in ENDPOINTS + WRITE_ENDPOINTS
    }


def test_an_unknown_object_is_a_problem_404(client_for, admin_user):
    response = client_for(admin_user).get(reverse("api:version", args=[99]))
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM
    assert response.json()["title"] == "Not Found"


def test_an_unknown_api_url_is_a_problem_404_for_anyone(client):
    response = client.get("/api/v1/jobs/-3/")
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM


def test_a_bad_diff_parameter_is_a_400_naming_the_field(client_for, lead):
    response = client_for(lead).get(reverse("api:version_diff") + "?a=x!&b=1")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "a", "message": "expected a version number, a tag or 'latest'"}
    ]
    # a name that could be a tag but is none: no such version
    assert client_for(lead).get(reverse("api:version_diff") + "?a=x&b=1").status_code == 404


@pytest.mark.parametrize("size", [3, 12])
def test_documents_paginate_with_cursors_at_a_constant_query_count(
    client_for, annotator, django_assert_num_queries, size
):
    domain = DomainFactory(slug="federal_it")
    for _ in range(size):
        DocumentFactory(domain=domain)
    api = client_for(annotator)
    api.get(reverse("api:domains"))  # the session and role lookups, warmed
    with django_assert_num_queries(4):
        first = api.get(reverse("api:documents") + "?page_size=2").json()
    assert len(first["results"]) == 2
    assert first["next"] and "cursor=" in first["next"]
    second = api.get(first["next"]).json()
    assert {d["document_id"] for d in first["results"]}.isdisjoint(
        d["document_id"] for d in second["results"]
    )


def test_a_download_carries_the_sha256_of_the_bytes_it_sends(client_for, lead, admin_user, version):
    for user in (lead, admin_user):
        response = client_for(user).get(reverse("api:version_download", args=[1, "gold_jsonl"]))
        body = b"".join(response.streaming_content)
        assert response["X-Checksum-SHA256"] == hashlib.sha256(body).hexdigest()
    # the lead's copy names people by pseudonym: not the stored file, hashed as sent
    lead_copy = client_for(lead).get(reverse("api:version_download", args=[1, "gold_jsonl"]))
    admin_copy = client_for(admin_user).get(reverse("api:version_download", args=[1, "gold_jsonl"]))
    assert lead_copy["X-Checksum-SHA256"] != admin_copy["X-Checksum-SHA256"]
    assert b'"ann1"' not in b"".join(lead_copy.streaming_content)
    assert b'"ann1"' in b"".join(admin_copy.streaming_content)


def test_a_run_posted_as_json_is_scored_through_an_import_job(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    run = [
        {"query_id": f"Q-{i}", "results": [{"doc_id": version.blocks[i], "score": 1.0}]}
        for i in range(6)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(admin_user).post(
            reverse("api:jobs"),
            {"version": 1, "name": "bm25", "k": 10, "run": run},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    imported = client_for(admin_user).get(response["Location"]).json()
    assert imported["status"] == "succeeded", imported
    scoring = ScoringJob.objects.get(pk=imported["summary"]["scoring_job"])
    assert scoring.version_id == version.pk


def test_a_bad_run_line_is_reported_with_its_line_and_field(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    run = [{"query_id": "Q-0", "results": [{"doc_id": version.blocks[0], "score": 1}]}, {"x": 1}]
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(admin_user).post(
            reverse("api:jobs"), {"version": 1, "run": run}, content_type="application/json"
        )
    assert response.status_code == 202
    imported = client_for(admin_user).get(response["Location"]).json()
    assert imported["status"] == "rejected"
    # every import problem names its line (issue 24), a run's too
    error = imported["errors"][0]
    assert error["line"] == 2 and "query_id" in error["message"]
    assert not ScoringJob.objects.exists()


def test_a_malformed_body_is_a_problem_with_fields(client_for, admin_user, version):
    response = client_for(admin_user).post(
        reverse("api:jobs"), {"version": "x!"}, content_type="application/json"
    )  # "x" alone could be a tag: "x!" is no version reference at all
    assert response.status_code == 400
    assert response["Content-Type"] == PROBLEM
    assert {e["field"] for e in response.json()["errors"]} == {"version", "run"}


def test_an_import_kind_needs_the_role_of_its_upload_page(client_for, annotator):
    response = client_for(annotator).post(
        reverse("api:imports"),
        {"kind": "corpus", "file": SimpleUploadedFile("c.jsonl", b"{}\n")},
    )
    assert response.status_code == 403
    assert response["Content-Type"] == PROBLEM
    assert not ImportJob.objects.exists()


def test_each_import_endpoint_has_the_roles_of_its_upload_page():
    """One role rule for a kind of file, whichever URL it is posted to."""
    for name, kind in [
        ("api:triples_import", "triples"),
        ("api:questions_import", "questions"),
        ("api:answers_import", "answers"),
        ("api:jobs", "run"),
    ]:
        assert entry_for(name).roles == entry_for(IMPORT_PAGE[kind]).roles, name


def test_a_json_body_over_the_memory_cap_is_a_413_problem_pointing_to_the_file_upload(
    client_for, admin_user, version, settings
):
    """A run sent as a JSON body is parsed in memory, so it is capped by
    DATA_UPLOAD_MAX_MEMORY_SIZE; a larger body is refused with a problem naming the cap and the
    streaming multipart upload (it used to be Django's bare HTML 400)."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    run = [{"query_id": f"Q-{i}", "doc_id": f"D-{i}", "rank": 1, "score": 1.0} for i in range(99)]
    response = client_for(admin_user).post(
        reverse("api:jobs"),
        {"version": version.number, "run": run},
        content_type="application/json",
    )
    assert response.status_code == 413
    assert response["Content-Type"] == PROBLEM
    detail = response.json()["detail"]
    assert "2000 bytes" in detail and "multipart" in detail
    assert not ImportJob.objects.exists() and not ScoringJob.objects.exists()


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("name,args,anon,ann,lead_status,admin_status", WRITE_ENDPOINTS)
def test_a_100000_deep_json_body_is_a_problem_never_a_500(
    client_for, admin_user, api_objects, name, args, anon, ann, lead_status, admin_status
):
    """Issue 24: a freeze with 100,000 nested lists answered 500 (HTML). Endpoints that read
    JSON answer 400; those that read only files refuse the content type (415); those that read
    no body answer as they do to an empty one."""
    url = url_for(name, args, api_objects)
    response = client_for(admin_user).post(
        url, data=nested_json(100_000), content_type="application/json"
    )
    assert response.status_code in (400, 415, admin_status), response.content[:300]
    assert response["Content-Type"] == PROBLEM
    if name in ("api:version_freeze", "api:jobs"):
        assert response.status_code == 400
        assert "nests more than" in response.json()["detail"]


@pytest.mark.parametrize("name", ["api:version_freeze", "api:jobs"])
def test_a_json_body_deeper_than_the_limit_is_refused_even_when_it_parses(
    client_for, admin_user, name
):
    from goldset.views.api_parsers import JSON_MAX_DEPTH

    body = '{"filters": ' + nested_json(JSON_MAX_DEPTH + 1) + "}"
    response = client_for(admin_user).post(
        reverse(name), data=body, content_type="application/json"
    )
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    assert "nests more than" in response.json()["detail"]


def test_json_depth_is_measured_without_recursion():
    from goldset.views.api_parsers import json_depth_exceeds

    deep = []
    for _ in range(200_000):  # far deeper than the interpreter's recursion limit
        deep = [deep]
    assert json_depth_exceeds(deep, 64)
    assert not json_depth_exceeds({"a": [{"b": [1, 2]}]}, 4)
    assert json_depth_exceeds({"a": [{"b": [1, 2]}]}, 3)
