"""Each demo role logs in through the real form in Chromium, reaches its home page and the
corpus browser, and sees a block-version diff."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from goldset.models import BlockVersion

DEMO_PASSWORD = "demo-browser-pass-1"


@pytest.fixture
def demo(transactional_db, tmp_path):
    call_command("seed_demo", password=DEMO_PASSWORD, credentials_file=tmp_path / "creds.txt")


@pytest.mark.parametrize(
    "username,section",
    [
        ("author", "annotator-actions"),
        ("ann1", "annotator-actions"),
        ("lead", "lead-actions"),
        ("admin", "admin-actions"),
    ],
)
def test_demo_role_logs_in_reaches_home_and_corpus_and_sees_a_version_diff(
    demo, browser_login, live_server, username, section
):
    user = get_user_model().objects.get(username=username)
    page = browser_login(user, password=DEMO_PASSWORD)
    if page.locator("#project-cards").count():  # in two projects (or every one): Home lists them
        page.click("#project-default h2 a")
        page.wait_for_url("**/p/default/")
    assert page.locator(f"#{section}").is_visible()
    assert page.locator(".who").inner_text().startswith(username)

    page.click("nav >> text=Corpus")
    page.wait_for_url("**/corpus/")
    assert page.locator("table.table tbody tr").count() == 21  # the built-in demo corpus, one page
    page.select_option("#domain", "supply_chain")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/corpus/?domain=supply_chain*")
    assert page.locator("table.table tbody tr").count() == 4
    page.click("text=doc-sc-routing")
    page.click("text=blk-sc-routing-02")

    v2 = BlockVersion.objects.get(block__block_id="blk-sc-routing-02", version=2)
    diff = page.locator("#version-diff")
    assert "Changes from v1 to v2" in diff.inner_text()
    assert "budget-control approval" in diff.locator("ins").all_inner_texts()[-1] or any(
        "budget-control" in t for t in diff.locator("ins").all_inner_texts()
    )
    assert diff.locator("del").count() >= 1
    assert page.locator("#v2").inner_text().count(v2.effective_from.isoformat()) == 1


def test_an_annotator_is_refused_the_admin_import_page_in_the_browser(
    demo, browser_login, live_server
):
    page = browser_login(get_user_model().objects.get(username="ann2"), password=DEMO_PASSWORD)
    response = page.goto("/corpus/import/")
    assert response.status == 403
