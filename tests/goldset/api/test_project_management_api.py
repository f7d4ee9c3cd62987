"""Managing projects through the API (issue 27): installation admins create projects
(``POST projects/``, optionally copying another's policy); a project's members read it at
``/api/v1/projects/<slug>/`` and its admins change it (PATCH name, description, archived), its
settings (``settings/``) and its members (``members/``); installation admins delete it (204, or
409 while it holds frozen versions). The pages' services do the work, so the page and the API
store the same thing; every endpoint answers every role as the pages do (not a member: 404; a
member without the role: 403), a read token only reads and a token of another project finds
nothing (404)."""

import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from goldset.models import (
    Domain,
    GoldVersion,
    GuidelineVersion,
    Project,
    ProjectMembership,
    ProjectSettingChange,
    RoutingRules,
)
from goldset.services.project_settings import update_project_settings
from goldset.services.projects import (
    ProjectRefused,
    create_project,
    grant_role,
    remove_member,
)
from tests.factories import UserFactory
from workbench.models import AuditEvent
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
BOT = "/api/v1/projects/bot/"


def send(client, method, url, body=None):
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def bearer(raw) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(make_user):
    """Project ``bot`` (its admin ``owner``, who is no installation admin, a lead, an
    annotator), project ``policy`` (an admin of it only: ``outsider``), an installation admin
    (``staff``) and a person in no project (``newcomer``)."""
    staff = make_user(Role.ADMIN, username="staff")
    bot = create_project(name="Customer bot", slug="bot", by=staff)
    policy = create_project(name="Policy assistant", slug="policy", by=staff)
    people = {"staff": staff, "newcomer": UserFactory(username="newcomer")}
    for username, project, role in [
        ("owner", bot, Role.ADMIN),
        ("lead", bot, Role.LEAD),
        ("annotator", bot, Role.ANNOTATOR),
        ("outsider", policy, Role.ADMIN),
    ]:
        people[username] = UserFactory(username=username)
        grant_role(project=project, user=people[username], role=role)
    return bot, policy, people


# ---------------------------------------------------------------- every endpoint, every role

# (method, path, body) → the status for installation admin, project admin, lead, annotator,
# a member of another project only, and an anonymous caller.
WHO = ("staff", "owner", "lead", "annotator", "outsider", "anonymous")
MATRIX = [
    ("get", "/api/v1/projects/", None, (200, 200, 200, 200, 200, 401)),
    (
        "post",
        "/api/v1/projects/",
        {"name": "RFP responder", "slug": "rfp"},
        (201, 403, 403, 403, 403, 401),
    ),
    ("get", BOT, None, (200, 200, 200, 200, 404, 401)),
    ("patch", BOT, {"description": "Bots."}, (200, 200, 403, 403, 404, 401)),
    ("delete", BOT, None, (204, 403, 403, 403, 404, 401)),
    ("get", BOT + "settings/", None, (200, 200, 403, 403, 404, 401)),
    ("patch", BOT + "settings/", {"KAPPA_GATE": "0.8"}, (200, 200, 403, 403, 404, 401)),
    ("get", BOT + "members/", None, (200, 200, 403, 403, 404, 401)),
    (
        "post",
        BOT + "members/",
        {"username": "newcomer", "role": "annotator"},
        (201, 201, 403, 403, 404, 401),
    ),
    ("get", BOT + "members/lead/", None, (200, 200, 403, 403, 404, 401)),
    (
        "patch",
        BOT + "members/annotator/",
        {"role": "adjudication_lead"},
        (200, 200, 403, 403, 404, 401),
    ),
    ("delete", BOT + "members/annotator/", None, (204, 204, 403, 403, 404, 401)),
]
CASES = [
    pytest.param(method, path, body, who, expected, id=f"{method} {path} {who}")
    for method, path, body, statuses in MATRIX
    for who, expected in zip(WHO, statuses, strict=True)
]


