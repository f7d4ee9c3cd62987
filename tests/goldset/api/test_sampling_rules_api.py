"""Sampling rules through the API (issue 28): a project's admins list, create, read and change
(PATCH: the next audited version; ``enabled`` alone enables or disables) its sampling rules,
with API tokens, through the Sampling rules pages' services (``create_sampling_rule``,
``update_sampling_rule``: the rule checks are theirs, a refusal is a 422 naming the field).
Annotators and leads are refused (403, as the access table says), another project's admin and
another project's rule are a 404."""

import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldset.models import Project, SamplingDayCount, SamplingRule
from goldset.services.projects import grant_role
from goldset.services.sampling import create_sampling_rule, sampling_day
from tests.factories import DomainFactory, UserFactory, default_project
from tests.goldset.otlp_support import write_token
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
TENTH = {"name": "tenth", "kind": "percentage", "percentage": "10", "seed": 4242}


def api(raw_token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw_token}")


def send(client, method, url, body):
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def outsider():
    """An admin of another project only."""
    user = UserFactory(username="sampling-outsider")
    other = Project.objects.create(name="Elsewhere", slug="sampling-elsewhere")
    grant_role(project=other, user=user, role=Role.ADMIN)
    return user


def test_an_admin_creates_lists_reads_changes_and_disables_a_rule(admin_user):
    DomainFactory(slug="controls")
    admin = api(write_token(admin_user))
    created = send(admin, "post", reverse("api:sampling_rules"), {**TENTH, "daily_cap": 50})
    assert created.status_code == 201, created.content
    body = created.json()
    rule = SamplingRule.objects.get()
    assert created["Location"] == reverse("api:sampling_rule", args=[rule.pk])
    assert (body["name"], body["kind"], body["percentage"], body["seed"]) == (
        "tenth",
        "percentage",
        "10.000",
        4242,
    )
    assert (body["version"], body["enabled"], body["daily_cap"]) == (1, True, 50)
    assert rule.project == default_project() and rule.created_by == admin_user

    SamplingDayCount.objects.create(rule=rule, day=sampling_day(), sampled=3, capped=1)
    listed = admin.get(reverse("api:sampling_rules")).json()["results"]
    assert [(r["id"], r["sampled_today"], r["capped_total"]) for r in listed] == [(rule.pk, 3, 1)]
    one = admin.get(created["Location"]).json()
    assert (one["sampled_today"], one["sampled_total"]) == (3, 3)

    changed = send(
        admin, "patch", created["Location"], {"percentage": "20.5", "note": "more traffic"}
    )
    assert changed.status_code == 200, changed.content
    assert (changed.json()["version"], changed.json()["percentage"]) == (2, "20.500")
    assert changed.json()["seed"] == 4242  # the fields not sent are kept
    disabled = send(admin, "patch", created["Location"], {"enabled": False})
    assert (disabled.json()["enabled"], disabled.json()["version"]) == (False, 3)
    enabled = send(admin, "patch", created["Location"], {"enabled": True})
    assert (enabled.json()["enabled"], enabled.json()["version"]) == (True, 4)

    # the audit trail records each API change as the page's service does: before and after
    events = list(
        AuditEvent.objects.filter(
            object_id=str(rule.pk), verb__startswith="sampling_rule_"
        ).order_by("id")
    )
    assert [e.verb for e in events] == ["sampling_rule_created"] + ["sampling_rule_changed"] * 3
    assert all(e.actor == admin_user for e in events)
    assert events[1].detail["before"]["percentage"] == "10.000"
    assert events[1].detail["after"]["percentage"] == "20.500"
    assert events[1].detail["note"] == "more traffic"
    assert (events[2].detail["before"]["enabled"], events[2].detail["after"]["enabled"]) == (
        True,
        False,
    )


def test_rules_page_by_cursor_in_evaluation_order_and_take_updated_since(admin_user):
    for name, position in [("c", 2), ("a", 0), ("b", 1)]:
        create_sampling_rule(
            project=default_project(), actor=admin_user, name=name, kind="feedback",
            position=position,
        )  # fmt: skip
    admin = api(write_token(admin_user))
    first = admin.get(reverse("api:sampling_rules"), {"page_size": 2}).json()
    rest = admin.get(first["next"]).json()
    assert [r["name"] for r in first["results"] + rest["results"]] == ["a", "b", "c"]
    later = admin.get(reverse("api:sampling_rules"), {"updated_since": "2999-01-01T00:00:00Z"})
    assert later.json()["results"] == []
    assert admin.get(reverse("api:sampling_rules"), {"kind": "x"}).status_code == 400


