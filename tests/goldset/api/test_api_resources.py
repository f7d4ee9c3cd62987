"""REST API v1 resources beyond the basics: blocks and their versions, triples in the caller's
scope, imports as background jobs with line and field, evaluator outputs, the idempotent
freeze, compare (one version, else 422), agreement snapshots named as on the dashboard, and a
run uploaded as a file. Roles per endpoint are in test_api's tables."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import (
    AgreementSnapshot,
    EvaluatorOutput,
    GoldVersion,
    ImportJob,
    ScoringJob,
    default_project_id,
)
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import store_frozen_version
from tests.factories import (
    AnswerRecordFactory,
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    default_project,
    gold_row_for,
)
from tests.goldset.api.test_api import PROBLEM
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def upload(name, text):
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text)


def queries_for(api, url):
    with CaptureQueriesContext(connection) as captured:
        response = api.get(url)
    assert response.status_code == 200, response.content[:300]
    return len(captured), response.json()


def test_a_documents_blocks_and_their_versions(client_for, annotator):
    document = DocumentFactory()
    block = BlockFactory(document=document, block_id="blk-1")
    BlockVersionFactory(block=block, version=1, text="first")
    BlockVersionFactory(block=block, version=2, text="second")
    api = client_for(annotator)
    blocks = api.get(reverse("api:document_blocks", args=[document.document_id])).json()
    assert blocks["results"] == [
        {"block_id": "blk-1", "position": 0, "latest_version": 2, "version_count": 2}
    ]
    versions = api.get(reverse("api:block_versions", args=["blk-1"])).json()["results"]
    assert [(v["version"], v["text"]) for v in versions] == [(1, "first"), (2, "second")]
    assert versions[0]["document_id"] == document.document_id and len(versions[0]["sha256"]) == 64
    missing = api.get(reverse("api:block_version", args=["blk-1", 3]))
    assert missing.status_code == 404 and missing["Content-Type"] == PROBLEM
    assert api.get(reverse("api:block_versions", args=["nope"])).status_code == 404


@pytest.mark.parametrize("size", [2, 7])
def test_blocks_and_versions_list_at_a_constant_query_count(client_for, annotator, size):
    document = DocumentFactory()
    for i in range(size):
        block = BlockFactory(document=document, block_id=f"blk-{i}")
        for version in range(1, (size if i == 0 else 1) + 1):
            BlockVersionFactory(block=block, version=version)
    api = client_for(annotator)
    count, body = queries_for(api, reverse("api:document_blocks", args=[document.document_id]))
    assert count == 5 and len(body["results"]) == size  # + the document
    count, body = queries_for(api, reverse("api:block_versions", args=["blk-0"]))
    assert count == 5 and len(body["results"]) == size  # + the block


@pytest.mark.parametrize("size", [2, 6])
def test_triples_are_read_in_the_callers_scope_at_a_constant_query_count(
    client_for, make_user, lead, size
):
    author, flagger, other = (make_user(Role.ANNOTATOR, username=u) for u in ("au", "fl", "ot"))
    mine = [write_triple(author, question=f"Question number {i}?") for i in range(size)]
    flagged = mine[0]
    review(flagger, flagged, verdict="flag", flags=("wrong_source_block",))
    theirs = write_triple(other)
    url = reverse("api:triples")

    count, seen = queries_for(client_for(author), url)
    assert {t["id"] for t in seen["results"]} == {t.external_id for t in mine}
    assert count == 4  # session, user, roles, one page of triples with their joins
    _, seen = queries_for(client_for(flagger), url)
    assert [t["id"] for t in seen["results"]] == [flagged.external_id]
    _, seen = queries_for(client_for(lead), url)
    assert {t["id"] for t in seen["results"]} == {t.external_id for t in [*mine, theirs]}
    row = next(t for t in seen["results"] if t["id"] == theirs.external_id)
    assert row["author"] == "ot" and row["expected_block"]["version"] == 1
    assert "reviews" not in row

    detail = reverse("api:triple", args=[theirs.external_id])
    assert client_for(author).get(detail).status_code == 404
    assert client_for(other).get(detail).json()["question"] == theirs.current_revision.question
    bad = client_for(author).get(url + "?state=nonsense")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "state"


def test_the_freeze_is_idempotent_like_the_page(client_for, make_user, admin_user):
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("au", "r1", "r2"))
    triple = write_triple(author)
    review(r1, triple)
    review(r2, triple)
    api = client_for(admin_user)
    first = api.post(
        reverse("api:version_freeze"), {"note": "api"}, content_type="application/json"
    )
    assert first.status_code == 201, first.content
    assert first.json()["created"] is True and first.json()["version"]["number"] == 1
    assert first["Location"] == "/api/v1/versions/1/"
    again = api.post(reverse("api:version_freeze"), {}, content_type="application/json")
    assert again.status_code == 200
    assert again.json()["created"] is False and again.json()["version"]["number"] == 1
    assert "identical to v1" in again.json()["detail"]
    assert GoldVersion.objects.count() == 1
    bad = api.post(reverse("api:version_freeze"), {"tier": "x"}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "tier"


def test_compare_needs_jobs_on_one_version_else_422(client_for, admin_user, version):
    other = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(BlockVersionFactory(), triple_id="Q-other")],
        actor=admin_user,
    )
    jobs = [
        ScoringJob.objects.create(
            project_id=v.project_id,
            version=v,
            name=f"j{i}",
            kind="retrieval",
            run_format="trec",
            run_filename="r",
            run_sha256=f"{i}" * 64,
            run_size=1,
            status="succeeded",
        )  # fmt: skip
        for i, v in enumerate([version, other, version])
    ]
    api = client_for(admin_user)
    url = reverse("api:job_compare")
    mixed = api.get(f"{url}?jobs={jobs[0].pk}&jobs={jobs[1].pk}")
    assert mixed.status_code == 422 and mixed["Content-Type"] == PROBLEM
    assert "same gold version" in mixed.json()["detail"]
    assert api.get(f"{url}?jobs={jobs[0].pk}").status_code == 422
    assert api.get(f"{url}?jobs={jobs[0].pk}&jobs=999").status_code == 404
    same = api.get(f"{url}?jobs={jobs[0].pk}&jobs={jobs[2].pk}")
    assert same.status_code == 200
    assert [j["id"] for j in same.json()["jobs"]] == [jobs[0].pk, jobs[2].pk]


def test_a_run_file_upload_is_scored_like_the_json_body(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    run = "".join(
        json.dumps({"query_id": f"Q-{i}", "results": [{"doc_id": version.blocks[i], "score": 1}]})
        + "\n"
        for i in range(6)
    )
    api = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            reverse("api:jobs"), {"version": 1, "k": 5, "file": upload("bm25.jsonl", run)}
        )
    assert response.status_code == 202, response.content
    imported = api.get(response["Location"]).json()
    assert imported["status"] == "succeeded", imported
    job = api.get(reverse("api:job", args=[imported["summary"]["scoring_job"]])).json()
    assert job["status"] == "succeeded" and job["k"] == 5
    assert job["release_gate"] is None  # a retrieval run has no release gate
    not_text = api.post(reverse("api:jobs"), {"version": 1, "file": upload("r.jsonl", b"{}\n\xff")})
    assert not_text.status_code == 422
    assert not_text.json()["errors"][0]["line"] == 2


def test_import_errors_name_their_line_and_field(
    client_for, lead, admin_user, django_capture_on_commit_callbacks
):
    good_line = {"run_id": "r", "system_id": "s", "question_id": "q", "answer": "a"}
    cases = [
        (lead, "api:triples_import", '{"question": "Q?"}\n'),
        (admin_user, "api:answers_import", json.dumps(good_line) + "\n" + "[1]\n"),
        (admin_user, "api:questions_import", '{"question_id": "q1"}\n'),
    ]
    for user, name, text in cases:
        api = client_for(user)
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(reverse(name), {"file": upload("bad.jsonl", text)})
        assert response.status_code == 202, (name, response.content)
        job = api.get(response["Location"]).json()
        assert job["status"] == "rejected", (name, job)
        assert all(e["line"] is not None for e in job["errors"]), (name, job["errors"])
        assert any(e["field"] for e in job["errors"]), (name, job["errors"])
    assert not ImportJob.objects.filter(status="succeeded").exists()


def test_evaluator_outputs_import_is_a_job_202_rejected_with_line_and_field(
    client_for, admin_user, django_capture_on_commit_callbacks
):
    evaluator = create_evaluator(
        project=default_project(), name="judge", version="1", kind="llm_judge"
    )
    record = AnswerRecordFactory()
    url = reverse("api:evaluator_outputs_import", args=[evaluator.pk])
    api = client_for(admin_user)
    good = json.dumps({"record_id": record.public_id, "score": 0.8})
    bad = json.dumps({"record_id": record.public_id, "labels": {"grounding": "vague"}})
    with django_capture_on_commit_callbacks(execute=True):
        queued = api.post(url, {"file": upload("out.jsonl", f"{good}\n{bad}\n")})
    assert queued.status_code == 202 and queued.json()["kind"] == "evaluator"
    job = api.get(queued["Location"]).json()
    assert job["status"] == "rejected"
    assert {(e["line"], e["field"]) for e in job["errors"]} == {
        (2, "record_id"),  # judged on line 1 already
        (2, "labels.grounding"),
    }
    assert not EvaluatorOutput.objects.exists()
    binary = api.post(url, {"file": upload("out.jsonl", good.encode() + b"\n\xff\n")})
    assert binary.status_code == 422 and binary["Content-Type"] == PROBLEM
    assert binary.json()["errors"][0]["line"] == 2
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post(url, {"file": upload("out.jsonl", good + "\n")})
    assert created.status_code == 202
    done = api.get(created["Location"]).json()
    assert done["status"] == "succeeded" and done["summary"]["records"] == 1
    assert EvaluatorOutput.objects.get().score == 0.8
    assert api.post(reverse("api:evaluator_outputs_import", args=[999]), {}).status_code == 404


@pytest.mark.parametrize("pairs", [1, 4])
def test_agreement_snapshots_name_people_as_the_dashboard_does(client_for, make_user, lead, pairs):
    people = [make_user(Role.ANNOTATOR, first_name=f"Ann{i}", last_name="Lee") for i in range(5)]
    for i in range(pairs):
        a, b = people[i], people[i + 1]
        AgreementSnapshot.objects.create(project_id=default_project_id(),
            protocol="answer_label", axis="acceptability", metric="cohen_kappa", tier="tier_b",
            subject=f"{a.pk}|{b.pk}", value=0.8, n_items=12, data_version="d",
        )  # fmt: skip
    AgreementSnapshot.objects.create(project_id=default_project_id(),
        protocol="answer_label", axis="acceptability", metric="krippendorff_alpha",
        value=0.7, n_items=12, data_version="d",
    )  # fmt: skip
    count, body = queries_for(client_for(lead), reverse("api:agreement_snapshots"))
    assert count == 5  # session, user, roles, one page of snapshots, their display names
    kappas = [r for r in body["results"] if r["metric"] == "cohen_kappa"]
    assert {r["subject"] for r in kappas} == {f"Ann{i} Lee & Ann{i + 1} Lee" for i in range(pairs)}
    filtered = client_for(lead).get(reverse("api:agreement_snapshots") + "?metric=cohen_kappa")
    assert len(filtered.json()["results"]) == pairs
