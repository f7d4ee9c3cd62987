"""Evaluator outputs as a background import (issue 10): the evaluator page and the API store the
upload and answer at once (302 to the job / 202 with the job), every role gets what the access
table says, a worker (in-process here, a real one in tests/goldset/worker) streams the file all
or nothing, every bad input of the shared error model is rejected naming line and field with
nothing stored (job page 422, API job ``rejected`` with line and field, command exit 2), a
double submit is one job with a message, and the size cap refuses the upload."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from goldset.exceptions import GoldsetError
from goldset.models import (
    Evaluator,
    EvaluatorImport,
    EvaluatorOutput,
    ImportJob,
    ImportKind,
    ImportStatus,
)
from goldset.services.evaluators import create_evaluator
from goldset.services.import_jobs import run_import_job, submit_import
from tests.factories import AnswerRecordFactory, default_project
from workbench.models import AuditEvent
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db
RAW = "__raw__"
BOM = b"\xef\xbb\xbf"


@pytest.fixture
def judge():
    return create_evaluator(name="judge", version="1", kind="llm_judge")


@pytest.fixture
def records():
    return [AnswerRecordFactory() for _ in range(3)]


def row(record, **extra) -> dict:
    return {
        "record_id": record.public_id,
        "evaluator": "judge",
        "labels": {"acceptability": "acceptable", "grounding": "fully_grounded"},
        "score": 0.75,
        "unsafe_probability": 0.05,
        **extra,
    }


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def page_url(evaluator) -> str:
    return reverse("evaluators:detail", args=[evaluator.pk])


def api_url(evaluator) -> str:
    return reverse("api:evaluator_outputs_import", args=[evaluator.pk])


def stored() -> tuple[int, int]:
    return EvaluatorOutput.objects.count(), EvaluatorImport.objects.count()


# ---------------------------------------------------------------- every role, page and API


def test_the_page_upload_for_every_role(
    client, client_for, annotator, lead, admin_user, judge, records, django_capture_on_commit_callbacks
):  # fmt: skip
    data = jsonl(*(row(r) for r in records))
    anonymous = client.post(page_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)})
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]
    for user in (annotator, lead):  # evaluators are hidden like systems: 404, not 403
        refused = client_for(user).post(
            page_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)}
        )
        assert refused.status_code == 404, user
    assert not ImportJob.objects.exists() and stored() == (0, 0)

    admin = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(page_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert response.url == reverse("imports:job", args=[job.pk])
    assert (job.kind, job.options, job.created_by) == (
        ImportKind.EVALUATOR,
        {"evaluator": judge.pk},
        admin_user,
    )
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert job.summary["records"] == 3 and job.summary["evaluator"] == "judge 1"
    page = admin.get(response.url)
    assert page.status_code == 200 and 'id="evaluator-link"' in page.content.decode()
    assert EvaluatorOutput.objects.filter(evaluator=judge).count() == 3
    batch = EvaluatorImport.objects.get()
    assert (batch.n_records, batch.sha256, batch.imported_by) == (3, job.sha256, admin_user)
    # The job is the admin's: other roles do not see it.
    assert client_for(lead).get(response.url).status_code == 404
    assert client_for(annotator).get(response.url).status_code == 404
    detail = admin.get(page_url(judge)).content.decode()
    assert "o.jsonl" in detail  # the accepted file is listed on the evaluator's page
    assert f'href="{response.url}"' in detail  # and its import job


def test_the_api_upload_for_every_role_and_a_read_only_token(
    client, client_for, annotator, lead, admin_user, judge, records,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    data = jsonl(*(row(r) for r in records))

    def post(who, **headers):
        return who.post(api_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)}, **headers)

    assert post(client).status_code == 401
    assert post(client_for(annotator)).status_code == 403
    assert post(client_for(lead)).status_code == 403
    _, raw = create_api_token(user=admin_user, name="ro", scope="read")
    read_only = post(client, HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert read_only.status_code == 403 and read_only["Content-Type"] == "application/problem+json"
    assert not ImportJob.objects.exists() and stored() == (0, 0)

    _, write = create_api_token(user=admin_user, name="rw", scope="write")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, HTTP_AUTHORIZATION=f"Bearer {write}")
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get()
    assert response["Location"] == f"/api/v1/imports/{job.pk}/"
    body = response.json()
    assert (body["id"], body["kind"], body["sha256"]) == (job.pk, "evaluator", job.sha256)
    polled = client_for(admin_user).get(response["Location"]).json()
    assert polled["status"] == "succeeded" and polled["summary"]["records"] == 3
    assert stored() == (3, 1)


def test_the_generic_import_endpoint_does_not_take_evaluator_outputs(
    client_for, admin_user, judge, records
):
    """Evaluator outputs name their evaluator in the URL; the generic endpoint refuses the kind
    (400 naming the field) instead of queueing a job with no evaluator."""
    response = client_for(admin_user).post(
        reverse("api:imports"),
        {"kind": "evaluator", "file": SimpleUploadedFile("o.jsonl", jsonl(row(records[0])))},
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "kind"
    assert not ImportJob.objects.exists()


def test_the_service_refuses_a_non_admin_and_an_unknown_evaluator(lead, admin_user, judge):
    upload = SimpleUploadedFile("o.jsonl", b'{"record_id": "x", "score": 1}\n')
    with pytest.raises(GoldsetError, match="Only an admin"):
        submit_import(
            project=default_project(),
            kind=ImportKind.EVALUATOR,
            upload=upload,
            actor=lead,
            options={"evaluator": judge.pk},
        )
    with pytest.raises(GoldsetError, match="no evaluator #999"):
        submit_import(
            project=default_project(),
            kind=ImportKind.EVALUATOR,
            upload=upload,
            actor=admin_user,
            options={"evaluator": 999},
        )
    assert not ImportJob.objects.exists()


# ---------------------------------------------------------------- the worker's side


def test_a_queued_job_shows_progress_then_the_worker_writes_it_in_bulk(
    client_for, admin_user, judge, django_assert_max_num_queries
):
    records = [AnswerRecordFactory() for _ in range(30)]
    EvaluatorOutput.objects.create(
        evaluator=judge,
        record=records[0],
        source=EvaluatorImport.objects.create(
            evaluator=judge, source_name="old.jsonl", sha256="0" * 64, n_records=1
        ),
        score=0.1,
    )
    client = client_for(admin_user)
    response = client.post(
        page_url(judge),
        {"file": SimpleUploadedFile("o.jsonl", jsonl(*(row(r, score=0.9) for r in records)))},
    )  # on_commit has not run: the job stays queued, as while a worker is busy
    page = client.get(response.url).content.decode()
    assert 'id="import-progress-bar"' in page and 'hx-trigger="every 1s"' in page
    assert EvaluatorOutput.objects.get().score == 0.1  # nothing parsed in the request
    job = ImportJob.objects.get()
    # Bulk inserts: a constant number of queries for 30 lines (one batch).
    with django_assert_max_num_queries(40):
        assert run_import_job(job_id=job.pk).status == ImportStatus.SUCCEEDED
    assert run_import_job(job_id=job.pk) is None  # a re-delivered message does nothing
    assert EvaluatorOutput.objects.filter(evaluator=judge).count() == 30
    assert EvaluatorOutput.objects.get(record=records[0]).score == 0.9  # overwritten
    assert AuditEvent.objects.filter(verb="evaluator_outputs_imported").count() == 1
    done = client.get(response.url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="import-progress")
    assert "hx-trigger" not in done.content.decode()


def test_a_rejected_file_written_past_its_first_batch_stores_nothing(admin_user, judge):
    """A problem on the last line of a file longer than one batch: the validate pass rejects the
    whole file before the write pass begins."""
    records = [AnswerRecordFactory() for _ in range(1002)]
    rows = [row(r) for r in records[:-1]] + [row(records[-1], score="high")]
    submission = submit_import(
        project=default_project(),
        kind=ImportKind.EVALUATOR,
        upload=SimpleUploadedFile("o.jsonl", jsonl(*rows)),
        actor=admin_user,
        options={"evaluator": judge.pk},
    )
    job = run_import_job(job_id=submission.job.pk)
    assert job.status == ImportStatus.REJECTED
    assert job.errors == [
        {
            "line": 1002,
            "field": "score",
            "message": "got 'high'",
            "expected": "a number between 0 and 1",
        }
    ]
    assert stored() == (0, 0)


def test_an_evaluator_deleted_before_the_worker_runs_rejects_the_job(admin_user, judge, records):
    submission = submit_import(
        project=default_project(),
        kind=ImportKind.EVALUATOR,
        upload=SimpleUploadedFile("o.jsonl", jsonl(row(records[0]))),
        actor=admin_user,
        options={"evaluator": judge.pk},
    )
    pk = judge.pk
    judge.delete()
    job = run_import_job(job_id=submission.job.pk)
    assert job.status == ImportStatus.REJECTED and f"no evaluator #{pk}" in job.message
    assert stored() == (0, 0)


# ---------------------------------------------------------------- the shared error model


def line_with(record, path: str, raw: str) -> str:
    """A valid judgement with ``path`` (``a`` or ``a.b``) set to a raw JSON token."""
    obj = row(record)
    *parents, last = path.split(".")
    target = obj
    for key in parents:
        target = target[key]
    target[last] = RAW
    return json.dumps(obj).replace(f'"{RAW}"', raw)


def cases(record):
    deep = "[" * 5000 + "]" * 5000
    return [
        ("nesting", line_with(record, "labels", deep), "line 2: nested deeper than 32 levels"),
        ("nan", line_with(record, "score", "NaN"), "line 2: score: NaN is not allowed"),
        (
            "infinity",
            line_with(record, "unsafe_probability", "-Infinity"),
            "line 2: unsafe_probability: -Infinity is not allowed",
        ),
        ("infinity-plain", line_with(record, "score", "Infinity"), "line 2: score: Infinity"),
        (
            "nul-text",
            line_with(record, "evaluator", '"ju\\u0000dge"'),
            "line 2: evaluator: contains a NUL character",
        ),
        ("nul-raw", line_with(record, "evaluator", '"a"') + "\x00", "line 2: contains a NUL"),
        (
            "nul-id",
            line_with(record, "record_id", '"x\\u0000"'),
            "line 2: record_id: contains a NUL character",
        ),
        (
            "too-long",
            line_with(record, "record_id", json.dumps("x" * 33)),
            "line 2: record_id: 33 characters is longer than the limit of 32",
        ),
        (
            "id-whitespace",
            line_with(record, "record_id", json.dumps(f" {record.public_id} ")),
            "has leading or trailing whitespace",
        ),
        (
            "id-tab",
            line_with(record, "record_id", '"a\\tb"'),
            "line 2: record_id: 'a\\tb' contains a control character",
        ),
        ("id-type", line_with(record, "record_id", "7"), "line 2: record_id: got int"),
        ("score-type", line_with(record, "score", '"0.5"'), "line 2: score: got '0.5'"),
        ("score-bool", line_with(record, "score", "true"), "line 2: score: got True"),
        ("range", line_with(record, "unsafe_probability", "1.5"), "unsafe_probability: got 1.5"),
        ("labels-type", line_with(record, "labels", "[1]"), "line 2: labels: got list"),
        (
            "label-value",
            line_with(record, "labels.grounding", '"mostly"'),
            "line 2: labels.grounding: 'mostly' is not one of",
        ),
        ("label-axis", line_with(record, "labels.tone", '"x"'), "line 2: labels.tone: unknown"),
        ("not-json", "{not json", "line 2: not valid JSON"),
        ("not-object", "[1, 2]", "line 2: expected a JSON object"),
        ("unknown-id", line_with(record, "record_id", '"ghost"'), "unknown answer record"),
        ("other-evaluator", line_with(record, "evaluator", '"other"'), "line 2: evaluator:"),
        (
            "no-judgement",
            json.dumps({"record_id": record.public_id}),
            "line 2: labels: no judgement",
        ),
        ("bom-inside", "\ufeff" + json.dumps(row(record)), "line 2: not valid JSON"),
    ]


CASE_NAMES = [name for name, _, _ in cases(type("R", (), {"public_id": "r"}))]


def bad_file(record, name: str) -> bytes:
    """A blank first line, so the bad record is on line 2 and line numbers are really counted."""
    text = next(text for n, text, _ in cases(record) if n == name)
    return ("\n" + text + "\n").encode()


def expected_text(record, name: str) -> str:
    return next(expected for n, _, expected in cases(record) if n == name)


def problem_text(problem: dict) -> str:
    parts = [f"line {problem['line']}"] if problem["line"] is not None else []
    if problem["field"]:
        parts.append(problem["field"])
    text = problem["message"] + (
        f" (expected {problem['expected']})" if problem["expected"] else ""
    )
    return ": ".join([*parts, text])


@pytest.mark.parametrize("name", CASE_NAMES)
def test_bad_input_on_the_page_is_a_rejected_job_naming_line_and_field(
    name, client_for, admin_user, judge, records, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    upload = SimpleUploadedFile("bad.jsonl", bad_file(records[0], name))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(page_url(judge), {"file": upload})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    expected = expected_text(records[0], name)
    assert all(p["line"] == 2 for p in job.errors), job.errors
    assert any(expected in problem_text(p) for p in job.errors), job.errors
    page = client.get(response.url)
    assert page.status_code == 422 and "nothing was imported" in page.content.decode()
    assert stored() == (0, 0)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_bad_input_through_the_api_is_a_rejected_job_naming_line_and_field(
    name, client_for, admin_user, judge, records, django_capture_on_commit_callbacks
):
    api = client_for(admin_user)
    upload = SimpleUploadedFile("bad.jsonl", bad_file(records[0], name))
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(api_url(judge), {"file": upload})
    assert response.status_code == 202
    job = api.get(response["Location"]).json()
    assert job["status"] == "rejected" and job["error_count"] >= 1
    assert all(e["line"] == 2 for e in job["errors"]), job["errors"]
    assert any(expected_text(records[0], name) in problem_text(e) for e in job["errors"])
    assert stored() == (0, 0)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_bad_input_through_the_command_exits_2_naming_line_and_field(
    name, tmp_path, judge, records
):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(bad_file(records[0], name))
    with pytest.raises(CommandError) as refused:
        call_command(
            "import_evaluator_outputs",
            str(path),
            "--evaluator",
            "judge",
            "--evaluator-version",
            "1",
        )
    assert refused.value.returncode == 2
    assert expected_text(records[0], name) in str(refused.value), str(refused.value)
    assert "rejected, nothing imported" in str(refused.value)
    assert stored() == (0, 0)


def test_not_utf8_empty_and_over_the_cap_are_refused_in_the_request_with_422(
    client_for, admin_user, judge, records, settings
):
    client = client_for(admin_user)
    good = jsonl(row(records[0]))
    binary = client.post(
        page_url(judge), {"file": SimpleUploadedFile("b.jsonl", good + b"\xff\xfe\n")}
    )
    assert binary.status_code == 422
    assert "b.jsonl, line 2: not valid UTF-8 text" in binary.content.decode()
    empty = client.post(page_url(judge), {"file": SimpleUploadedFile("e.jsonl", BOM)})
    assert empty.status_code == 422 and "e.jsonl is empty." in empty.content.decode()
    settings.IMPORT_MAX_UPLOAD_BYTES = 100
    big = jsonl(*(row(r) for r in records))
    assert len(big) > 100
    capped = client.post(page_url(judge), {"file": SimpleUploadedFile("big.jsonl", big)})
    assert capped.status_code == 422
    assert "the limit for an upload is 100 bytes" in capped.content.decode()
    api = client.post(api_url(judge), {"file": SimpleUploadedFile("big.jsonl", big)})
    assert api.status_code == 422 and api["Content-Type"] == "application/problem+json"
    assert "the limit for an upload is 100 bytes" in api.json()["detail"]
    assert not ImportJob.objects.exists() and stored() == (0, 0)


def test_a_bom_is_accepted_by_the_page_the_api_and_the_command(
    client_for, admin_user, judge, records, tmp_path, django_capture_on_commit_callbacks
):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(BOM + jsonl(row(records[0])))
    call_command(
        "import_evaluator_outputs", str(path), "--evaluator", "judge", "--evaluator-version", "1"
    )
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(
            page_url(judge),
            {"file": SimpleUploadedFile("bom.jsonl", BOM + jsonl(row(records[1])))},
        )
        api = client.post(
            api_url(judge), {"file": SimpleUploadedFile("bom.jsonl", BOM + jsonl(row(records[2])))}
        )
    assert page.status_code == 302 and api.status_code == 202
    assert set(ImportJob.objects.values_list("status", flat=True)) == {ImportStatus.SUCCEEDED}
    assert EvaluatorOutput.objects.filter(evaluator=judge).count() == 3


# ---------------------------------------------------------------- idempotent submissions


def test_a_double_submit_is_one_job_with_a_message(
    client_for, admin_user, judge, records, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    data = jsonl(*(row(r) for r in records))
    queued = client.post(page_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)})
    again = client.post(page_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)}, follow=True)
    assert ImportJob.objects.count() == 1 and again.redirect_chain[-1][0] == queued.url
    assert "This file was already submitted" in again.content.decode()
    api = client.post(api_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)})
    assert api.status_code == 202 and api.json()["id"] == ImportJob.objects.get().pk
    job = ImportJob.objects.get()
    assert run_import_job(job_id=job.pk).status == ImportStatus.SUCCEEDED
    with django_capture_on_commit_callbacks(execute=True):
        third = client.post(
            page_url(judge), {"file": SimpleUploadedFile("o.jsonl", data)}, follow=True
        )
    assert "This file was already imported" in third.content.decode()
    assert ImportJob.objects.count() == 1 and stored() == (3, 1)
    # The same file for another evaluator is another import.
    other = create_evaluator(name="judge", version="2", kind="llm_judge")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(page_url(other), {"file": SimpleUploadedFile("o.jsonl", data)})
    assert ImportJob.objects.count() == 2 and stored() == (6, 2)


def test_the_command_reads_the_file_and_refuses_an_unknown_evaluator_with_exit_2(
    tmp_path, records, capsys
):
    path = tmp_path / "o.jsonl"
    path.write_bytes(jsonl(*(row(r, evaluator="cli") for r in records)))
    with pytest.raises(CommandError) as refused:
        call_command("import_evaluator_outputs", str(path), "--evaluator", "cli",
                     "--evaluator-version", "1")  # fmt: skip
    assert refused.value.returncode == 2 and "use --create" in str(refused.value)
    call_command("import_evaluator_outputs", str(path), "--evaluator", "cli",
                 "--evaluator-version", "1", "--create")  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 3 and summary["evaluator"] == "cli 1"
    assert stored() == (3, 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(row(records[0], evaluator="new", score=2)))
    with pytest.raises(CommandError) as refused:
        call_command("import_evaluator_outputs", str(bad), "--evaluator", "new",
                     "--evaluator-version", "1", "--create")  # fmt: skip
    assert refused.value.returncode == 2 and "line 1: score: got 2" in str(refused.value)
    # --create registers nothing for a rejected file.
    assert not Evaluator.objects.filter(name="new").exists() and stored() == (3, 1)
