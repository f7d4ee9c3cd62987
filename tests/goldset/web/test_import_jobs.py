"""Import jobs: the job page for every role, progress fragment, idempotent submissions, the
size cap, forged authorship, runs through the toolkit, and bulk inserts (queries do not grow
with rows)."""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import (
    Block,
    BlockVersion,
    Document,
    ImportJob,
    ImportStatus,
    ScoringJob,
    Triple,
)
from goldset.services.corpus import import_corpus
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import run_import_job
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DomainFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def manifest(n: int, *, start: int = 0) -> str:
    return "".join(
        json.dumps(
            {
                "document_id": f"doc-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(start, start + n)
    )


@pytest.fixture
def domain():
    return DomainFactory(slug="federal_it")


def post_corpus(client, text: str, capture, name="m.jsonl"):
    with capture(execute=True):
        return client.post(
            reverse("corpus:import"), {"file": SimpleUploadedFile(name, text.encode())}
        )


# ---------------------------------------------------------------- the job page, every role


def test_job_page_for_every_role(
    client, client_for, admin_user, lead, annotator, domain, django_capture_on_commit_callbacks
):
    admin_job = post_corpus(client_for(admin_user), manifest(1), django_capture_on_commit_callbacks)
    url = admin_job.url
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_for(annotator).get(url).status_code == 404
    assert client_for(lead).get(url).status_code == 404  # not theirs
    page = client_for(admin_user).get(url)
    assert page.status_code == 200 and "Imported" in page.content.decode()
    # A lead's own triple import is theirs to watch.
    row = {
        "question": "Q?",
        "expected_block": {"block_id": "blk-0", "version": 1},
        "expected_answer": "A.",
        "metadata": {"domain": "federal_it", "task_type": "factual_qa", "source": "public_rfp"},
    }
    lead_client = client_for(lead)
    with django_capture_on_commit_callbacks(execute=True):
        own = lead_client.post(
            reverse("curation:import"),
            {"file": SimpleUploadedFile("t.jsonl", json.dumps(row).encode())},
        )
    assert lead_client.get(own.url).status_code == 200
    assert client_for(annotator).get(own.url).status_code == 404
    assert client_for(admin_user).get(own.url).status_code == 200
    assert Triple.objects.get().author == lead


def test_a_queued_job_shows_a_polling_progress_bar_and_the_fragment(client_for, admin_user, domain):
    client = client_for(admin_user)
    response = client.post(
        reverse("corpus:import"), {"file": SimpleUploadedFile("m.jsonl", manifest(3).encode())}
    )  # on_commit has not run: the job stays queued, as while a worker is busy
    page = client.get(response.url).content.decode()
    assert 'hx-trigger="every 1s"' in page and 'id="import-progress-bar"' in page
    fragment = client.get(response.url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="import-progress")
    html = fragment.content.decode()
    assert 'id="import-progress"' in html and "<html" not in html and "Queued" in html
    job = ImportJob.objects.get()
    assert run_import_job(job_id=job.pk).status == ImportStatus.SUCCEEDED
    assert run_import_job(job_id=job.pk) is None  # a re-delivered message does nothing
    done = client.get(response.url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="import-progress")
    assert "hx-trigger" not in done.content.decode() and Document.objects.count() == 3


# ---------------------------------------------------------------- idempotent submissions


def test_a_double_submitted_file_is_one_job_and_one_result(
    client_for, admin_user, domain, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    first = post_corpus(client, manifest(2), django_capture_on_commit_callbacks)
    second = post_corpus(client, manifest(2), django_capture_on_commit_callbacks)
    assert first.status_code == second.status_code == 302 and first.url == second.url
    assert ImportJob.objects.count() == 1 and Document.objects.count() == 2
    page = client.get(second.url).content.decode()
    assert "already imported" in page
    # A rejected file submitted again is checked again (the database may have changed).
    bad = manifest(1, start=5).replace("federal_it", "healthcare_ops")
    rejected = post_corpus(client, bad, django_capture_on_commit_callbacks)
    assert ImportJob.objects.get(pk=_pk(rejected)).status == ImportStatus.REJECTED
    DomainFactory(slug="healthcare_ops")
    again = post_corpus(client, bad, django_capture_on_commit_callbacks)
    assert again.url == rejected.url
    assert ImportJob.objects.get(pk=_pk(again)).status == ImportStatus.SUCCEEDED


def _pk(response) -> int:
    return int(response.url.rstrip("/").rsplit("/", 1)[1])


def test_an_upload_commits_when_the_broker_is_down_and_a_resubmission_sends_it_again(
    client_for, admin_user, domain, monkeypatch, django_capture_on_commit_callbacks
):
    from kombu.exceptions import OperationalError

    from workbench.celery import app

    def broker_down(*args, **kwargs):  # the boundary: Redis refusing connections
        raise OperationalError("Error 111 connecting to redis:6379. Connection refused.")

    client = client_for(admin_user)
    conf = app.conf
    eager, conf.task_always_eager = conf.task_always_eager, False
    try:
        with monkeypatch.context() as patched:
            patched.setattr(type(app.tasks["goldset.run_import"]), "apply_async", broker_down)
            response = post_corpus(client, manifest(2), django_capture_on_commit_callbacks)
    finally:
        conf.task_always_eager = eager
    assert response.status_code == 302
    assert ImportJob.objects.get().status == ImportStatus.QUEUED
    again = post_corpus(client, manifest(2), django_capture_on_commit_callbacks)
    assert again.url == response.url
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.SUCCEEDED, (job.status, job.attempts, job.message)
    assert Document.objects.count() == 2


def test_an_upload_over_the_size_cap_is_refused_with_422(client_for, admin_user, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 100
    response = client_for(admin_user).post(
        reverse("corpus:import"), {"file": SimpleUploadedFile("big.jsonl", b"x" * 101)}
    )
    assert response.status_code == 422
    assert "the limit for an upload is 100 bytes" in response.content.decode()
    assert not ImportJob.objects.exists()


# ---------------------------------------------------------------- authorship (issue 11 item 5)


@pytest.fixture
def triple_file(make_user):
    make_user(Role.ANNOTATOR, username="someone")
    v = BlockVersionFactory(block=BlockFactory(block_id="blk-a"))

    def make(**meta):
        row = {
            "id": meta.pop("id", "t-1"),
            "question": "Q?",
            "expected_block": {"block_id": "blk-a", "version": v.version},
            "expected_answer": "A.",
            "metadata": {
                "domain": v.block.document.domain.slug,
                "task_type": "factual_qa",
                "source": "llm_generated",
                **meta,
            },
        }
        return SimpleUploadedFile("t.jsonl", json.dumps(row).encode())

    return make


def test_a_lead_cannot_import_triples_as_someone_else(
    client_for, lead, triple_file, django_capture_on_commit_callbacks
):
    client = client_for(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("curation:import"), {"file": triple_file(added_by="someone")}
        )
    page = client.get(response.url)
    assert page.status_code == 422 and "line 1: metadata.added_by" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("curation:import"),
            {"file": triple_file(id="t-2", human_verified_by="someone")},
        )
    assert "line 1: metadata.human_verified_by" in client.get(response.url).content.decode()
    refused = client.post(
        reverse("curation:import"), {"file": triple_file(id="t-3"), "on_behalf": "on"}
    )
    assert refused.status_code == 422 and "Only an admin" in refused.content.decode()
    assert not Triple.objects.exists()


def test_an_admin_imports_on_behalf_and_the_audit_says_so(
    client_for, admin_user, triple_file, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("curation:import"),
            {"file": triple_file(added_by="someone"), "on_behalf": "on"},
        )
    triple = Triple.objects.get()
    assert triple.author.username == "someone" and triple.human_verified_by is None
    event = AuditEvent.objects.get(verb="triple_created")
    assert event.actor == admin_user and event.detail["on_behalf_of"] == "someone"
    assert ImportJob.objects.get().on_behalf is True
    # Even on behalf, a verification by another human cannot be imported.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("curation:import"),
            {"file": triple_file(id="t-9", human_verified_by="someone"), "on_behalf": "on"},
        )
    assert ImportJob.objects.get(status=ImportStatus.REJECTED).errors[0]["field"] == (
        "metadata.human_verified_by"
    )
    assert Triple.objects.count() == 1


def test_the_importer_verifies_their_own_llm_triple(admin_user, triple_file, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(triple_file(human_verified_by="admin-test").read())
    call_command("import_triples", str(path), actor="admin-test")
    triple = Triple.objects.get()
    assert triple.author == triple.human_verified_by == admin_user


def test_the_command_refuses_on_behalf_for_a_non_admin(lead, triple_file, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(triple_file(added_by="someone").read())
    with pytest.raises(CommandError, match="Only an admin") as refused:
        call_command("import_triples", str(path), actor="lead-test", on_behalf=True)
    assert refused.value.returncode == 2 and not Triple.objects.exists()


# ---------------------------------------------------------------- runs


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(3)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


RUN_CASES = [
    ("nan", '{"query_id": "Q-0", "results": [{"doc_id": "%s", "score": NaN}]}', "results[0].score"),
    ("nesting", '{"query_id": "Q-0", "results": ' + "[" * 3000 + "]" * 3000 + "}", "nested"),
    ("nul", '{"query_id": "Q-0\\u0000", "results": []}', "query_id: contains a NUL"),
]


@pytest.mark.parametrize("line,expected", [c[1:] for c in RUN_CASES], ids=[c[0] for c in RUN_CASES])
def test_a_bad_run_is_refused_by_the_page_and_the_command_with_line_and_field(
    line, expected, client_for, admin_user, version, tmp_path, django_capture_on_commit_callbacks
):
    data = ("\n" + (line % version.blocks[0] if "%s" in line else line) + "\n").encode()
    client = client_for(admin_user)
    upload = io.BytesIO(data)
    upload.name = "run.jsonl"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("exports:jobs"), {"version": 1, "name": "r", "k": 10, "file": upload}
        )
    page = client.get(response.url)
    assert page.status_code == 422 and "line 2" in page.content.decode()
    assert expected in page.content.decode()
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    with pytest.raises(CommandError) as refused:
        call_command("score_run", str(path), "--version", "1")
    assert refused.value.returncode == 2 and "line 2" in str(refused.value)
    assert not ScoringJob.objects.exists()


def test_a_run_with_a_bom_is_scored(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    text = "".join(f"Q-{i} Q0 {version.blocks[i]} 1 2.0 s\n" for i in range(3))
    upload = io.BytesIO(b"\xef\xbb\xbf" + text.encode())
    upload.name = "run.trec"
    with django_capture_on_commit_callbacks(execute=True):
        client_for(admin_user).post(
            reverse("exports:jobs"), {"version": 1, "name": "r", "k": 10, "file": upload}
        )
    assert ImportJob.objects.get().status == ImportStatus.SUCCEEDED
    assert ScoringJob.objects.get().status == "succeeded"


# ---------------------------------------------------------------- bulk inserts


def test_a_20000_document_corpus_imports_with_bulk_inserts(domain):
    with CaptureQueriesContext(connection) as small:
        import_corpus(project=default_project(), source=manifest(1000), actor=None)
    with CaptureQueriesContext(connection) as large:
        summary = import_corpus(
            project=default_project(), source=manifest(20_000, start=1000), actor=None
        )
    assert (summary.documents_created, summary.versions_created) == (20_000, 20_000)
    assert (Document.objects.count(), Block.objects.count(), BlockVersion.objects.count()) == (
        21_000,
        21_000,
        21_000,
    )
    # A constant number of queries per batch of 1,000 rows: 20x the rows, about 20x the
    # batches, never one query per row.
    assert len(large) <= 20 * len(small) + 10
    assert len(large) < 20_000 / 50
