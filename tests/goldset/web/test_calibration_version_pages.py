"""Issue 12 item 4 in the pages: the lead's set page shows sealed versions and drafts and lets a
lead label a draft added after annotators started; a newcomer is offered the newest ready
version; every role gets what it should."""

import pytest
from django.urls import reverse

from goldset.models import CalibrationItem, CalibrationSet, LabelAssignment
from goldset.services.calibration import set_reference_label, start_calibration
from tests.factories import CalibrationItemFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db

REFS = [
    ("acceptable", "fully_grounded", False),
    ("acceptable", "fully_grounded", False),
    ("unacceptable", "misgrounded", False),
    ("unacceptable", "ungrounded", True),
]


@pytest.fixture
def started(lead):
    """A supply-chain set version 1 that one annotator started, plus one draft added since."""
    domain = DomainFactory(slug="supply_chain")
    items = [CalibrationItemFactory(calibration_set__domain=domain) for _ in REFS]
    for item, (acc, grounding, severe) in zip(items, REFS, strict=True):
        set_reference_label(
            lead=lead,
            item=item,
            acceptability=acc,
            grounding=grounding,
            severe_safety=severe,
            project=default_project(),
        )
    start_calibration(
        annotator=UserFactory(role=Role.ANNOTATOR, username="early"),
        domain=domain,
        project=default_project(),
    )
    draft = CalibrationItemFactory(calibration_set=CalibrationSet.objects.get(domain=domain))
    return domain, items, draft


def test_lead_sees_the_sealed_version_and_labels_the_draft(client_for, lead, started):
    _, items, draft = started
    boss = client_for(lead)
    set_url = reverse("answers:calibration_set", args=["supply_chain"])
    html = boss.get(set_url).content.decode()
    assert "gets <strong>version 1</strong> (4 items)" in html
    assert 'id="drafts-waiting"' in html and "1 item(s) have no reference label yet" in html
    assert "draft" in html and "v1 <span" in html
    frozen = reverse(
        "answers:calibration_reference", args=["supply_chain", items[0].record.public_id]
    )
    response = boss.post(
        frozen, {"acceptability": "acceptable", "grounding": "ungrounded", "severe_safety": "no"}
    )
    assert response.status_code == 200 and "frozen" in response.content.decode()
    url = reverse("answers:calibration_reference", args=["supply_chain", draft.record.public_id])
    response = boss.post(
        url, {"acceptability": "unacceptable", "grounding": "misgrounded", "severe_safety": "yes"}
    )
    assert response.status_code == 302
    html = boss.get(set_url).content.decode()
    assert "gets <strong>version 2</strong> (5 items; starting seals the 1 draft item" in html
    status = boss.get(reverse("answers:calibration_status")).content.decode()
    assert "<td>v1</td><td>1</td>" in status


def test_a_newcomer_is_offered_the_newest_ready_version_and_takes_it(client_for, lead, started):
    _, _, draft = started
    newcomer = UserFactory(role=Role.ANNOTATOR, username="newcomer")
    c = client_for(newcomer)
    assert (
        "Version 1 of the set: 4 items." in c.get(reverse("answers:calibration")).content.decode()
    )
    set_reference_label(
        lead=lead,
        item=draft,
        acceptability="acceptable",
        grounding="fully_grounded",
        severe_safety=False,
        project=default_project(),
    )
    assert (
        "Version 2 of the set: 5 items." in c.get(reverse("answers:calibration")).content.decode()
    )
    response = c.post(reverse("answers:calibration_start", args=["supply_chain"]))
    assert response.status_code == 302
    assert LabelAssignment.objects.filter(annotator=newcomer, is_calibration=True).count() == 5
    assert CalibrationItem.objects.get(pk=draft.pk).set_version == 2


def test_calibration_set_and_status_pages_answer_each_role(
    client, client_for, annotator, lead, admin_user, started
):
    for url in (
        reverse("answers:calibration_set", args=["supply_chain"]),
        reverse("answers:calibration_status"),
    ):
        assert client.get(url).status_code == 302
        assert client_for(annotator).get(url).status_code == 403
        assert client_for(lead).get(url).status_code == 200
        assert client_for(admin_user).get(url).status_code == 200
    mine = reverse("answers:calibration")
    assert client.get(mine).status_code == 302
    assert client_for(annotator).get(mine).status_code == 200
    assert client_for(lead).get(mine).status_code == 403


@pytest.mark.parametrize("n", [1, 8])
def test_annotator_calibration_page_query_count_is_constant(
    client_for, annotator, lead, n, django_assert_max_num_queries
):
    for d in range(n):
        domain = DomainFactory(slug=f"domain-{d}")
        for _ in range(4):
            CalibrationItemFactory(calibration_set__domain=domain)
    c = client_for(annotator)
    with django_assert_max_num_queries(8):
        response = c.get(reverse("answers:calibration"))
    assert len(response.context["rows"]) == n