@pytest.mark.parametrize(("method", "path", "body", "who", "expected"), CASES)
def test_each_endpoint_answers_each_role_as_the_pages_do(world, method, path, body, who, expected):
    _, _, people = world
    client = Client() if who == "anonymous" else logged_in(people[who])
    response = send(client, method, path, body)
    assert response.status_code == expected, response.content[:300]
    if expected >= 400:
        assert response["Content-Type"] == PROBLEM


@pytest.mark.parametrize(("method", "path", "body", "statuses"), MATRIX)
def test_a_read_token_reads_and_is_refused_every_write(world, method, path, body, statuses):
    _, _, people = world
    _, raw = create_api_token(user=people["staff"], name="read", scope="read")
    response = send(bearer(raw), method, path, body)
    assert response.status_code == (statuses[0] if method == "get" else 403), response.content
    assert Project.objects.filter(slug="bot").exists()


@pytest.mark.parametrize(("method", "path", "body", "statuses"), MATRIX)
def test_a_token_of_another_project_finds_nothing_of_this_one(world, method, path, body, statuses):
    _, policy, people = world
    _, raw = create_api_token(user=people["staff"], name="policy", scope="write", project=policy)
    response = send(bearer(raw), method, path, body)
    if path == "/api/v1/projects/":  # the installation's list: its own project, no create
        assert response.status_code == (200 if method == "get" else 403)
        if method == "get":
            assert [p["slug"] for p in response.json()] == ["policy"]
        else:
            assert not Project.objects.filter(slug="rfp").exists()
    else:
        assert response.status_code == 404, response.content
    assert response["Content-Type"] == (
        PROBLEM if response.status_code >= 400 else "application/json"
    )


def test_a_write_token_of_the_project_manages_it(world):
    bot, _, people = world
    _, raw = create_api_token(user=people["owner"], name="bot", scope="write", project=bot)
    api = bearer(raw)
    assert send(api, "patch", BOT, {"name": "Bot"}).json()["name"] == "Bot"
    added = send(api, "post", BOT + "members/", {"username": "newcomer", "role": "annotator"})
    assert added.status_code == 201 and added["Location"] == BOT + "members/newcomer/"
    granted = AuditEvent.objects.filter(verb="project.member", project=bot).latest("pk")
    assert (granted.actor, granted.detail["role"]) == (people["owner"], "annotator")


# ---------------------------------------------------------------- projects


def test_an_installation_admin_creates_a_project_from_another_ones_policy(world):
    bot, _, people = world
    staff = people["staff"]
    update_project_settings(project=bot, changes={"KAPPA_GATE": "0.8"}, by=staff)
    domain = Domain.objects.create(project=bot, slug="support", name="Support")
    for version, body in ((1, "old rules"), (2, "rules in force")):
        GuidelineVersion.objects.create(
            domain=domain, task="answer_labeling", version=version, body=body, html=body,
            created_by=staff,
        )  # fmt: skip
    RoutingRules.objects.create(
        project=bot, version=1, gold_task_types=["factual_qa"],
        uncertainty_threshold=Decimal("0.300"), gold_domains=["support"], created_by=staff,
    )  # fmt: skip
    response = send(
        logged_in(staff),
        "post",
        "/api/v1/projects/",
        {"name": "Bot two", "slug": "bot-two", "description": "A copy.", "copy_from": "bot"},
    )
    assert response.status_code == 201, response.content
    assert response["Location"] == "/api/v1/projects/bot-two/"
    body = response.json()
    assert (body["slug"], body["name"], body["description"], body["role"]) == (
        "bot-two",
        "Bot two",
        "A copy.",
        "admin",
    )
    assert (body["archived"], body["archived_at"], body["api"]) == (
        False,
        None,
        "/api/v1/projects/bot-two/",
    )
    copy = Project.objects.get(slug="bot-two")
    assert copy.settings == {"KAPPA_GATE": "0.8"}
    assert ProjectMembership.objects.get(project=copy).user == staff
    guideline = GuidelineVersion.objects.get(domain__project=copy)
    assert (guideline.domain.slug, guideline.body, guideline.version) == (
        "support",
        "rules in force",
        1,
    )
    rules = RoutingRules.objects.get(project=copy)
    assert (rules.gold_domains, rules.uncertainty_threshold) == (["support"], Decimal("0.300"))
    verbs = list(
        AuditEvent.objects.filter(project=copy).order_by("pk").values_list("verb", flat=True)
    )
    assert verbs[:2] == ["project.create", "project.copy_policy"]
    assert send(logged_in(staff), "get", body["api"]).json()["slug"] == "bot-two"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"name": "X", "slug": "rfp", "colour": "red"}, 400, "colour"),
        ({"name": "X"}, 400, "slug"),
        ({"name": "x" * 201, "slug": "rfp"}, 400, "name"),
        ({"name": "X", "slug": "Has Spaces"}, 422, "slug"),
        ({"name": "X", "slug": "-rfp"}, 422, "slug"),
        ({"name": "X", "slug": "r" * 65}, 422, "slug"),
        ({"name": "X", "slug": "new"}, 422, "slug"),  # reserved: a URL of the API
        ({"name": "X", "slug": "bot"}, 422, "slug"),  # taken
        ({"name": "X", "slug": "rfp", "copy_from": "nowhere"}, 422, "copy_from"),
    ],
)
def test_a_bad_new_project_is_refused_naming_the_field(world, body, status, field):
    _, _, people = world
    before = Project.objects.count()
    response = send(logged_in(people["staff"]), "post", "/api/v1/projects/", body)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert Project.objects.count() == before


