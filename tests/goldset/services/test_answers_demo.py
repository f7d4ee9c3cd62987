import pytest
from django.db import connection

from goldset.demo.seed import seed_demo
from goldset.models import AnswerRecord, CalibrationResult, RecordStatus, System

pytestmark = pytest.mark.django_db


# Queue offsets are seeded per annotator id, so the demo's outcome depends on the users' ids:
# start the sequences afresh so the demo is the same whichever tests ran before.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_demo_has_labels_in_every_state_from_three_systems():
    _after_the_projects_kept_by_the_reset()
    seed_demo(password="demo-pass-123")
    production = AnswerRecord.objects.filter(is_calibration=False, project__slug="default")
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


def _after_the_projects_kept_by_the_reset():
    """``reset_sequences`` restarts every sequence, the projects' too, while the default project
    made by the migration may still be there: the demo's second project must not take its id."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('goldset_project', 'id'), "
                "GREATEST((SELECT MAX(id) FROM goldset_project), 1))"
            )
