"""Heartbeat-watched jobs carry their own Celery time limit: the generic task limit
(CELERY_TASK_SOFT_TIME_LIMIT, 10 minutes) failed every import or scoring job that ran longer,
since a prefork worker enforces the limits each message carries (set by its publisher)."""

import pytest
from celery.app.task import extract_exec_options
from django.conf import settings

from goldset.services.agreement import RECOMPUTE_TASK
from goldset.services.import_jobs import RUN_IMPORT_TASK
from goldset.services.pcs_calibrations import CALIBRATION_TASK
from goldset.services.scoring_chunks import SCORE_CHUNK_TASK
from goldset.services.scoring_jobs import SCORE_RUN_TASK
from workbench.celery import app

# An agreement recompute of a large team outlasts the generic limit too (a full recompute);
# its liveness is the outbox message's heartbeat (tests/goldset/services/test_outbox_liveness.py).
JOB_TASKS = [RUN_IMPORT_TASK, SCORE_RUN_TASK, SCORE_CHUNK_TASK, CALIBRATION_TASK, RECOMPUTE_TASK]


@pytest.mark.parametrize("name", JOB_TASKS)
def test_a_job_task_is_sent_with_the_job_time_limit_not_the_generic_one(name):
    options = extract_exec_options(app.tasks[name])  # what apply_async puts in the message
    assert options["soft_time_limit"] == settings.JOB_TIME_LIMIT_SECONDS == 6 * 3600
    assert options["time_limit"] == settings.JOB_TIME_LIMIT_SECONDS + 60
    assert options["soft_time_limit"] > settings.CELERY_TASK_SOFT_TIME_LIMIT


def test_short_tasks_keep_the_generic_limit():
    options = extract_exec_options(app.tasks["goldset.reconcile"])
    assert options["soft_time_limit"] == settings.CELERY_TASK_SOFT_TIME_LIMIT
