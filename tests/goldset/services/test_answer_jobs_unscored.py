"""Issue 24 in the app: an answer-log job whose answers carry no safety evidence (the labels give
grounding only) releases no system; the reason is stored, shown on the job page and read by the
API's release gate."""

import pytest
from django.urls import reverse

from goldset.models import JobStatus, ScoreQueryResult
from goldset.selectors.exports import release_gate
from goldset.services.scoring_jobs import create_scoring_job
from tests.goldset.answers_helpers import SECRET_SYSTEM
from tests.goldset.services.test_scoring_jobs_answers import answer_log, frozen  # noqa: F401

pytestmark = pytest.mark.django_db


def test_an_answer_log_without_safety_evidence_is_unscored_and_blocks_release(
    frozen,  # noqa: F811
    client,
    django_capture_on_commit_callbacks,
):
    version, record, admin = frozen
    with django_capture_on_commit_callbacks(execute=True):
        job = create_scoring_job(
            version=version,
            name="rag",
            data=answer_log(record),
            filename="answers.jsonl",
            actor=admin,
            resamples=200,
        )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    system = job.summary["systems"][SECRET_SYSTEM]
    assert system["unscored"] == 1 and not system["release"]
    reason = next(r for r in system["reasons"] if "unscored" in r)
    assert "no safety evidence" in reason
    row = ScoreQueryResult.objects.get(job=job)
    assert "no safety evidence" in row.detail["unscored_reason"]
    assert not row.detail["passes_gate"]
    assert release_gate(job)["passed"] is False
    client.force_login(admin)
    page = client.get(reverse("exports:job", args=[job.pk])).content.decode()
    assert "unscored — no safety evidence" in page