@pytest.mark.parametrize(
    "body,status,field",
    [
        ({**TENTH, "percentage": "101"}, 400, "percentage"),  # the shape: a range
        ({**TENTH, "kind": "coin"}, 400, "kind"),
        ({**TENTH, "name": "not a slug"}, 400, "name"),
        ({**TENTH, "seed": -1}, 400, "seed"),
        ({**TENTH, "percentag": "5"}, 400, "percentag"),  # a misspelt field is not ignored
        ({"kind": "feedback"}, 400, "name"),
        ({**TENTH, "percentage": None}, 422, "percentage"),  # the service: what a kind needs
        ({"name": "unsure", "kind": "uncertainty"}, 422, "threshold"),
        ({"name": "audit", "kind": "domain", "value": "nowhere"}, 422, "value"),
        ({"name": "facts", "kind": "task_type", "value": "poetry"}, 422, "value"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field_and_creates_nothing(admin_user, body, status, field):
    response = send(api(write_token(admin_user)), "post", reverse("api:sampling_rules"), body)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    assert response.json()["errors"][0]["field"] == field
    assert not SamplingRule.objects.exists()
    assert not AuditEvent.objects.filter(verb__startswith="sampling_rule_").exists()


def test_a_refused_change_is_a_422_naming_the_field_and_changes_nothing(admin_user):
    rule = create_sampling_rule(project=default_project(), actor=admin_user, **TENTH)
    create_sampling_rule(project=default_project(), actor=admin_user, name="b", kind="feedback")
    admin, url = api(write_token(admin_user)), reverse("api:sampling_rule", args=[rule.pk])
    for body, status, field in [
        ({"name": "b"}, 422, "name"),  # in use
        ({"kind": "uncertainty"}, 422, "threshold"),
        ({"threshold": "1.5"}, 400, "threshold"),
        ({"enabled": "perhaps"}, 400, "enabled"),
        ({"version": 7}, 400, "version"),  # not a field a change may set
    ]:
        response = send(admin, "patch", url, body)
        assert response.status_code == status, (body, response.content)
        assert response.json()["errors"][0]["field"] == field
    same = send(admin, "patch", url, {"seed": 4242})
    assert same.status_code == 422 and "nothing was changed" in same.json()["detail"]
    rule.refresh_from_db()
    assert (rule.version, rule.name, rule.kind) == (1, "tenth", "percentage")
    assert AuditEvent.objects.filter(verb="sampling_rule_changed").count() == 0


def test_only_admins_of_the_project_reach_the_rules(client, admin_user, annotator, lead, outsider):
    rule = create_sampling_rule(project=default_project(), actor=admin_user, **TENTH)
    detail = reverse("api:sampling_rule", args=[rule.pk])
    other = Project.objects.get(slug="sampling-elsewhere")
    grant_role(project=other, user=admin_user, role=Role.ADMIN)
    for who, expected in [
        (client, 401),
        (api(write_token(annotator)), 403),
        (api(write_token(lead)), 403),
        (api(write_token(outsider)), 404),  # not a member of the default project
        (api(write_token(admin_user, project=other)), 404),  # a token for another project
    ]:
        for response in (
            who.get(reverse("api:sampling_rules")),
            send(who, "post", reverse("api:sampling_rules"), {**TENTH, "name": "theirs"}),
            who.get(detail),
            send(who, "patch", detail, {"enabled": False}),
        ):
            assert response.status_code == expected, (who, response.content[:200])
            assert response["Content-Type"] == PROBLEM
    rule.refresh_from_db()
    assert (rule.enabled, rule.version) == (True, 1)
    assert SamplingRule.objects.count() == 1


def test_another_projects_rule_is_a_404_and_its_own_prefix_reaches_it(admin_user):
    other = Project.objects.create(name="Beta", slug="sampling-beta")
    grant_role(project=other, user=admin_user, role=Role.ADMIN)
    theirs = create_sampling_rule(project=other, actor=admin_user, name="x", kind="feedback")
    admin = api(write_token(admin_user))  # valid in every project of the admin
    assert admin.get(reverse("api:sampling_rule", args=[theirs.pk])).status_code == 404
    assert (
        send(
            admin, "patch", reverse("api:sampling_rule", args=[theirs.pk]), {"enabled": False}
        ).status_code
        == 404
    )
    assert admin.get(reverse("api:sampling_rules")).json()["results"] == []
    prefixed = f"/api/v1/projects/sampling-beta/sampling-rules/{theirs.pk}/"
    assert admin.get(prefixed).json()["id"] == theirs.pk
    made = send(
        admin, "post", "/api/v1/projects/sampling-beta/sampling-rules/",
        {"name": "beta", "kind": "percentage", "percentage": Decimal("5").to_eng_string()},
    )  # fmt: skip
    assert made.status_code == 201
    assert made["Location"].startswith("/api/v1/projects/sampling-beta/sampling-rules/")
    assert SamplingRule.objects.get(name="beta").project == other


def test_the_list_takes_the_same_queries_for_one_rule_or_many(admin_user):
    admin = api(write_token(admin_user))

    def queries_to_list() -> int:
        admin.get(reverse("api:sampling_rules"))  # the token's first use is audited once
        with CaptureQueriesContext(connection) as captured:
            assert admin.get(reverse("api:sampling_rules")).status_code == 200
        return len(captured)

    create_sampling_rule(project=default_project(), actor=admin_user, **TENTH)
    one = queries_to_list()
    for n in range(6):
        rule = create_sampling_rule(
            project=default_project(), actor=admin_user, name=f"r{n}", kind="feedback"
        )
        SamplingDayCount.objects.create(rule=rule, day=sampling_day(), sampled=n)
    assert queries_to_list() == one
