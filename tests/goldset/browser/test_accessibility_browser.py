"""axe-core (vendored in tests/vendor/axe-core, nothing fetched) over the main pages of every
role of the demo, in Chromium: no serious or critical violation, and every page starts with a
skip link to its main content."""

import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = [pytest.mark.browser]

AXE = Path(__file__).resolve().parents[2] / "vendor" / "axe-core" / "axe.min.js"
PASSWORD = "axe-browser-pass-1"
SEVERE = ("serious", "critical")


@pytest.fixture
def demo(transactional_db, tmp_path):
    call_command("seed_demo", password=PASSWORD, credentials_file=tmp_path / "creds.txt")


def axe_violations(page) -> list[dict]:
    """Run axe-core on the page as it is; the serious and critical violations, each with the
    page, the rule and the first nodes' targets."""
    # Evaluated through the DevTools protocol: the pages' CSP (nonce scripts only) stays on.
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")
    result = page.evaluate(
        "async () => { const r = await axe.run(document, {resultTypes: ['violations']});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})); }"
    )
    return [dict(v, page=page.url) for v in result if v["impact"] in SEVERE]


def _nav_pages(page) -> list[str]:
    """The role's own pages: every link of the main navigation (same site, not a download)."""
    hrefs = page.eval_on_selector_all("nav[aria-label=Main] a", "els => els.map(e => e.href)")
    return list(dict.fromkeys(h for h in hrefs if h.startswith(page.url.split("/", 3)[0])))


def _check(page, url, found, seen):
    page.goto(url)
    seen.append(page.url)
    skip = page.locator("a.skip-link").first
    assert skip.get_attribute("href") == "#main", page.url
    assert page.locator("#main").count() == 1, page.url
    found.extend(axe_violations(page))


@pytest.mark.parametrize("username", ["ann1", "author", "lead", "admin"])
def test_main_pages_of_each_role_have_no_serious_axe_violation(demo, browser_login, username):
    page = browser_login(get_user_model().objects.get(username=username), password=PASSWORD)
    found, seen = [], []
    _check(page, "/", found, seen)
    for url in _nav_pages(page):
        _check(page, url, found, seen)
    # the decision pages each role works on, opened the way a person opens them
    if username in ("ann1", "author"):
        page.goto("/answers/")
        if page.locator("#claim-next").count():
            page.click("#claim-next")
            page.wait_for_url(re.compile(r"/answers/"))
            seen.append(page.url)
            found.extend(axe_violations(page))
        page.goto("/curation/reviews/")
        page.click("#next-review")
        page.wait_for_load_state()
        seen.append(page.url)
        found.extend(axe_violations(page))
    if username == "lead":
        page.goto("/answers/adjudication/")
        first = page.locator("#adjudication-items tbody a").first
        if first.count():
            first.click()
            page.wait_for_load_state()
            seen.append(page.url)
            found.extend(axe_violations(page))
    print(f"\naxe over {len(seen)} pages for {username}: {json.dumps(found, indent=1)}")
    assert len(seen) >= 5
    assert found == []
