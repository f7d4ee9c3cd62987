"""In Chromium: after annotators started a calibration set, a lead labels an item added since,
and a newcomer is offered — and starts — the new version that includes it."""

import pytest

from goldset.models import CalibrationSet, LabelAssignment
from goldset.services.calibration import set_reference_label, start_calibration
from tests.factories import CalibrationItemFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import default_project
from workbench.roles import Role

pytestmark = [pytest.mark.browser]

REFS = [
    ("acceptable", "fully_grounded", False),
    ("acceptable", "fully_grounded", False),
    ("unacceptable", "misgrounded", False),
    ("unacceptable", "ungrounded", True),
]


def test_lead_labels_a_late_item_and_a_newcomer_takes_version_2(browser_login, lead):
    domain = DomainFactory(slug="supply_chain")
    for acc, grounding, severe in REFS:
        item = CalibrationItemFactory(calibration_set__domain=domain)
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

    boss = browser_login(lead)
    boss.goto("/answers/calibration-sets/supply_chain/")
    assert "version 1" in boss.locator("#set-ready").inner_text()
    boss.click(f"text={draft.record.public_id}")
    boss.select_option("#id_acceptability", "unacceptable")
    boss.select_option("#id_grounding", "misgrounded")
    boss.select_option("#id_severe_safety", "yes")
    boss.click("#reference-form button[type=submit]")
    boss.wait_for_url("**/calibration-sets/supply_chain/")
    assert "version 2" in boss.locator("#set-ready").inner_text()

    newcomer = UserFactory(role=Role.ANNOTATOR, username="newcomer")
    page = browser_login(newcomer)
    page.goto("/answers/calibration/")
    offer = page.locator("#calibration-supply_chain .calibration-offer").inner_text()
    assert "Version 2 of the set: 5 items." in offer
    page.click("#calibration-supply_chain button[type=submit]")
    page.wait_for_url("**/answers/items/**")
    assert LabelAssignment.objects.filter(annotator=newcomer, is_calibration=True).count() == 5
