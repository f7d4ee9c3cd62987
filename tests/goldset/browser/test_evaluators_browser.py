"""In Chromium: a lead opens the evaluator report (evaluators pseudonymised); an admin writes a
release report for the demo runs and downloads its self-contained HTML."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

PASSWORD = "evaluators-browser-1"


@pytest.fixture
def demo(transactional_db, tmp_path, settings):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 500
    call_command("seed_demo", password=PASSWORD, credentials_file=tmp_path / "c.txt")


def test_lead_opens_the_evaluator_report(demo, browser_login):
    page = browser_login(get_user_model().objects.get(username="lead"), password=PASSWORD)
    page.click("nav >> text=Evaluators")
    page.wait_for_url("**/evaluators/report/")
    table = page.locator("#evaluator-table")
    assert table.is_visible()
    assert table.locator("th[scope=row]", has_text="Evaluator A").count() == 1
    assert table.locator("th[scope=row]", has_text="Evaluator B").count() == 1
    body = page.content()
    assert "judge-aligned" not in body and "judge-lenient" not in body
    gating = page.locator("#gating")
    assert gating.locator("text=not trusted").count() >= 1
    page.click("#recompute")
    page.wait_for_url("**/evaluators/report/")
    assert page.locator("#evaluator-table").is_visible()


def test_admin_downloads_the_release_report(demo, browser_login, tmp_path):
    page = browser_login(get_user_model().objects.get(username="admin"), password=PASSWORD)
    page.click("nav >> text=Release reports")
    page.wait_for_url("**/evaluators/release/")
    boxes = page.locator("#release-form input[name=runs]")
    for i in range(boxes.count()):
        boxes.nth(i).check()
    page.click("#release-form button[type=submit]")
    page.wait_for_url("**/evaluators/release/*/")
    assert page.locator("#table-5 tbody tr").count() == 3
    assert page.locator("svg").count() >= 2
    with page.expect_download() as info:
        page.click("#download-html")
    target = tmp_path / "report.html"
    info.value.save_as(target)
    html = target.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") == 2
    assert "Table 9" in html and "8821" in html