def test_the_projects_list_and_create_are_not_under_a_prefix(world):
    _, _, people = world
    client = logged_in(people["staff"])
    assert client.get(BOT + "projects/").status_code == 404
    created = send(client, "post", BOT + "projects/", {"name": "X", "slug": "nested"})
    assert created.status_code == 404 and not Project.objects.filter(slug="nested").exists()


def test_a_project_admin_renames_describes_archives_and_restores_the_project(world):
    bot, _, people = world
    client = logged_in(people["owner"])
    changed = send(client, "patch", BOT, {"name": "Customer bot v2", "description": "Bots."})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["name"], changed.json()["description"]) == ("Customer bot v2", "Bots.")
    update = AuditEvent.objects.get(verb="project.update", project=bot)
    assert update.actor == people["owner"]
    assert update.detail["after"] == {"name": "Customer bot v2", "description": "Bots."}
    # the fields not sent are kept; the same values again change and record nothing
    assert send(client, "patch", BOT, {"description": "Bots."}).json()["name"] == "Customer bot v2"
    assert AuditEvent.objects.filter(verb="project.update").count() == 1

    archived = send(client, "patch", BOT, {"archived": True}).json()
    assert archived["archived"] is True and archived["archived_at"]
    again = send(client, "patch", BOT, {"archived": True}).json()
    assert again["archived_at"] == archived["archived_at"]  # kept: archived once
    assert AuditEvent.objects.filter(verb="project.archive", project=bot).count() == 1
    assert client.get(BOT).json()["archived"] is True  # archived: still readable
    assert client.get(BOT + "members/").status_code == 200
    restored = send(client, "patch", BOT, {"archived": False}).json()
    assert (restored["archived"], restored["archived_at"]) == (False, None)
    assert AuditEvent.objects.filter(verb="project.restore", project=bot).count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "renamed"}, "slug"),  # the slug never changes: not a field
        ({"name": ""}, "name"),
        ({"name": "n" * 201}, "name"),
        ({"archived": "maybe"}, "archived"),
    ],
)
def test_a_bad_change_of_the_project_is_a_400_naming_the_field(world, body, field):
    bot, _, people = world
    response = send(logged_in(people["owner"]), "patch", BOT, body)
    assert response.status_code == 400, response.content
    assert [e["field"] for e in response.json()["errors"]] == [field]
    bot.refresh_from_db()
    assert (bot.slug, bot.name, bot.archived) == ("bot", "Customer bot", False)


