"""Version and scoring pages: access per role, freeze flow, downloads with redaction and
checksums, uploads with line-numbered errors, progress partial, results, compare, query caps."""

import io
import json

import pytest
from django.db import connection
from django.urls import reverse

from goldset.models import GoldVersionFileChunk, JobStatus, ScoringJob
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(6)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def run_file(version, *, shift=0, name="run.trec"):
    lines = [
        f"Q-{i} Q0 {version.blocks[(i + shift) % 6]} 1 2.0 s\nQ-{i} Q0 {version.blocks[(i + 1) % 6]} 2 1.0 s"
        for i in range(6)
    ]
    upload = io.BytesIO(("\n".join(lines) + "\n").encode())
    upload.name = name
    return upload


def upload(client, version, file, name="bm25"):
    return client.post(
        reverse("exports:jobs"), {"version": version.number, "name": name, "k": 10, "file": file}
    )


ROLE_CASES = [
    ("exports:versions", [], 403, 200),
    ("exports:freeze", [], 403, 403),
    ("exports:version", [1], 403, 200),
    ("exports:download", [1, "gold_jsonl"], 403, 200),
    ("exports:diff", [], 403, 200),
    ("exports:jobs", [], 403, 403),
]


@pytest.mark.parametrize("url_name,args,annotator_status,lead_status", ROLE_CASES)
def test_each_page_answers_each_role(
    client,
    client_for,
    annotator,
    lead,
    admin_user,
    version,
    url_name,
    args,
    annotator_status,
    lead_status,
):
    url = reverse(url_name, args=args) + ("?a=1&b=1" if url_name == "exports:diff" else "")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_for(annotator).get(url).status_code == annotator_status
    assert client_for(lead).get(url).status_code == lead_status
    assert client_for(admin_user).get(url).status_code == 200


def test_job_pages_are_admin_only_and_unknown_ids_are_404(client_for, lead, admin_user, version):
    job = ScoringJob.objects.create(
        project_id=version.project_id,
        version=version,
        name="x",
        kind="retrieval",
        run_format="trec",
        run_filename="r",
        run_sha256="0",
        run_size=0,
        status=JobStatus.FAILED,
    )
    for name, args in [
        ("exports:job", [job.pk]),
        ("exports:job_download", [job.pk, "csv"]),
        ("exports:compare", []),
    ]:
        assert client_for(lead).get(reverse(name, args=args)).status_code == 403
    assert client_for(lead).post(reverse("exports:retry", args=[job.pk])).status_code == 403
    admin = client_for(admin_user)
    assert admin.get(reverse("exports:job", args=[999])).status_code == 404
    assert admin.get(reverse("exports:version", args=[99])).status_code == 404
    assert (
        admin.get(reverse("exports:job_download", args=[job.pk, "csv"])).status_code == 404
    )  # not succeeded
    assert admin.get(reverse("exports:compare"), {"jobs": [job.pk, 999]}).status_code == 400


def test_download_streams_the_verified_file_and_redacts_snippets_without_the_permission(
    client_for, lead, admin_user, version, make_user
):
    full = b"".join(
        client_for(admin_user)
        .get(reverse("exports:download", args=[1, "unrag_json"]))
        .streaming_content
    )
    assert json.loads(full)["documents"][0]["content"]
    lead_file = client_for(lead).get(reverse("exports:download", args=[1, "unrag_json"]))
    redacted = json.loads(b"".join(lead_file.streaming_content))
    assert (
        "content" not in redacted["documents"][0] and "redacted" in lead_file["Content-Disposition"]
    )
    gold = client_for(lead).get(reverse("exports:download", args=[1, "gold_jsonl"]))
    assert b"".join(gold.streaming_content).decode().count("\n") == 6 and gold[
        "Content-Disposition"
    ].endswith('gold.jsonl"')
    assert (
        client_for(admin_user).get(reverse("exports:download", args=[1, "nope"])).status_code == 404
    )


def test_a_tampered_file_gives_a_clear_error_page_and_no_file(client_for, admin_user, version):
    chunk = GoldVersionFileChunk.objects.get(file__version=version, file__format="gold_jsonl")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE goldset_goldversionfilechunk SET data = %s WHERE id = %s", [b"{}\n", chunk.pk]
        )
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")
    response = client_for(admin_user).get(reverse("exports:download", args=[1, "gold_jsonl"]))
    assert response.status_code == 500 and not response.streaming
    assert (
        "Integrity check failed" in response.content.decode()
        and "Content-Disposition" not in response
    )


