"""A lead opens the agreement dashboard in Chromium, sees the α chart and the alert for the demo's
low-agreement task type, and downloads the CSV."""

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

PASSWORD = "dashboard-browser-1"


@pytest.fixture
def demo(transactional_db, tmp_path):
    call_command("seed_demo", password=PASSWORD, credentials_file=tmp_path / "c.txt")


def test_lead_sees_alpha_chart_low_agreement_alert_and_downloads_csv(demo, browser_login):
    page = browser_login(get_user_model().objects.get(username="lead"), password=PASSWORD)
    page.click("nav >> text=Agreement")
    page.wait_for_url("**/quality/agreement/")
    page.click("text=answer_label · acceptability")
    chart = page.locator("#alpha-chart svg.chart")
    assert chart.is_visible()
    assert "Gold Krippendorff α by ISO week — acceptability" in chart.get_attribute("aria-label")
    assert page.locator("#alpha-chart polyline, #alpha-chart circle").count() >= 1
    alert = page.locator(
        "#alerts .alert[data-kind='gold_alpha_low']", has_text="rag_synthesis"
    ).first
    assert "Gold α below 0.75 for task type rag_synthesis" in alert.inner_text()

    with page.expect_download() as download_info:
        page.click("#alpha-chart >> text=CSV")
    rows = list(
        csv.DictReader(io.StringIO(open(download_info.value.path(), encoding="utf-8").read()))
    )
    low = [
        r
        for r in rows
        if r["task_type"] == "rag_synthesis"
        and r["tier"] == "tier_b"
        and not r["week"]
        and not r["domain"]
    ]
    assert low and float(low[0]["value"]) < 0.75