def test_a_project_with_frozen_versions_or_data_is_not_deleted(world):
    bot, policy, people = world
    client = logged_in(people["staff"])
    GoldVersion.objects.create(project=bot, number=1, sealed=True)
    frozen = client.delete(BOT)
    assert frozen.status_code == 409 and frozen["Content-Type"] == PROBLEM
    assert "frozen gold versions" in frozen.json()["detail"]
    Domain.objects.create(project=policy, slug="kept", name="Kept")
    holding = client.delete("/api/v1/projects/policy/")
    assert holding.status_code == 409 and "holds data" in holding.json()["detail"]
    assert Project.objects.filter(slug__in=["bot", "policy"]).count() == 2
    assert not AuditEvent.objects.filter(verb="project.delete").exists()


def test_an_installation_admin_deletes_an_empty_project(world):
    bot, _, people = world
    response = logged_in(people["staff"]).delete(BOT)
    assert response.status_code == 204 and response.content == b""
    assert not Project.objects.filter(slug="bot").exists()
    assert not ProjectMembership.objects.filter(project_id=bot.pk).exists()
    event = AuditEvent.objects.get(verb="project.delete")
    assert (event.actor, event.object_id) == (people["staff"], "bot")
    assert logged_in(people["staff"]).get(BOT).status_code == 404


def test_without_a_prefix_the_project_is_the_default_one(admin_user):
    response = logged_in(admin_user).get(reverse("api:project"))
    assert response.status_code == 200
    assert (response.json()["slug"], response.json()["role"]) == ("default", "admin")
    assert reverse("api:project") == "/api/v1/"


# ---------------------------------------------------------------- settings


def test_the_settings_show_defaults_overrides_and_values_in_force(world, settings):
    bot, _, people = world
    settings.KAPPA_GATE = 0.65  # the installation's (environment) value
    update_project_settings(project=bot, changes={"AUDIT_SAMPLE_SEED": "77"}, by=people["owner"])
    rows = {r["name"]: r for r in logged_in(people["owner"]).get(BOT + "settings/").json()}
    assert "JOB_MAX_ATTEMPTS" not in rows  # installation-wide: not a project's
    seed = rows["AUDIT_SAMPLE_SEED"]
    assert (seed["own"], seed["value"], seed["overridden"]) == ("77", 77, True)
    assert seed["default"] != 77 and seed["doc"]
    gate = rows["KAPPA_GATE"]
    assert (gate["own"], gate["overridden"], gate["value"], gate["default"]) == (
        None,
        False,
        0.65,
        0.65,
    )
    policy = logged_in(people["staff"]).get("/api/v1/projects/policy/settings/").json()
    assert not any(r["overridden"] for r in policy)


def test_a_project_admin_sets_and_resets_settings_audited_as_on_the_page(world):
    bot, policy, people = world
    client = logged_in(people["owner"])
    response = send(
        client,
        "patch",
        BOT + "settings/",
        {"KAPPA_GATE": 0.82, "AUDIT_SAMPLE_SEED": "77", "CURATION_SOURCE_TARGETS": None},
    )
    assert response.status_code == 200, response.content
    rows = {r["name"]: r for r in response.json()}
    assert (rows["KAPPA_GATE"]["own"], rows["KAPPA_GATE"]["value"]) == ("0.82", 0.82)
    bot.refresh_from_db()
    assert bot.settings == {"KAPPA_GATE": "0.82", "AUDIT_SAMPLE_SEED": "77"}
    changes = ProjectSettingChange.objects.filter(project=bot).order_by("name")
    assert [(c.name, c.old_value, c.new_value, c.changed_by) for c in changes] == [
        ("AUDIT_SAMPLE_SEED", None, "77", people["owner"]),
        ("KAPPA_GATE", None, "0.82", people["owner"]),
    ]
    event = AuditEvent.objects.get(verb="project.settings", project=bot)
    assert event.detail["KAPPA_GATE"] == {"old": None, "new": "0.82"}
    reset = send(client, "patch", BOT + "settings/", {"KAPPA_GATE": None, "AUDIT_SAMPLE_SEED": ""})
    assert reset.status_code == 200
    bot.refresh_from_db()
    assert bot.settings == {}
    assert ProjectSettingChange.objects.filter(project=bot, new_value__isnull=True).count() == 2
    policy.refresh_from_db()
    assert policy.settings == {}


