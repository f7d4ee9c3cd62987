"""The projects home shows each project's open alerts (issue 27): for its leads and admins, beside
its queues, how many alerts are open and the worst kind among them — each project judged against
its own thresholds — for two queries whatever the number of projects and alerts. Annotators see
their queues only: no alert of a project, not even its count."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from goldset.models import AgreementSnapshot, DashboardCounter, Tier
from goldset.selectors.agreement import count_alerts_by_project, list_agreement_alerts
from goldset.services.projects import grant_role
from tests.goldset.project_support import other_project
from tests.goldset.web.test_projects_quality import kappa_snapshot
from workbench.project_urls import project_url
from workbench.roles import Role

pytestmark = pytest.mark.django_db

KAPPA_KIND = "Gold Cohen κ below target for an annotator pair"
ALPHA_KIND = "Gold Krippendorff α below target for a task type"
FLAG_KIND = "Calibration session needed for an author"


def alpha_snapshot(project, value: float, task_type="factual_qa") -> AgreementSnapshot:
    return AgreementSnapshot.objects.create(
        project=project,
        protocol="answer_label",
        axis="acceptability",
        metric="krippendorff_alpha",
        tier=Tier.GOLD,
        task_type=task_type,
        value=value,
        n_items=40,
        n_annotators=3,
        data_version="v1",
    )


def flagged_author(project, author, *, reviews=30, flags=20):
    """``author``'s triples in ``project`` received ``flags`` flags in ``reviews`` reviews today
    (the maintained counters the flag-rate alert reads)."""
    day = timezone.now().astimezone(dt.UTC).date().isoformat()
    for name, n in (("author_reviews", reviews), ("author_flags", flags)):
        DashboardCounter.objects.create(name=name, key=f"{project.pk}|{author.pk}|{day}", n=n)


@pytest.fixture
def world(make_user):
    """Projects "alpha" (a low pair κ and a low task-type α: two alerts, the α one the worse
    kind) and "beta" (a pair κ of 0.5, above beta's own κ gate of 0.4: no alert); ``lead``
    leads both, ``annotator`` labels in both, ``mixed`` labels in alpha and leads beta."""
    lead = make_user(None, username="ha-lead")
    annotator = make_user(None, username="ha-ann")
    mixed = make_user(None, username="ha-mixed")
    pair = [make_user(None, username=f"ha-pair{i}") for i in (1, 2)]
    alpha = other_project(
        slug="alpha",
        members=[(lead, Role.LEAD), (annotator, Role.ANNOTATOR), (mixed, Role.ANNOTATOR)],
    )
    beta = other_project(
        slug="beta",
        members=[(lead, Role.LEAD), (annotator, Role.ANNOTATOR), (mixed, Role.LEAD)],
        KAPPA_GATE="0.4",
    )
    kappa_snapshot(alpha, *pair, 0.3)
    alpha_snapshot(alpha, 0.4)
    kappa_snapshot(beta, *pair, 0.5)
    return {
        "alpha": alpha,
        "beta": beta,
        "lead": lead,
        "annotator": annotator,
        "mixed": mixed,
        "pair": pair,
    }


def card(html: str, slug: str) -> str:
    start = html.index(f'id="project-{slug}"')
    end = html.find('<section class="card"', start + 1)
    return html[start : end if end != -1 else len(html)]


def test_a_lead_sees_each_projects_open_alerts_and_worst_kind(world, client_for):
    html = client_for(world["lead"]).get("/").content.decode()
    alpha, beta = card(html, "alpha"), card(html, "beta")
    assert 'id="project-alpha-alerts"' in alpha
    assert (
        f'<a href="{project_url(world["alpha"], "quality:alerts")}"><strong class="inbox-count">2</strong> open alerts</a>'
        in alpha
    )
    assert f'data-kind="gold_alpha_low">{ALPHA_KIND}</span>' in alpha  # the worse of the two kinds
    assert KAPPA_KIND not in alpha
    # Beta's κ of 0.5 is above beta's own gate (0.4): nothing open there.
    assert '<p class="muted" id="project-beta-alerts">No open alerts.</p>' in beta
    assert 'id="project-beta-alerts"><a' not in beta and "open alerts</a>" not in beta
    # The same counts as each project's Alerts page.
    assert len(list_agreement_alerts(project=world["alpha"])) == 2
    assert list_agreement_alerts(project=world["beta"]) == []


def test_an_admin_sees_them_too_and_an_author_flag_rate_counts(world, client_for, make_user):
    admin = make_user(None, username="ha-admin")
    grant_role(project=world["beta"], user=admin, role=Role.ADMIN)
    flagged_author(world["beta"], world["pair"][0])
    html = client_for(admin).get("/").content.decode()
    assert 'id="project-alpha"' not in html  # not a member of alpha
    beta = card(html, "beta")
    assert '<strong class="inbox-count">1</strong> open alert</a>' in beta
    assert f'data-kind="author_flag_rate">{FLAG_KIND}</span>' in beta


def test_an_annotator_sees_queues_and_no_alert(world, client_for):
    html = client_for(world["annotator"]).get("/").content.decode()
    assert 'id="project-alpha"' in html and 'id="project-beta"' in html
    assert "alerts" not in html.lower().replace("no open alerts", "")  # no count, no link, no kind
    for kind in (ALPHA_KIND, KAPPA_KIND, FLAG_KIND):
        assert kind not in html
    assert project_url(world["alpha"], "quality:alerts") not in html


def test_a_person_sees_alerts_only_where_they_lead(world, client_for):
    # below beta's gate now: one alert
    AgreementSnapshot.objects.filter(project=world["beta"]).update(value=0.1)
    html = client_for(world["mixed"]).get("/").content.decode()
    assert 'id="project-alpha-alerts"' not in html and ALPHA_KIND not in card(html, "alpha")
    assert '<strong class="inbox-count">1</strong> open alert</a>' in card(html, "beta")


def test_a_project_home_shows_its_open_alerts_to_its_lead_only(world, client_for):
    alpha = world["alpha"]
    lead_page = client_for(world["lead"]).get(project_url(alpha, "home")).content.decode()
    assert (
        'id="inbox-alerts"' in lead_page and f'data-kind="gold_alpha_low">{ALPHA_KIND}' in lead_page
    )
    annotator_page = client_for(world["annotator"]).get(project_url(alpha, "home")).content.decode()
    assert 'id="inbox-alerts"' not in annotator_page and ALPHA_KIND not in annotator_page


def _alert_queries(client) -> tuple[int, int]:
    """(all queries of the projects home, those reading alerts' figures or flag counters)."""
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/").status_code == 200
    sql = [q["sql"] for q in ctx.captured_queries]
    alerts = [s for s in sql if "goldset_agreementsnapshot" in s or "author_flags" in s]
    return len(sql), len(alerts)


def test_the_alerts_cost_two_queries_whatever_the_number_of_projects_and_alerts(
    world, client_for, make_user
):
    lead = world["lead"]
    c = client_for(lead)
    total, alert_queries = _alert_queries(c)
    assert alert_queries == 2

    # More alerts in every project: the same queries.
    others = [make_user(None, username=f"ha-more{i}") for i in range(4)]
    for project in (world["alpha"], world["beta"]):
        for first, second in zip(others, others[1:], strict=False):
            kappa_snapshot(project, first, second, 0.05)
        for author in others:
            flagged_author(project, author)
        alpha_snapshot(project, 0.1, task_type="rag_synthesis")
    assert _alert_queries(c) == (total, 2)
    assert (
        count_alerts_by_project(projects=[world["alpha"]])[world["alpha"].pk].count == 2 + 3 + 4 + 1
    )

    # More projects led, each with its alerts: still two queries for all their alerts.
    for i in range(3):
        project = other_project(slug=f"more-{i}", members=[(lead, Role.LEAD)])
        kappa_snapshot(project, *world["pair"], 0.2)
    html = c.get("/").content.decode()
    assert all(f'id="project-more-{i}-alerts"' in html for i in range(3))
    assert _alert_queries(c)[1] == 2
