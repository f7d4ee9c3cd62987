"""In Chromium, on the seeded demo: a lead follows an agreement alert to its pair's confusion
matrix and to the disagreeing items (and on to one item); an admin's Compare button stays
disabled until exactly two runs scored on the same gold version are ticked."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from goldset.models import JobStatus, ScoringJob

PASSWORD = "lead-dash-browser-1"


@pytest.fixture
def demo(transactional_db, tmp_path):
    call_command("seed_demo", password=PASSWORD, credentials_file=tmp_path / "c.txt")
    return {u.username: u for u in get_user_model().objects.all()}


# Queue offsets are seeded per annotator id, so which pairs share enough items for a κ alert
# depends on the users' ids: start the sequences afresh, as on a new installation.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_an_alert_leads_to_its_matrix_and_items_and_compare_needs_two_same_version_runs(
    demo, browser_login
):
    page = browser_login(demo["lead"], password=PASSWORD)
    page.click("nav >> text=Agreement")
    page.click("#alerts details[data-kind='gold_kappa_low'] > summary")  # the kind's alerts
    alert = page.locator("#alerts .alert[data-kind='gold_kappa_low']").first
    alert.locator("a.alert-matrix").click()
    page.wait_for_url("**/quality/agreement/?*a=*")
    first, second = page.input_value("#pair-a"), page.input_value("#pair-b")
    assert first and second and first != second
    assert "items rated by both on" in page.inner_text("#confusion")
    # the other list never offers the annotator chosen in this one
    assert page.locator(f"#pair-b option[value='{first}']").is_disabled()
    page.go_back()
    group = page.locator("#alerts details[data-kind='gold_kappa_low']")
    if group.get_attribute("open") is None:
        group.locator("summary").click()
    page.locator("#alerts .alert[data-kind='gold_kappa_low']").first.locator(
        "a.alert-items"
    ).click()
    page.wait_for_url("**/quality/disagreements/?*")
    rows = page.locator("#disagreements tbody tr td:first-child a")
    assert rows.count() >= 1
    rows.first.click()
    page.wait_for_load_state()
    assert page.locator("h1").count() == 1 and "/quality/" not in page.url

    succeeded = list(ScoringJob.objects.filter(status=JobStatus.SUCCEEDED).order_by("pk"))
    by_version = {}
    for job in succeeded:
        by_version.setdefault(job.version_id, []).append(job)
    same = next(jobs for jobs in by_version.values() if len(jobs) >= 2)
    admin = browser_login(demo["admin"], password=PASSWORD)
    admin.goto("/versions/jobs/")
    button = admin.locator("#compare-submit")
    assert button.is_disabled()
    admin.check(f"#compare-form input[value='{same[0].pk}']")
    assert button.is_disabled()
    admin.check(f"#compare-form input[value='{same[1].pk}']")
    assert button.is_enabled()
    other = [j for j in succeeded if j.version_id != same[0].version_id]
    if other:
        admin.check(f"#compare-form input[value='{other[0].pk}']")
        assert button.is_disabled()
        admin.uncheck(f"#compare-form input[value='{other[0].pk}']")
    button.click()
    admin.wait_for_url("**/versions/jobs/compare/?*")
    assert "Compare runs on v" in admin.inner_text("h1")
