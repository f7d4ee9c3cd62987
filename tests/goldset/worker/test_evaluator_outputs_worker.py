"""Evaluator outputs uploaded on the evaluator's page are imported by a real Celery worker on
Redis and PostgreSQL: the request returns at once with a queued job, the worker streams the
file (more than one batch) and writes it all or nothing, a bad file ends rejected with its line
and field, and the stored files are deleted when the jobs end."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import EvaluatorImport, EvaluatorOutput, ImportJob, ImportStatus
from goldset.services.evaluators import create_evaluator
from tests.factories import (
    AnswerRecordFactory,
    DomainFactory,
    QuestionFactory,
    RunFactory,
    default_project,
)
from tests.goldset.worker.test_import_jobs_worker import wait_until

pytestmark = pytest.mark.worker


def test_evaluator_outputs_are_imported_by_the_worker_all_or_nothing(
    celery_worker_process, client_for, admin_user, settings
):
    judge = create_evaluator(project=default_project(), name="judge", version="1", kind="llm_judge")
    run, domain = RunFactory(), DomainFactory()
    records = [
        AnswerRecordFactory(run=run, question=QuestionFactory(domain=domain)) for _ in range(1100)
    ]
    lines = [
        {"record_id": r.public_id, "labels": {"grounding": "fully_grounded"}, "score": i / 1100}
        for i, r in enumerate(records)
    ]
    client = client_for(admin_user)
    url = reverse("evaluators:detail", args=[judge.pk])

    def upload(rows, name):
        text = "".join(json.dumps(r) + "\n" for r in rows)
        response = client.post(url, {"file": SimpleUploadedFile(name, text.encode())})
        assert response.status_code == 302
        job = ImportJob.objects.get(filename=name)
        path = Path(settings.IMPORT_STORAGE_DIR) / job.file_name
        assert job.file_name and path.exists()

        def finished():
            job.refresh_from_db()
            return job.finished

        wait_until(finished, timeout=120, what=f"the import of {name} to finish")
        wait_until(lambda: not path.exists(), timeout=30, what="the stored file to be deleted")
        return response, job

    # The last line (in the second batch) carries a NaN: nothing of the first batch is kept.
    last = json.dumps(lines[-1])[:-1] + ', "unsafe_probability": NaN}'
    text = ("".join(json.dumps(r) + "\n" for r in lines[:-1]) + last + "\n").encode()
    response = client.post(url, {"file": SimpleUploadedFile("bad.jsonl", text)})
    assert response.status_code == 302
    bad = ImportJob.objects.get(filename="bad.jsonl")
    wait_until(lambda: ImportJob.objects.get(pk=bad.pk).finished, timeout=120, what="bad.jsonl")
    bad.refresh_from_db()
    assert bad.status == ImportStatus.REJECTED
    assert bad.errors == [
        {
            "line": 1100,
            "field": "unsafe_probability",
            "message": "NaN is not allowed (expected a finite number)",
            "expected": "",
        }
    ]
    assert client.get(response.url).status_code == 422
    assert not EvaluatorOutput.objects.exists() and not EvaluatorImport.objects.exists()

    response, job = upload(lines, "good.jsonl")
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert job.worker.startswith(celery_worker_process.worker_name.split("@")[0])
    assert job.summary["records"] == 1100
    assert EvaluatorOutput.objects.filter(evaluator=judge).count() == 1100
    assert EvaluatorImport.objects.get().n_records == 1100
    page = client.get(response.url).content.decode()
    assert "every 1s" not in page and 'id="evaluator-link"' in page