def test_admin_previews_and_freezes_from_the_page_with_htmx(client_for, admin_user):
    admin = client_for(admin_user)
    page = admin.post(
        reverse("exports:freeze"),
        {"action": "preview"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="freeze-preview",
    )
    assert (
        page.status_code == 200
        and 'id="freeze-preview"' in page.content.decode()
        and "<html" not in page.content.decode()
    )
    assert "nothing to freeze" not in page.content.decode()
    response = admin.post(reverse("exports:freeze"), {"action": "freeze"})
    assert response.status_code == 422 and "nothing to freeze" in response.content.decode()


def test_upload_rejects_a_bad_run_with_line_numbers_and_creates_no_job(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    bad = io.BytesIO(
        f"Q-0 Q0 {version.blocks[0]} 1 2.0 s\nQ-77 Q0 {version.blocks[0]} 1 2.0 s\nbroken line\n".encode()
    )
    bad.name = "bad.trec"
    admin = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(admin, version, bad)
    page = admin.get(response.url)
    html = page.content.decode()
    assert page.status_code == 422 and "line 3: expected 6 fields" in html
    assert not ScoringJob.objects.exists()


def test_upload_scores_and_shows_progress_results_downloads_and_compare(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    admin = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        first = upload(admin, version, run_file(version))
        second = upload(admin, version, run_file(version, shift=3, name="other.trec"), name="dense")
    a, b = ScoringJob.objects.order_by("pk")
    assert a.status == b.status == JobStatus.SUCCEEDED
    job_page = admin.get(first.url).content.decode()
    assert reverse("exports:job", args=[a.pk]) in job_page
    partial = admin.get(
        reverse("exports:job", args=[a.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-progress"
    )
    assert 'value="100"' in partial.content.decode() and "<html" not in partial.content.decode()
    page = admin.get(reverse("exports:job", args=[a.pk])).content.decode()
    assert "ndcg@10" in page and "95 % CI" in page and 'id="worst"' in page and "domain" in page
    csv_text = b"".join(
        admin.get(reverse("exports:job_download", args=[a.pk, "csv"])).streaming_content
    ).decode()
    assert (
        csv_text.splitlines()[0].startswith("query_id,domain,task_type,")
        and len(csv_text.splitlines()) == 7
    )
    results = json.loads(
        b"".join(admin.get(reverse("exports:job_download", args=[a.pk, "json"])).streaming_content)
    )
    assert results["run_sha256"] == a.run_sha256 and "--resamples" in results["reproduce"]
    assert "--strata strata.csv" in results["reproduce"]
    import zipfile

    bundle = zipfile.ZipFile(
        io.BytesIO(
            b"".join(
                admin.get(reverse("exports:job_download", args=[a.pk, "bundle"])).streaming_content
            )
        )
    )
    assert set(bundle.namelist()) == {
        "goldset-v1-gold.jsonl",
        "manifest.json",
        "strata.csv",
        "run.trec",
        "results.json",
        "README.txt",
    }
    assert "python -m scoring retrieval" in bundle.read("README.txt").decode()
    assert bundle.read("strata.csv").decode().splitlines()[0] == "query_id,stratum"
    compare = admin.get(reverse("exports:compare"), {"jobs": [a.pk, b.pk]}).content.decode()
    assert (
        "Holm" in compare
        and "Wilcoxon signed-rank" in compare
        and "McNemar" in compare
        and 'id="per-query"' in compare
    )
    assert second.status_code == 302


def test_failed_job_shows_reason_and_retry_button(client_for, admin_user, version):
    job = ScoringJob.objects.create(
        project_id=version.project_id,
        version=version,
        name="x",
        kind="retrieval",
        run_format="trec",
        run_filename="r",
        run_sha256="0",
        run_size=0,
        status=JobStatus.FAILED,
        error="InputError: boom",
    )
    html = client_for(admin_user).get(reverse("exports:job", args=[job.pk])).content.decode()
    assert "InputError: boom" in html and reverse("exports:retry", args=[job.pk]) in html


@pytest.mark.parametrize("n", [2, 30])
def test_version_and_job_lists_keep_a_constant_query_count(
    client_for, admin_user, django_assert_max_num_queries, n
):
    versions = make_gold_corpus(2)
    for k in range(n):
        frozen = store_frozen_version(
            project=default_project(),
            rows=[gold_row_for(bv, triple_id=f"T{i}-{k}") for i, bv in enumerate(versions)],
            actor=admin_user,
        )
        ScoringJob.objects.create(
            project_id=frozen.project_id,
            version=frozen,
            name="x",
            kind="retrieval",
            run_format="trec",
            run_filename="r",
            run_sha256="0",
            run_size=0,
        )
    admin = client_for(admin_user)
    # the versions, their tags, the tags' latest changes and the tag form's choices
    with django_assert_max_num_queries(9):
        assert admin.get(reverse("exports:versions")).status_code == 200
    with django_assert_max_num_queries(9):
        assert admin.get(reverse("exports:jobs")).status_code == 200
