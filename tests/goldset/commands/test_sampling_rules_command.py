"""``manage.py sampling_rules list|add|update|enable|disable --project SLUG`` (issue 28): the
Sampling rules page's form checks the values and its services make the change (a new audited
version); bad input exits 2 with a message naming the field, and changes nothing."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from goldset.models import Project, SamplingRule
from goldset.services.projects import grant_role
from tests.factories import DomainFactory, UserFactory, default_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command("sampling_rules", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def beta(admin_user):
    project = Project.objects.create(name="Beta", slug="beta-bot")
    grant_role(project=project, user=admin_user, role=Role.ADMIN)
    DomainFactory(slug="billing", project=project)
    return project


def test_add_list_update_disable_and_enable_a_rule_of_a_project(beta, admin_user):
    added = run(
        "add", "tenth", "--project", "beta-bot", "--kind", "percentage", "--percentage", "10",
        "--seed", "7", "--daily-cap", "100", "--note", "start", "--user", admin_user.username,
    )  # fmt: skip
    rule = SamplingRule.objects.get()
    assert rule.project == beta and rule.created_by == admin_user
    assert added == {
        "id": rule.pk,
        "name": "tenth",
        "kind": "percentage",
        "percentage": "10.000",
        "seed": 7,
        "threshold": None,
        "value": "",
        "daily_cap": 100,
        "position": 0,
        "enabled": True,
        "version": 1,
    }
    run("add", "billing", "--project", "beta-bot", "--kind", "domain", "--value", "billing",
        "--position", "1")  # fmt: skip
    assert [r["name"] for r in run("list", "--project", "beta-bot")] == ["tenth", "billing"]
    assert run("list") == []  # the default project has none

    updated = run("update", "tenth", "--project", "beta-bot", "--percentage", "25",
                  "--daily-cap", "none", "--name", "quarter", "--note", "spike over")  # fmt: skip
    assert (updated["name"], updated["percentage"], updated["daily_cap"]) == (
        "quarter",
        "25.000",
        None,
    )
    assert (updated["seed"], updated["version"]) == (7, 2)  # what was not given is kept
    assert run("disable", "quarter", "--project", "beta-bot")["enabled"] is False
    enabled = run("enable", "quarter", "--project", "beta-bot")
    assert (enabled["enabled"], enabled["version"]) == (True, 4)

    events = AuditEvent.objects.filter(
        object_id=str(rule.pk), verb__startswith="sampling_rule_"
    ).order_by("id")
    assert [e.verb for e in events] == ["sampling_rule_created"] + ["sampling_rule_changed"] * 3
    assert events[1].detail["before"]["daily_cap"] == 100
    assert events[1].detail["after"]["daily_cap"] is None
    assert events[1].detail["note"] == "spike over"
    assert [e.actor for e in events] == [admin_user, None, None, None]


@pytest.mark.parametrize(
    "args,message",
    [
        (("add", "x", "--kind", "coin"), "^kind: "),
        (("add", "x", "--kind", "percentage", "--percentage", "ten"), "^percentage: "),
        (("add", "x", "--kind", "percentage", "--percentage", "101"), "^percentage: "),
        (("add", "x", "--kind", "percentage"), "^percentage: a percentage rule needs"),
        (("add", "x", "--kind", "uncertainty"), "^threshold: an uncertainty rule needs"),
        (("add", "x", "--kind", "feedback", "--daily-cap", "-3"), "^daily_cap: "),
        (("add", "x", "--kind", "domain", "--value", "nowhere"), "^value: no domain"),
        (("add", "Not A Slug", "--kind", "feedback"), "^name: "),
        (("add", "--kind", "feedback"), "^name: give the rule's name"),
        (("add", "kept", "--kind", "feedback"), "^name: a sampling rule named 'kept'"),
        (("update", "nothing", "--seed", "3"), "^name: no sampling rule 'nothing'"),
        (("update", "kept", "--seed", "three"), "^seed: "),
        (
            ("update", "kept", "--position", "3", "--kind", "judge", "--threshold", "2"),
            "^threshold: ",
        ),
        (("update", "kept"), "nothing was changed"),
        (("disable", "kept", "--seed", "3"), "^seed: disable takes no other option"),
        (("enable", "kept"), "nothing was changed"),  # enabled already
        (("remove", "kept"), "^action: 'remove' is not one of"),
        (("list", "--project", "nowhere"), "No project 'nowhere'"),
        (("add", "x", "--kind", "feedback", "--user", "nobody"), "^user: no user 'nobody'"),
        (("add", "x", "--kind", "feedback", "--user", "an-annotator"), "^user: .* not an admin"),
    ],
)
def test_bad_input_exits_2_naming_the_field_and_changes_nothing(admin_user, args, message):
    DomainFactory(slug="controls")
    UserFactory(username="an-annotator")
    run("add", "kept", "--kind", "feedback")
    before = list(SamplingRule.objects.values_list("name", "version", "enabled"))
    with pytest.raises(CommandError, match=message) as refused:
        call_command("sampling_rules", *args, stdout=StringIO(), stderr=StringIO())
    assert refused.value.returncode == 2
    assert list(SamplingRule.objects.values_list("name", "version", "enabled")) == before
    assert AuditEvent.objects.filter(verb__startswith="sampling_rule_").count() == 1
    assert before == [("kept", 1, True)] and SamplingRule.objects.get().project == (
        default_project()
    )