def test_a_json_object_setting_is_taken_as_an_object(world):
    bot, _, people = world
    targets = {"public_rfp": 50, "customer_permissioned": 25, "synthetic": 25}
    response = send(
        logged_in(people["owner"]), "patch", BOT + "settings/", {"CURATION_SOURCE_TARGETS": targets}
    )
    assert response.status_code == 200, response.content
    row = next(r for r in response.json() if r["name"] == "CURATION_SOURCE_TARGETS")
    assert row["value"] == targets and json.loads(row["own"]) == targets


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_RATE": "1.5"}, "AUDIT_SAMPLE_RATE", "a rate"),
        ({"KAPPA_GATE": "high"}, "KAPPA_GATE", "a number"),
        ({"GOLD_REVIEWS_PER_TRIPLE": 7}, "GOLD_REVIEWS_PER_TRIPLE", "a count of reviewers"),
        ({"KAPPA_GATES": "0.8"}, "KAPPA_GATES", "unknown"),
        ({"JOB_MAX_ATTEMPTS": "3"}, "JOB_MAX_ATTEMPTS", "installation-wide"),
    ],
)
def test_a_refused_setting_is_a_422_naming_it_and_nothing_is_saved(world, body, field, rule):
    bot, _, people = world
    response = send(logged_in(people["owner"]), "patch", BOT + "settings/", body)
    assert response.status_code == 422, response.content
    assert response["Content-Type"] == PROBLEM
    problem = response.json()
    assert [e["field"] for e in problem["errors"]] == [field]
    assert rule in problem["detail"] and problem["detail"].startswith(f"{field}: must be")
    bot.refresh_from_db()
    assert bot.settings == {}
    assert not ProjectSettingChange.objects.exists()


def test_a_settings_body_that_is_not_an_object_is_a_400(world):
    _, _, people = world
    response = send(logged_in(people["owner"]), "patch", BOT + "settings/", ["KAPPA_GATE"])
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM


# ---------------------------------------------------------------- members


def test_a_project_admin_adds_reads_changes_and_removes_a_member(world):
    bot, _, people = world
    client = logged_in(people["owner"])
    listed = client.get(BOT + "members/").json()
    assert [(m["username"], m["role"]) for m in listed] == [
        ("annotator", "annotator"),
        ("lead", "adjudication_lead"),
        ("owner", "admin"),
        ("staff", "admin"),
    ]
    added = send(client, "post", BOT + "members/", {"username": "newcomer", "role": "annotator"})
    assert added.status_code == 201, added.content
    assert added["Location"] == BOT + "members/newcomer/"
    newcomer = people["newcomer"]
    assert added.json() == {
        "id": newcomer.pk,
        "username": "newcomer",
        "role": "annotator",
        "created_at": added.json()["created_at"],
    }
    assert ProjectMembership.objects.get(project=bot, user=newcomer).role == "annotator"
    # now a member: they reach the project (roles are read per request)
    assert logged_in(newcomer).get(BOT).json()["role"] == "annotator"
    # posting again sets the role (200), as the page's form does
    again = send(client, "post", BOT + "members/", {"username": "newcomer", "role": "admin"})
    assert (again.status_code, again.json()["role"]) == (200, "admin")
    by_id = client.get(f"{BOT}members/{newcomer.pk}/")
    assert by_id.json()["username"] == "newcomer"
    changed = send(client, "patch", f"{BOT}members/{newcomer.pk}/", {"role": "adjudication_lead"})
    assert (changed.status_code, changed.json()["role"]) == (200, "adjudication_lead")
    events = AuditEvent.objects.filter(verb="project.member", object_id=str(newcomer.pk))
    assert [e.detail["role"] for e in events.order_by("pk")] == [
        "annotator",
        "admin",
        "adjudication_lead",
    ]
    assert all(e.project_id == bot.pk and e.actor == people["owner"] for e in events)
    removed = client.delete(BOT + "members/newcomer/")
    assert removed.status_code == 204
    assert not ProjectMembership.objects.filter(project=bot, user=newcomer).exists()
    gone = AuditEvent.objects.get(verb="project.member_removed", object_id=str(newcomer.pk))
    assert (gone.detail["project"], gone.detail["role"]) == ("bot", "adjudication_lead")
    assert client.get(BOT + "members/newcomer/").status_code == 404
    assert logged_in(newcomer).get(BOT).status_code == 404


