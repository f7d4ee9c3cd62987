import pytest

from goldset.demo.seed import seed_demo
from goldset.models import AnswerRecord, CalibrationResult, RecordStatus, System

pytestmark = pytest.mark.django_db


# Queue offsets are seeded per annotator id, so the demo's outcome depends on the users' ids:
# start the sequences afresh so the demo is the same whichever tests ran before.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_demo_has_labels_in_every_state_from_three_systems():
    seed_demo(password="demo-pass-123")
    production = AnswerRecord.objects.filter(is_calibration=False)
    statuses = set(production.filter(tier="tier_b").values_list("status", flat=True))
    assert statuses == {
        RecordStatus.LABELING,
        RecordStatus.FINAL,
        RecordStatus.NEEDS_ADJUDICATION,
        RecordStatus.AUDIT,
        RecordStatus.ADJUDICATED,
    }
    assert System.objects.filter(runs__records__isnull=False).distinct().count() >= 3
    assert production.filter(question__conflict_flag=True).exists()
    assert production.filter(citations__block_version__effective_to__isnull=False).exists()
    assert CalibrationResult.objects.filter(passed=True).exists()
    assert CalibrationResult.objects.filter(passed=False, annotator__username="ann6").exists()
    again = seed_demo(password=None)
    assert again.credentials == {} and production.count() == 36
