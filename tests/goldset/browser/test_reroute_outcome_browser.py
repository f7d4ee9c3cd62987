"""In Chromium: the re-route preview names a TRIAGE case that becomes gold at once; applying
does it."""

import pytest

from goldset.models import TripleState
from tests.goldset.promotion_support import review_directly, reviewers, set_rules, triage_triple

pytestmark = [pytest.mark.browser]


def test_admin_sees_which_cases_resolve_at_once_and_applies(browser_login, admin_user, annotator):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    triple = triage_triple(annotator, task_type="factual_qa")
    review_directly(reviewers(1)[0], triple, "confirm")
    set_rules(admin_user)
    page = browser_login(admin_user)
    page.goto("/routing/reroute/")
    item = page.locator(f"#resolves-triple-{triple.pk}")
    assert triple.external_id in item.inner_text()
    assert "becomes gold at once" in item.inner_text()
    page.click("#reroute-confirm button[type=submit]")
    page.locator("text=Re-routed 1 open case(s).").wait_for()
    triple.refresh_from_db()
    assert triple.state == TripleState.GOLD