def test_a_username_that_is_a_number_wins_over_a_user_id(world):
    bot, _, people = world
    numbered = UserFactory(username=str(people["lead"].pk))
    grant_role(project=bot, user=numbered, role=Role.ANNOTATOR)
    got = logged_in(people["owner"]).get(f"{BOT}members/{people['lead'].pk}/").json()
    assert (got["id"], got["role"]) == (numbered.pk, "annotator")


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"username": "ghost", "role": "annotator"}, 422, "username"),
        ({"username": "newcomer", "role": "owner"}, 400, "role"),
        ({"username": "newcomer"}, 400, "role"),
        ({"username": "newcomer", "role": "annotator", "domain": "x"}, 400, "domain"),
    ],
)
def test_a_bad_member_is_refused_naming_the_field(world, body, status, field):
    bot, _, people = world
    response = send(logged_in(people["owner"]), "post", BOT + "members/", body)
    assert response.status_code == status, response.content
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert ProjectMembership.objects.filter(project=bot).count() == 4  # as before


def test_an_inactive_person_cannot_be_added(world):
    _, _, people = world
    people["newcomer"].is_active = False
    people["newcomer"].save()
    body = {"username": "newcomer", "role": "annotator"}
    response = send(logged_in(people["owner"]), "post", BOT + "members/", body)
    assert response.status_code == 422


def test_a_project_keeps_its_last_admin(world):
    bot, _, people = world
    client = logged_in(people["staff"])
    assert client.delete(BOT + "members/owner/").status_code == 204
    last = client.delete(BOT + "members/staff/")
    assert last.status_code == 409 and last["Content-Type"] == PROBLEM
    assert "at least one admin" in last.json()["detail"]
    assert ProjectMembership.objects.filter(project=bot, role="admin").count() == 1


@pytest.mark.parametrize("role", ["annotator", "adjudication_lead"])
def test_the_last_admin_is_not_demoted_through_the_api_either(world, role):
    """As the removal: a PATCH or a POST giving the last admin another role is a 409 naming
    the rule, and the role stays; with a second admin the same change is made."""
    bot, _, people = world
    client = logged_in(people["staff"])
    assert client.delete(BOT + "members/owner/").status_code == 204
    before = AuditEvent.objects.filter(verb="project.member").count()
    for method, url, body in (
        ("patch", BOT + "members/staff/", {"role": role}),
        ("post", BOT + "members/", {"username": "staff", "role": role}),
    ):
        refused = send(client, method, url, body)
        assert refused.status_code == 409 and refused["Content-Type"] == PROBLEM, method
        assert "at least one admin" in refused.json()["detail"]
        assert ProjectMembership.objects.get(project=bot, user=people["staff"]).role == "admin"
    assert AuditEvent.objects.filter(verb="project.member").count() == before
    assert client.get(BOT + "settings/").status_code == 200  # still their project's admin

    grant_role(project=bot, user=people["owner"], role=Role.ADMIN)
    demoted = send(client, "patch", BOT + "members/staff/", {"role": role})
    assert (demoted.status_code, demoted.json()["role"]) == (200, role)
    assert list(
        ProjectMembership.objects.filter(project=bot, role="admin").values_list(
            "user__username", flat=True
        )
    ) == ["owner"]


