"""A PCS calibration runs in a real Celery worker on Redis, reporting progress on its row."""

import pytest

from goldset.models import CalibrationStatus, PcsCalibration
from goldset.services.pcs_calibrations import start_pcs_calibration
from tests.factories import default_project
from tests.goldset.evaluators_helpers import build_gold_tier
from tests.goldset.worker.test_scoring_jobs_worker import wait_until

pytestmark = pytest.mark.worker


def test_a_real_worker_runs_the_grid_and_stores_the_selection(celery_worker_process):
    build_gold_tier(30)
    calibration = start_pcs_calibration(
        project=default_project(), name="worker"
    )  # autocommit: dispatched at once
    seen = set()

    def finished():
        row = PcsCalibration.objects.get(pk=calibration.pk)
        seen.add(row.progress)
        return row.status in (CalibrationStatus.SUCCEEDED, CalibrationStatus.FAILED)

    wait_until(finished, timeout=120, what="the calibration to finish in the worker")
    row = PcsCalibration.objects.get(pk=calibration.pk)
    assert row.status == CalibrationStatus.SUCCEEDED, row.error
    assert row.progress == 100 and row.selected["thresholds"]["pcs_threshold"] in (
        75.0,
        78.0,
        80.0,
        82.0,
        85.0,
    )
    assert row.result["answers"]["heldout"] > 0
