"""The sampling rules pages (admins, issue 28): create, edit (a new version) and disable rules,
field errors named; the traces page counts received, sampled per rule, dropped, capped and
rejected traces with their reasons, in a constant number of queries. Annotators and leads are
refused; non-members and other projects' rules get a 404."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.models import Domain, Project, ReceivedTrace, SamplingRule, TraceStatus
from goldset.services.sampling import create_sampling_rule
from tests.factories import UserFactory, default_project
from tests.goldset.sampling_support import pipeline, send
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db
RULES = "/p/{slug}/traces/sampling/"
TRACES = "/p/{slug}/traces/"


@pytest.fixture
def project():
    project = default_project()
    Domain.objects.create(project=project, slug="controls", name="Controls")
    return project


def new_rule(client, project, **fields):
    data = {"name": "tenth", "kind": "percentage", "percentage": "10", "seed": "77"}
    data |= {"position": "0", "threshold": "", "value": "", "daily_cap": "", "note": ""} | fields
    return client.post(RULES.format(slug=project.slug), data)


def test_admin_creates_edits_and_disables_a_rule(client_for, admin_user, project):
    client = client_for(admin_user)
    assert new_rule(client, project, daily_cap="50").status_code == 302
    rule = SamplingRule.objects.get(project=project)
    assert (rule.kind, rule.percentage, rule.seed, rule.daily_cap) == ("percentage", 10, 77, 50)
    page = client.get(RULES.format(slug=project.slug)).content.decode()
    assert "tenth" in page and "seed 77" in page

    edit = f"/p/{project.slug}/traces/sampling/{rule.pk}/"
    assert "Save as version 2" in client.get(edit).content.decode()
    data = {"name": "tenth", "kind": "percentage", "percentage": "20", "seed": "77"}
    data |= {"position": "0", "threshold": "", "value": "", "daily_cap": "50", "note": "more"}
    assert client.post(edit, data).status_code == 302
    rule.refresh_from_db()
    assert (rule.version, rule.percentage) == (2, Decimal("20"))

    response = client.post(f"{edit}enabled/", {"enabled": "0"})
    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.enabled, rule.version) == (False, 3)
    verbs = AuditEvent.objects.filter(object_id=str(rule.pk)).values_list("verb", flat=True)
    assert list(verbs.order_by("id")) == ["sampling_rule_created"] + ["sampling_rule_changed"] * 2


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"percentage": "150"}, "percentage"),
        ({"kind": "domain", "value": "nowhere"}, "value: no domain"),
        ({"kind": "uncertainty", "percentage": ""}, "threshold: an uncertainty rule"),
        ({"kind": "judge", "threshold": "2"}, "threshold"),
        ({"name": "not a slug"}, "name"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(
    client_for, admin_user, project, fields, named
):
    response = new_rule(client_for(admin_user), project, **fields)
    assert response.status_code == 200
    assert named in response.content.decode()
    assert not SamplingRule.objects.exists()


@pytest.mark.parametrize("fixture", ["annotator", "lead"])
def test_annotators_and_leads_are_refused(request, client_for, project, fixture, admin_user):
    rule = create_sampling_rule(project=project, actor=admin_user, name="all", kind="feedback")
    client = client_for(request.getfixturevalue(fixture))
    base = RULES.format(slug=project.slug)
    assert client.get(base).status_code == 403
    assert client.get(f"{base}{rule.pk}/").status_code == 403
    assert client.post(f"{base}{rule.pk}/enabled/", {"enabled": "0"}).status_code == 403
    assert new_rule(client, project).status_code == 403
    assert SamplingRule.objects.get().enabled


def test_outsiders_and_other_projects_rules_get_404(client_for, admin_user, project):
    rule = create_sampling_rule(project=project, actor=admin_user, name="mine", kind="feedback")
    outsider = client_for(UserFactory(username="outsider"))
    assert outsider.get(RULES.format(slug=project.slug)).status_code == 404
    assert outsider.get(f"{RULES.format(slug=project.slug)}{rule.pk}/").status_code == 404
    other = Project.objects.create(name="Other", slug="other-bot")
    from goldset.services.projects import grant_role
    from workbench.roles import Role

    grant_role(project=other, user=admin_user, role=Role.ADMIN)
    client = client_for(admin_user)
    assert client.get(f"{RULES.format(slug='other-bot')}{rule.pk}/").status_code == 404
    response = client.post(f"{RULES.format(slug='other-bot')}{rule.pk}/enabled/", {"enabled": "0"})
    assert response.status_code == 404
    assert SamplingRule.objects.get().enabled


def test_traces_page_counts_sampled_per_rule_dropped_capped_and_rejected(
    client_for, admin_user, project
):
    create_sampling_rule(
        project=project,
        actor=admin_user,
        name="unhappy",
        kind="feedback",
        daily_cap=1,
    )
    down = [pipeline(f"Q{n}?", **{"goldset.feedback": "thumbs_down"}) for n in range(3)]
    send(project, *down, pipeline("Fine?"))
    ReceivedTrace.objects.create(
        project=project, trace_id="e" * 32, status=TraceStatus.REJECTED, reason="no question"
    )
    client = client_for(admin_user)
    url = TRACES.format(slug=project.slug)
    with CaptureQueriesContext(connection) as few:
        html = client.get(url).content.decode()
    assert "Received 5 traces" in html
    row = html.split('id="sampled-unhappy"')[1].split("</tr>")[0]
    assert "1 (today 1 of 1) · capped 2 (today 2)" in row
    for outcome, n in [("mapped", 1), ("dropped", 1), ("capped", 2), ("rejected", 1)]:
        assert (
            f'<td class="num">{n}</td>' in html.split(f'id="count-{outcome}"')[1].split("</tr>")[0]
        )
    assert "no question" in html.split('id="rejection-reasons"')[1]

    # more rules and traces: the same number of queries
    for n in range(4):
        create_sampling_rule(
            project=project, actor=admin_user, name=f"p{n}", kind="percentage", percentage=50
        )
    send(project, *[pipeline(f"More {n}?") for n in range(6)])
    ReceivedTrace.objects.create(
        project=project, trace_id="d" * 32, status=TraceStatus.REJECTED, reason="other reason"
    )
    with CaptureQueriesContext(connection) as many:
        assert client.get(url).status_code == 200
    assert len(many) == len(few)
