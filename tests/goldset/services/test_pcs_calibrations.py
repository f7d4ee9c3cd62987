"""PCS calibration jobs: queued on commit, run by the task with progress, idempotent, versioned."""

import pytest

from goldset.exceptions import GoldsetError
from goldset.models import CalibrationStatus, PcsCalibration
from goldset.services.pcs_calibrations import (
    paraphrase_group,
    probe_config_for,
    run_pcs_calibration,
    start_pcs_calibration,
)
from goldset.tasks import run_pcs_calibration_task
from scoring.probe import DEFAULT_CONFIG
from tests.factories import default_project
from tests.goldset.evaluators_helpers import build_gold_tier

pytestmark = pytest.mark.django_db


def test_calibration_runs_after_commit_and_stores_a_selected_configuration(
    django_capture_on_commit_callbacks,
):
    build_gold_tier(30)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        calibration = start_pcs_calibration(project=default_project(), name="q2")
    assert len(callbacks) == 1
    calibration.refresh_from_db()
    assert calibration.status == CalibrationStatus.SUCCEEDED, calibration.error
    assert calibration.progress == 100 and calibration.version == 1
    assert abs(sum(calibration.selected["family_weights"]) - 1) < 1e-9
    result = calibration.result
    assert set(result["split_counts"]) == {"fit", "calibration", "heldout"}
    assert sum(result["split_counts"].values()) == 30
    assert result["heldout"]["n"] > 0 and result["seeds"]["split"] == 3107
    config = probe_config_for(calibration)
    assert config.family_weights == tuple(calibration.selected["family_weights"])
    assert config.pcs_threshold == calibration.selected["thresholds"]["pcs_threshold"]


def test_versions_count_per_name_and_a_redelivered_task_does_nothing():
    build_gold_tier(20)
    first = start_pcs_calibration(project=default_project(), name="q2")
    second = start_pcs_calibration(project=default_project(), name="q2")
    other = start_pcs_calibration(project=default_project(), name="q3")
    assert (first.version, second.version, other.version) == (1, 2, 1)
    assert run_pcs_calibration_task(first.pk) == CalibrationStatus.SUCCEEDED
    done = PcsCalibration.objects.get(pk=first.pk)
    assert run_pcs_calibration_task(first.pk) == CalibrationStatus.SUCCEEDED
    again = PcsCalibration.objects.get(pk=first.pk)
    assert again.finished_at == done.finished_at and again.result == done.result


def test_calibration_without_settled_labels_fails_with_the_reason():
    calibration = start_pcs_calibration(project=default_project(), name="empty")
    run_pcs_calibration(calibration_id=calibration.pk)
    calibration.refresh_from_db()
    assert calibration.status == CalibrationStatus.FAILED
    assert "no answer record has a settled label" in calibration.error
    with pytest.raises(GoldsetError):
        probe_config_for(calibration)


def test_defaults_stay_the_default_and_bad_names_are_refused():
    assert probe_config_for(None) is DEFAULT_CONFIG
    with pytest.raises(GoldsetError):
        start_pcs_calibration(project=default_project(), name="bad name!")


def test_paraphrase_group_strips_the_a3_variant_suffix():
    assert paraphrase_group("sc-route-0184-p2") == "sc-route-0184"
    assert paraphrase_group("sc-route-0184-a1") == "sc-route-0184"
    assert paraphrase_group("sc-route-0184") == "sc-route-0184"