def test_the_members_page_refuses_to_demote_the_last_admin_with_a_422(world):
    bot, _, people = world
    client = logged_in(people["owner"])
    assert client.post(f"/p/bot/project/members/{people['staff'].pk}/remove/").status_code == 302
    refused = client.post("/p/bot/project/members/", {"username": "owner", "role": "annotator"})
    assert refused.status_code == 422
    body = refused.content.decode()
    assert "A project keeps at least one admin." in body
    errors = refused.context["form"].errors
    assert errors == {"role": ["A project keeps at least one admin."]}
    assert ProjectMembership.objects.get(project=bot, user=people["owner"]).role == "admin"
    assert client.get("/p/bot/project/members/").status_code == 200  # still the admin


def test_the_last_admin_check_is_the_services_for_page_api_and_scripts(world):
    """One home: grant_role itself refuses (a script, the demo, SCIM call it)."""
    bot, _, people = world
    remove_member(project=bot, user=people["owner"])
    with pytest.raises(ProjectRefused, match="at least one admin"):
        grant_role(project=bot, user=people["staff"], role=Role.LEAD)
    assert ProjectMembership.objects.get(project=bot, user=people["staff"]).role == "admin"
    assert grant_role(project=bot, user=people["staff"], role=Role.ADMIN).role == "admin"


def test_a_member_of_another_project_is_no_member_here(world):
    _, _, people = world
    client = logged_in(people["owner"])
    assert client.get(BOT + "members/outsider/").status_code == 404
    assert client.get(f"{BOT}members/{people['outsider'].pk}/").status_code == 404
    patched = send(client, "patch", BOT + "members/outsider/", {"role": "annotator"})
    assert patched.status_code == 404
    assert client.delete(BOT + "members/outsider/").status_code == 404
    assert ProjectMembership.objects.get(user=people["outsider"]).role == "admin"


# ---------------------------------------------------------------- one home: page and API


def _stored(project: Project) -> dict:
    """What a project's creation stores, named so that two projects compare."""
    return {
        "name": project.name,
        "description": project.description,
        "settings": project.settings,
        "members": sorted(project.memberships.values_list("user__username", "role")),
        "domains": sorted(Domain.objects.filter(project=project).values_list("slug", "name")),
        "guidelines": sorted(
            GuidelineVersion.objects.filter(domain__project=project).values_list(
                "domain__slug", "task", "version", "body", "note"
            )
        ),
        "routing": list(
            RoutingRules.objects.filter(project=project).values_list(
                "version", "gold_task_types", "gold_domains", "uncertainty_threshold", "note"
            )
        ),
        "audit": sorted(AuditEvent.objects.filter(project=project).values_list("verb", flat=True)),
    }


def test_the_page_and_the_api_create_the_same_project(world):
    bot, _, people = world
    staff = people["staff"]
    update_project_settings(project=bot, changes={"KAPPA_GATE": "0.8"}, by=staff)
    domain = Domain.objects.create(project=bot, slug="support", name="Support")
    GuidelineVersion.objects.create(
        domain=domain, task="answer_labeling", version=1, body="b", html="b", created_by=staff
    )
    client = logged_in(staff)
    page = client.post(
        reverse("projects:create"),
        {"name": "Copy", "slug": "by-page", "description": "d", "copy_from": bot.pk},
    )
    assert page.status_code == 302, page.content[:300]
    api = send(
        client,
        "post",
        "/api/v1/projects/",
        {"name": "Copy", "slug": "by-api", "description": "d", "copy_from": "bot"},
    )
    assert api.status_code == 201
    by_page = _stored(Project.objects.get(slug="by-page"))
    assert by_page == _stored(Project.objects.get(slug="by-api"))
    assert by_page["settings"] == {"KAPPA_GATE": "0.8"} and by_page["guidelines"]


