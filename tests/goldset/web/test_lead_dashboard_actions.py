"""Issue 14, the lead's dashboard and the irreversible actions: CI whiskers for single points, n
on every bar, integers as integers, display names, alerts linking to their pair's confusion matrix
and to the disagreeing items, the matrix never on one annotator twice; Drop and Retire confirm and
require a reason; an invalid comparison answers with a message; the 403 page names the role."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from goldset.charts import BarChart, LineChart, Series
from goldset.exceptions import GoldsetError
from goldset.models import Project, TripleState
from goldset.rules.display import DISPLAY, display
from goldset.selectors.agreement import list_agreement_alerts
from goldset.selectors.disagreements import link_alerts
from goldset.services.resolution import mark_superseded_pins, retire_triple
from tests.factories import AnswerRecordFactory, BlockVersionFactory, DomainFactory
from tests.goldset.answers_helpers import BAD, claim_and_label, qualified_annotators
from tests.goldset.curation_support import write_triple
from tests.goldset.project_support import default_project
from tests.goldset.web.test_curation_pages import _to_discussion
from tests.workbench.web.test_display_crawl import crawl_problems
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_a_single_week_shows_its_confidence_interval_as_a_whisker():
    chart = LineChart("α", ["2026-W48"], [Series("all", [("2026-W48", 0.7, 0.4, 0.9)])])
    svg = chart.svg()
    assert svg.count('class="whisker"') == 1 and "95 % CI [0.400, 0.900]" in svg
    assert "<polygon" not in svg  # the band needs two points; the whisker does not


def test_bars_carry_their_n_and_counts_print_as_integers():
    svg = BarChart("Volume", [("Ann One", 17.0, 17), ("Ann Two", 3.0, 3)], percent=False).svg()
    assert "17 (n = 17)" in svg and "17.0" not in svg and "3 (n = 3)" in svg
    rates = BarChart("Agreement", [("Ann One", 1.0, 3)]).svg()
    assert "100% (n = 3)" in rates


def test_one_mapping_names_every_code():
    assert display("tier_b") == "GOLD (tier B)" and display("answer_not_entailed") == (
        "Answer not entailed"
    )
    assert (
        display(True) == "Yes"
        and display(False) == "No"
        and display("pending_review") == ("Pending review")
    )
    assert display("adjudication_lead") == "Adjudication lead"
    assert display("free text stays") == "free text stays"
    assert all(label and label != code for code, label in DISPLAY.items() if "_" in code)


@pytest.fixture
def demo(tmp_path, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # agreement and scoring tasks too
        call_command("seed_demo", password="lead-dash-pass-1", credentials_file=tmp_path / "c.txt")
    return {u.username: u for u in get_user_model().objects.all()}


@pytest.fixture
def no_projects_yet():
    """A new installation's projects table: the sequences restart at 1, so a default project
    the migrations left behind (when no transactional test flushed the database before this
    one) would hold the id the demo's first new project is given."""
    Project.objects.all().delete()


# Queue offsets are seeded per annotator id, so which pairs share enough items for a κ alert
# depends on the users' ids: start the sequences afresh, as on a new installation.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_alerts_lead_to_their_pairs_matrix_and_items_by_display_name(
    no_projects_yet, client, client_for, demo
):
    """One seeded demo for the dashboard, the matrix's pair check, the items page's roles and the
    crawl of every role's pages for raw codes, reprs and internal references."""
    leaks = crawl_problems()
    assert not leaks, "\n".join(f"{k}: {v}" for k, v in sorted(leaks.items()))
    _matrix_refuses_one_annotator_twice(client_for, demo)
    _disagreements_page_answers_each_role(client, client_for, demo)
    lead = client_for(demo["lead"])
    html = lead.get(reverse("quality:agreement")).content.decode()
    # display names and integers everywhere on the page
    assert "answer_label ·" not in html and "Answer labels · Acceptability" in html
    assert re.search(r"<td>Answer labels</td><td>\d+</td>", html) and not re.search(
        r"\b\d+\|\d+\b", html
    )
    assert 'class="whisker"' in html and "(n = " in html
    # the matrix form opens on two different annotators
    chosen = re.findall(r'<option value="([^"]+)" selected>', html)
    assert len(chosen) == 2 and chosen[0] != chosen[1]
    # every pair alert links to its matrix and its items
    linked = link_alerts(list_agreement_alerts(project=default_project()))
    pair = [a for a in linked if a.kind == "gold_kappa_low"][0]
    assert pair.matrix and pair.items and "a=ann" in pair.matrix
    assert f'href="/quality/agreement/?{pair.matrix.replace("&", "&amp;")}#confusion"' in html
    matrix = lead.get(f"{reverse('quality:agreement')}?{pair.matrix}").content.decode()
    assert "items rated by both on" in matrix and "Choose two different" not in matrix
    items = lead.get(f"{reverse('quality:disagreements')}?{pair.items}")
    body = items.content.decode()
    assert items.status_code == 200 and 'id="disagreements"' in body
    links = re.findall(r'href="(/promotion/records/[^"]+|/curation/triples/\d+/)"', body)
    assert links and all(lead.get(url).status_code == 200 for url in links[:3])
    # a task-type alert lists that task type's items
    alpha = [a for a in linked if a.kind == "gold_alpha_low"][0]
    assert "task_type=" in alpha.items
    assert lead.get(f"{reverse('quality:disagreements')}?{alpha.items}").status_code == 200


