"""The promotion, runs, export, customers and calibration status pages after issue 17: the same
access per role as before (a malformed page cursor is 404 only for those who may see the page),
keyset pages that walk the whole list once in order, and the figures the maintained counters
show."""

import html
import re
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from goldset.models import ItemSkip, RecordStatus, Source, TripleState
from goldset.views import answers_admin, answers_lead, curation_customers, promotion
from tests.factories import (
    AnswerRecordFactory,
    CustomerFactory,
    CustomerPermissionFactory,
    RunFactory,
    UserFactory,
)
from tests.goldset.curation_support import write_triple
from tests.goldset.promotion_support import set_rules, triage_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

PAGES = {
    "promotion:index": {"lead", "admin_user"},
    "answers:calibration_status": {"lead", "admin_user"},
    "answers:runs": {"admin_user"},
    "answers:export": {"admin_user"},
    "curation:customers": {"admin_user"},
}
KEYSET_PAGES = [name for name in PAGES if name != "answers:export"]


@pytest.mark.parametrize("name", PAGES)
def test_each_role_gets_what_it_got_before(request, client, client_for, name):
    url = reverse(name)
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    for fixture in ("annotator", "lead", "admin_user"):
        user = request.getfixturevalue(fixture)
        expected = 200 if fixture in PAGES[name] else 403
        assert client_for(user).get(url).status_code == expected, (fixture, name)


@pytest.mark.parametrize("name", KEYSET_PAGES)
def test_a_malformed_cursor_is_404_for_those_allowed_and_403_for_the_others(
    request, client, client_for, name
):
    url = reverse(name) + "?after=%21%21not-a-cursor"
    assert client.get(url).status_code == 302
    for fixture in ("annotator", "lead", "admin_user"):
        user = request.getfixturevalue(fixture)
        expected = 404 if fixture in PAGES[name] else 403
        assert client_for(user).get(url).status_code == expected, (fixture, name)


def _pages(c, name, **query) -> list[str]:
    """Every page's HTML, from the first, following the "Next" links."""
    base = reverse(name)
    url = base + (f"?{urlencode(query)}" if query else "")
    pages = []
    while url:
        response = c.get(url)
        assert response.status_code == 200
        pages.append(response.content.decode())
        found = re.search(r'href="(\?[^"]*)" rel="next"', pages[-1])
        url = base + html.unescape(found.group(1)) if found else None
    return pages


def test_customers_walk_by_name_with_their_triple_counts(client_for, admin_user, monkeypatch):
    monkeypatch.setattr(curation_customers, "PAGE_SIZE", 2)
    author = UserFactory(role=Role.ANNOTATOR, username="cust-writer")
    acme = CustomerPermissionFactory(customer__slug="acme", customer__name="Acme").customer
    for name in ("Delta", "Beta", "Cobalt"):
        CustomerFactory(slug=name.lower(), name=name)
    ours = [
        write_triple(author, source=Source.CUSTOMER_PERMISSIONED, customer=acme) for _ in range(3)
    ]
    ours[0].state, ours[0].resolution = TripleState.GOLD, "consensus"
    ours[0].save(update_fields=["state", "resolution"])
    pages = _pages(client_for(admin_user), "curation:customers")
    assert len(pages) == 2
    shown = [re.findall(r'<a href="/[^"]*customers/([a-z]+)/">', page) for page in pages]
    assert shown == [["acme", "beta"], ["cobalt", "delta"]]
    row = pages[0].split("acme</code>")[1].split("</tr>")[0]
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["3", "1"]
    assert 'rel="first"' in pages[1]


def test_runs_walk_newest_first_with_their_record_counts(client_for, admin_user, monkeypatch):
    monkeypatch.setattr(answers_admin, "PAGE_SIZE", 2)
    runs = [RunFactory(run_id=f"run-{i}") for i in range(3)]
    statuses = [
        RecordStatus.LABELING,
        RecordStatus.FINAL,
        RecordStatus.ADJUDICATED,
        RecordStatus.NEEDS_ADJUDICATION,
        RecordStatus.AUDIT,
    ]
    for status in statuses:
        AnswerRecordFactory(run=runs[0], status=status)
    AnswerRecordFactory(run=runs[0], is_calibration=True)
    pages = _pages(client_for(admin_user), "answers:runs")
    shown = [re.findall(r"<td>(run-\d)</td>", page) for page in pages]
    assert shown == [["run-2", "run-1"], ["run-0"]]
    row = pages[1].split("<td>run-0</td>")[1].split("</tr>")[0]
    # every record of the run, final or adjudicated, with a lead (as the grouped count showed)
    assert re.findall(r"<td>(\d+)</td>", row) == ["6", "2", "2"]
    assert "Collecting labels 1" in pages[0] and "Final 1" in pages[0]


def test_calibration_status_walks_annotators_with_their_skips(client_for, lead, monkeypatch):
    monkeypatch.setattr(answers_lead, "PAGE_SIZE", 2)
    people = [UserFactory(role=Role.ANNOTATOR, username=f"ann-{i}") for i in range(3)]
    UserFactory(role=Role.LEAD, username="ann-lead")  # not an annotator: not listed
    for record in (AnswerRecordFactory(), AnswerRecordFactory()):
        ItemSkip.objects.create(record=record, annotator=people[2], reason="unclear")
    pages = _pages(client_for(lead), "answers:calibration_status")
    shown = [re.findall(r"<tr><td>(ann-[^<]+)</td>", page) for page in pages]
    assert shown == [["ann-0", "ann-1"], ["ann-2"]]
    row = pages[1].split("<td>ann-2</td>")[1].split("</tr>")[0]
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["2"]


def test_promotion_walks_the_promotable_cases_by_id(
    client_for, lead, admin_user, annotator, monkeypatch
):
    monkeypatch.setattr(promotion, "PAGE_SIZE", 2)
    set_rules(admin_user)
    cases = [triage_triple(annotator, external_id=f"promo-{i}") for i in range(3)]
    pages = _pages(client_for(lead), "promotion:index", kind="triple")
    shown = [re.findall(r">(promo-\d)</a>", page) for page in pages]
    assert shown == [["promo-0", "promo-1"], ["promo-2"]]
    # the batch is the whole matching set on every page, whichever page is shown
    assert all("Promote all 3 matching" in page for page in pages)
    assert [c.external_id for c in cases] == ["promo-0", "promo-1", "promo-2"]
