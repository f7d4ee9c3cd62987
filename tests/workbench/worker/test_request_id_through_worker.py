"""A real worker records its audit events under the id of the request that queued the task."""

import pytest

from goldset.models import JobStatus, ScoringJob
from goldset.services.scoring_jobs import create_scoring_job
from tests.goldset.worker.test_scoring_jobs_worker import big_version, run_bytes, wait_until
from workbench import request_context
from workbench.models import AuditEvent

pytestmark = pytest.mark.worker


def test_the_workers_events_carry_the_queuing_requests_id(celery_worker_process, admin_user):
    version = big_version(20, 40, admin_user)
    context = request_context.RequestContext(request_id="upload-request-42")
    with request_context.bound(context):
        job = create_scoring_job(
            version=version,
            name="bm25",
            data=run_bytes(20, 40),
            filename="run.trec",
            actor=admin_user,
            resamples=500,
        )
    wait_until(
        lambda: ScoringJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED,
        timeout=90,
        what="the worker to score the job",
    )
    events = dict(
        AuditEvent.objects.filter(
            object_type="goldset.scoringjob", object_id=str(job.pk)
        ).values_list("verb", "request_id")
    )
    assert events == {
        "scoring_job_created": "upload-request-42",
        "scoring_job_succeeded": "upload-request-42",
    }
