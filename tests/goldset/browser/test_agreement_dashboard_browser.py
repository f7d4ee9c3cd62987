"""A lead opens the agreement dashboard in Chromium, sees the α chart and the alert for the demo's
low-agreement task type, and downloads the CSV with the figure behind it."""

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from goldset.rules.display import display
from goldset.selectors.agreement import list_agreement_alerts
from tests.goldset.project_support import default_project

PASSWORD = "dashboard-browser-1"


@pytest.fixture
def demo(transactional_db, tmp_path):
    call_command("seed_demo", password=PASSWORD, credentials_file=tmp_path / "c.txt")


def test_lead_sees_alpha_chart_low_agreement_alert_and_downloads_csv(demo, browser_login):
    low = [
        a for a in list_agreement_alerts(project=default_project()) if a.kind == "gold_alpha_low"
    ]
    assert low, "the demo must seed at least one task type with gold α below 0.75"
    protocol, axis, task_type = (low[0].numbers[k] for k in ("protocol", "axis", "task_type"))

    page = browser_login(get_user_model().objects.get(username="lead"), password=PASSWORD)
    page.click("nav >> text=Agreement")
    page.wait_for_url("**/quality/agreement/")
    shown = f"{display(protocol)} · {display(axis)}"  # the dashboard speaks in display names
    page.click(f"text={shown}")
    chart = page.locator("#alpha-chart svg.chart")
    assert chart.is_visible()
    assert f"Gold Krippendorff α by ISO week — {display(axis)}" in chart.get_attribute("aria-label")
    assert page.locator("#alpha-chart circle").count() >= 1
    # the charts come first, on the first screen; the alerts follow them, one line per kind
    # (worst kind first) until the lead opens one
    viewport = page.viewport_size["height"]
    chart_box = page.locator("#alpha-chart").bounding_box()
    alerts_box = page.locator("#alerts").bounding_box()
    print(f"\nalpha chart top {chart_box['y']:.0f} px, alerts top {alerts_box['y']:.0f} px")
    assert chart_box["y"] + 240 <= viewport  # the chart's title and most of its plot on screen 1
    assert chart_box["y"] + chart_box["height"] <= alerts_box["y"]
    if page.locator("#fleiss-chart").count():
        fleiss = page.locator("#fleiss-chart").bounding_box()
        assert fleiss["y"] + fleiss["height"] <= alerts_box["y"]
    kinds = page.eval_on_selector_all(
        "#alerts details.alert-group", "els => els.map(e => [e.dataset.kind, e.open])"
    )
    shown_kinds = [k for k, _ in kinds]
    assert shown_kinds[0] == "gold_alpha_low" and len(set(shown_kinds)) == len(shown_kinds)
    assert not any(is_open for _, is_open in kinds)
    count = page.inner_text("#alerts details[data-kind='gold_alpha_low'] .alert-count")
    assert int(count) == len(low)
    assert page.locator("#alerts .alert[data-kind='gold_alpha_low']").first.is_hidden()
    page.click("#alerts details[data-kind='gold_alpha_low'] > summary")
    alert = page.locator("#alerts .alert[data-kind='gold_alpha_low']", has_text=shown).first
    assert alert.is_visible()
    assert f"Gold α below 0.75 for task type {display(task_type)}" in alert.inner_text()

    with page.expect_download() as download_info:
        page.click("#alpha-chart >> text=CSV")
    rows = list(
        csv.DictReader(io.StringIO(open(download_info.value.path(), encoding="utf-8").read()))
    )
    figure = [
        r
        for r in rows
        if r["task_type"] == task_type
        and r["tier"] == "tier_b"
        and not r["week"]
        and not r["domain"]
    ]
    assert figure and float(figure[0]["value"]) < 0.75
    assert float(figure[0]["value"]) == pytest.approx(low[0].numbers["alpha"])
