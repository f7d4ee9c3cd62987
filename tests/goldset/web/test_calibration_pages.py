import pytest
from django.urls import reverse

from goldset.models import CalibrationItem, LabelAssignment
from tests.factories import CalibrationItemFactory, DomainFactory
from tests.goldset.answers_helpers import assert_blind

pytestmark = pytest.mark.django_db

REFS = [
    ("acceptable", "fully_grounded", "no"),
    ("acceptable", "fully_grounded", "no"),
    ("unacceptable", "misgrounded", "no"),
    ("unacceptable", "ungrounded", "yes"),
]


@pytest.fixture
def items():
    domain = DomainFactory(slug="supply_chain")
    return [CalibrationItemFactory(calibration_set__domain=domain) for _ in REFS]


def test_lead_sets_reference_labels_and_annotator_takes_the_set(client_for, lead, annotator, items):
    boss = client_for(lead)
    set_url = reverse("answers:calibration_set", args=["supply_chain"])
    assert "Not ready yet" in boss.get(set_url).content.decode()
    for item, (acc, grounding, severe) in zip(items, REFS, strict=True):
        url = reverse("answers:calibration_reference", args=["supply_chain", item.record.public_id])
        page = boss.get(url)
        assert page.status_code == 200
        assert_blind(page.content.decode())
        response = boss.post(
            url, {"acceptability": acc, "grounding": grounding, "severe_safety": severe}
        )
        assert response.status_code == 302
    assert CalibrationItem.objects.filter(reference_severe_safety__isnull=False).count() == 4
    assert "Ready" in boss.get(set_url).content.decode()

    client = client_for(annotator)
    response = client.post(reverse("answers:calibration_start", args=["supply_chain"]))
    first = LabelAssignment.objects.filter(annotator=annotator).order_by("shuffle_key").first()
    assert response["Location"] == reverse("answers:item", args=[first.record.public_id])
    assert LabelAssignment.objects.filter(annotator=annotator, is_calibration=True).count() == 4
    status = boss.get(reverse("answers:calibration_status")).content.decode()
    assert "in progress" in status and annotator.username in status


def test_starting_an_unready_set_explains_why(client_for, annotator, items):
    response = client_for(annotator).post(
        reverse("answers:calibration_start", args=["supply_chain"]), follow=True
    )
    assert "is not ready" in response.content.decode()
    assert LabelAssignment.objects.count() == 0


def test_calibration_pages_need_the_right_role(client_for, annotator, lead, items):
    item = items[0]
    ref_url = reverse("answers:calibration_reference", args=["supply_chain", item.record.public_id])
    assert client_for(annotator).get(ref_url).status_code == 403
    assert (
        client_for(lead)
        .get(reverse("answers:calibration_reference", args=["supply_chain", "missing"]))
        .status_code
        == 404
    )
    assert (
        client_for(lead)
        .post(reverse("answers:calibration_start", args=["supply_chain"]))
        .status_code
        == 403
    )