def test_the_page_and_the_api_store_the_same_settings_and_members(world):
    bot, policy, people = world
    staff = people["staff"]
    client = logged_in(staff)
    values = {"KAPPA_GATE": "0.82", "AUDIT_SAMPLE_SEED": "77"}
    page = client.post("/p/bot/project/settings/protocol/", values)
    assert page.status_code == 302
    assert send(client, "patch", "/api/v1/projects/policy/settings/", values).status_code == 200
    page_member = client.post("/p/bot/project/members/", {"username": "newcomer", "role": "admin"})
    assert page_member.status_code == 302
    api_member = send(
        client,
        "post",
        "/api/v1/projects/policy/members/",
        {"username": "newcomer", "role": "admin"},
    )
    assert api_member.status_code == 201
    bot.refresh_from_db()
    policy.refresh_from_db()
    assert bot.settings == policy.settings == values

    def history(project):
        return sorted(
            ProjectSettingChange.objects.filter(project=project).values_list(
                "name", "old_value", "new_value", "changed_by"
            )
        )

    assert history(bot) == history(policy)
    member = ProjectMembership.objects.filter(user=people["newcomer"])
    assert sorted(member.values_list("project__slug", "role")) == [
        ("bot", "admin"),
        ("policy", "admin"),
    ]
    for verb in ("project.settings", "project.member"):
        details = [
            AuditEvent.objects.filter(verb=verb, project=p).latest("pk").detail
            for p in (bot, policy)
        ]
        mine = [{k: v for k, v in d.items() if k not in ("project", "address")} for d in details]
        assert mine[0] == mine[1], verb


def test_the_page_and_the_api_refuse_the_same_setting_with_the_same_words(world):
    _, _, people = world
    client = logged_in(people["owner"])
    page = client.post("/p/bot/project/settings/protocol/", {"AUDIT_SAMPLE_RATE": "1.5"})
    api = send(client, "patch", BOT + "settings/", {"AUDIT_SAMPLE_RATE": "1.5"})
    assert (page.status_code, api.status_code) == (422, 422)
    assert api.json()["detail"] in page.content.decode()


# ---------------------------------------------------------------- schema


def test_the_schema_documents_the_project_operations(client):
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    expected = {
        ("/api/v1/projects/", "get"): "projects_list",
        ("/api/v1/projects/", "post"): "projects_create",
        ("/api/v1/", "get"): "projects_retrieve",
        ("/api/v1/", "patch"): "projects_partial_update",
        ("/api/v1/", "delete"): "projects_destroy",
        ("/api/v1/settings/", "get"): "projects_settings_retrieve",
        ("/api/v1/settings/", "patch"): "projects_settings_partial_update",
        ("/api/v1/members/", "get"): "projects_members_list",
        ("/api/v1/members/", "post"): "projects_members_create",
        ("/api/v1/members/{member}/", "get"): "projects_members_retrieve",
        ("/api/v1/members/{member}/", "patch"): "projects_members_partial_update",
        ("/api/v1/members/{member}/", "delete"): "projects_members_destroy",
    }
    for (path, method), operation_id in expected.items():
        operation = paths[path][method]
        assert operation["operationId"] == operation_id
        assert operation["tags"] == ["projects"]
    created = paths["/api/v1/projects/"]["post"]["responses"]["201"]
    assert {"Location", "Idempotent-Replayed"} <= set(created["headers"])
    assert "Idempotency-Key" in {p["name"] for p in paths["/api/v1/members/"]["post"]["parameters"]}
    for path in ("/api/v1/", "/api/v1/members/{member}/"):
        assert PROBLEM in paths[path]["delete"]["responses"]["409"]["content"]
    settings_body = paths["/api/v1/settings/"]["patch"]["requestBody"]["content"]
    ref = settings_body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert "KAPPA_GATE" in schema["components"]["schemas"][ref]["properties"]
    assert "`settings/`" in schema["info"]["description"]


def test_an_idempotent_create_creates_once(world):
    _, _, people = world
    client = logged_in(people["staff"])
    body = json.dumps({"name": "Once", "slug": "once"})
    first = client.post(
        "/api/v1/projects/", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    again = client.post(
        "/api/v1/projects/", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert (first.status_code, again.status_code) == (201, 201)
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert Project.objects.filter(slug="once").count() == 1
