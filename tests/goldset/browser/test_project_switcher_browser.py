"""The project menu in Chromium, by keyboard only (issue 27): Tab reaches the switcher, Enter
opens it (a native ``<details>``, no script), Tab walks its links — the person's projects, then
the projects home — and Enter on the other project opens that project's home."""

import re

import pytest

from goldset.models import Project
from goldset.services.projects import grant_role
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser]


def test_the_project_menu_works_from_the_keyboard(transactional_db, browser_login):
    alpha = Project.objects.create(name="Alpha bot", slug="alpha-bot")
    zebra = Project.objects.create(name="Zebra Secret", slug="zebra-secret")
    person = UserFactory(username="two-projects")
    for project in (alpha, zebra):
        grant_role(project=project, user=person, role="annotator")
    page = browser_login(person)
    page.goto("/p/alpha-bot/corpus/")
    menu = page.locator("#project-menu")
    assert not menu.is_visible()

    for _ in range(6):  # skip link, brand, then the switcher
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('#project-switch > summary')"):
            break
    assert page.evaluate("document.activeElement.matches('#project-switch > summary')")
    page.keyboard.press("Enter")
    menu.wait_for(state="visible")
    assert page.locator("#project-switch").get_attribute("open") is not None
    assert menu.locator("a[aria-current=true]").inner_text().startswith("Alpha bot")

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent").startswith("Alpha bot")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Zebra Secret"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/p/zebra-secret/$"))
    summary = page.locator("#project-switch > summary").inner_text()
    assert summary.startswith("Zebra Secret")
