"""In Chromium: the freeze preview lists a gold triple pinned to superseded text with the
author's reason, leaves it out, and includes it only when the admin ticks the box; the frozen
version's page shows the agreement of the reviews behind it."""

import pytest

from tests.factories import BlockVersionFactory
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.browser]
REASON = "Customers signed the 2024 wording."


@pytest.fixture
def gold_pins(make_user):
    author = make_user(Role.ANNOTATOR, username="author")
    r1, r2 = make_user(Role.ANNOTATOR, username="rv1"), make_user(Role.ANNOTATOR, username="rv2")
    old = block_version()
    BlockVersionFactory(block=old.block, version=2, text="Newer wording.")
    triples = []
    for version, reason in ((block_version(), ""), (old, REASON)):
        triple = write_triple(author, version=version, superseded_reason=reason)
        review(r1, triple)
        review(r2, triple)
        triples.append(triple)
    return triples


def test_freeze_preview_lists_a_superseded_pin_and_leaves_it_out_until_confirmed(
    browser_login, admin_user, gold_pins, tmp_path
):
    current, reasoned = gold_pins
    page = browser_login(admin_user)
    page.goto("/versions/freeze/")
    page.click("#freeze-form button[value=preview]")
    listed = page.locator(f"#superseded-{reasoned.external_id}")
    listed.wait_for()
    assert REASON in listed.inner_text() and "v1 → v2" in listed.inner_text()
    assert "left out" in page.locator("#preview-superseded h3").inner_text()
    assert "Preview: 1 triple" in page.locator("#freeze-preview h2").inner_text()
    page.screenshot(path=str(tmp_path.parent / "freeze-superseded-preview.png"), full_page=True)

    page.check("#id_include_superseded")
    page.click("#freeze-form button[value=preview]")
    page.locator("#preview-superseded h3", has_text="included").wait_for()
    assert "Preview: 2 triples" in page.locator("#freeze-preview h2").inner_text()
    page.click("#freeze-button")
    page.wait_for_url("**/versions/v1/")
    section = page.locator("#version-superseded").inner_text()
    assert reasoned.external_id in section and "included" in section and REASON in section
    # issue 12 item 3: the agreement behind the version, before resolution
    reviews = page.locator("#agreement-triple-reviews").inner_text()
    assert "Confirm 4" in reviews and "undefined" in reviews