def _matrix_refuses_one_annotator_twice(client_for, demo):
    lead = client_for(demo["lead"])
    params = {"protocol": "answer_label", "axis": "acceptability", "a": "ann1", "b": "ann1"}
    fragment = lead.get(
        reverse("quality:agreement"), params, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="confusion"
    ).content.decode()
    assert "Choose two different annotators." in fragment and "items rated by both" not in fragment
    page = lead.get(reverse("quality:disagreements"), params).content.decode()
    assert "Choose two different annotators." in page and 'id="disagreements"' not in page


def _disagreements_page_answers_each_role(client, client_for, demo):
    url = reverse("quality:disagreements") + "?protocol=triple_review&axis=verdict"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_for(demo["ann1"]).get(url).status_code == 403
    assert client_for(demo["lead"]).get(url).status_code == 200
    assert client_for(demo["admin"]).get(url).status_code == 200
    bad = client_for(demo["lead"]).get(reverse("quality:disagreements"), {"axis": "nope"})
    assert bad.status_code == 200 and "Choose a protocol and an axis" in bad.content.decode()


@pytest.mark.parametrize("n_records", [3, 12])
def test_the_disagreements_page_costs_the_same_queries_as_data_grows(
    client_for, lead, django_assert_max_num_queries, n_records
):
    domain = DomainFactory(slug="supply_chain")
    a, b = qualified_annotators(domain, 2, prefix="dis")
    for _ in range(n_records):
        AnswerRecordFactory(question__domain=domain)
    for _ in range(n_records):
        claim_and_label(a)
        claim_and_label(b, **BAD)
    c = client_for(lead)
    url = reverse("quality:disagreements")
    params = {"protocol": "answer_label", "axis": "acceptability", "a": a.username, "b": b.username}
    with django_assert_max_num_queries(9):
        body = c.get(url, params).content.decode()
    assert body.count("/promotion/records/") == n_records


def test_drop_asks_for_a_reason_and_a_confirmation(client_for, team):
    triple = _to_discussion(team)
    author = client_for(team["author"])
    url = reverse("curation:drop", args=[triple.pk])
    empty = author.post(url, {"note": "  ", "confirm": "true"})
    assert empty.status_code == 200 and "a reason is required" in empty.content.decode()
    asked = author.post(url, {"note": "unanswerable from the corpus"})
    body = asked.content.decode()
    assert asked.status_code == 200 and 'id="confirm-submit"' in body and "cannot be" in body
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION  # nothing happens before the confirmation
    done = author.post(url, {"note": "unanswerable from the corpus", "confirm": "true"})
    assert done.status_code == 302
    triple.refresh_from_db()
    assert triple.state == TripleState.DROPPED
    event = AuditEvent.objects.filter(verb="triple_dropped").latest("pk")
    assert event.detail["reason"] == "unanswerable from the corpus"


def test_retire_needs_a_reason_in_the_service_and_a_confirmation_on_the_page(client_for, team):
    triple = write_triple(team["author"])
    v2 = BlockVersionFactory(block=triple.current_revision.expected_block_version.block, version=2)
    mark_superseded_pins(superseding_version_ids=[v2.pk])
    with pytest.raises(GoldsetError, match="a reason is required"):
        retire_triple(triple=triple, actor=team["lead"], note="   ")
    lead = client_for(team["lead"])
    url = reverse("curation:retire", args=[triple.pk])
    assert "a reason is required" in lead.post(url, {"confirm": "true"}).content.decode()
    assert 'id="confirm-submit"' in lead.post(url, {"note": "policy withdrawn"}).content.decode()
    triple.refresh_from_db()
    assert triple.state == TripleState.NEEDS_REREVIEW
    assert lead.post(url, {"note": "policy withdrawn", "confirm": "true"}).status_code == 302
    triple.refresh_from_db()
    assert triple.state == TripleState.RETIRED
    event = AuditEvent.objects.filter(verb="triple_retired").latest("pk")
    assert event.detail["note"] == "policy withdrawn"
    # the page's role scope: annotators get the 403 page naming the role it needs
    refused = client_for(team["r1"]).post(url, {"note": "x", "confirm": "true"})
    assert refused.status_code == 403


def test_the_403_page_has_the_navigation_and_names_the_role(client_for, annotator, lead):
    response = client_for(annotator).get(reverse("quality:agreement"))
    body = response.content.decode()
    assert response.status_code == 403
    assert '<nav aria-label="Main">' in body and 'href="/answers/"' in body
    assert "Adjudication lead" in body and "Admin" in body and 'id="needed-role"' in body
    admin_only = client_for(lead).get(reverse("exports:jobs")).content.decode()
    assert "It needs the role <strong>Admin</strong>" in admin_only


def test_an_invalid_comparison_answers_with_a_message_on_the_compare_page(client_for, admin_user):
    admin = client_for(admin_user)
    one = admin.get(reverse("exports:compare"), {"jobs": [1]})
    assert one.status_code == 400 and "Choose two runs" in one.content.decode()
    unknown = admin.get(reverse("exports:compare"), {"jobs": [998, 999]})
    assert unknown.status_code == 400 and 'id="compare-error"' in unknown.content.decode()
    assert '<nav aria-label="Main">' in unknown.content.decode()
