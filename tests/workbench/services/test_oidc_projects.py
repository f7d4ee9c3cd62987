"""OIDC roles per project (issue 27): ``OIDC_ROLE_MAP`` pairs ``value:role`` (the default
project, as before) and ``value:project-slug:role`` (that project). At each sign-in the
memberships of every project the map names follow the claims: granted, changed, or removed
where the mapped value disappeared; other projects' memberships are left alone. Scripted
through the test identity provider (tests/oidc_provider) and at the service."""

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from goldset.models import Project, ProjectMembership
from goldset.services.projects import grant_role
from tests.factories import default_project
from workbench.models import AuditEvent
from workbench.roles import (
    Role,
    mapped_project_slugs,
    parse_role_map,
    project_roles_from_claims,
    role_from_claims,
)
from workbench.services.accounts import SignInRefused, sign_in_with_provider

MAP_TEXT = (
    "goldset-leads:lead,gs-cust-annot:customer-bot:annotator,gs-cust-lead:customer-bot:lead,"
    "gs-rfp:rfp:admin,urn:acme:groups:qa:adjudication_lead,gs-gone:no-such-project:admin"
)
MAP = parse_role_map(MAP_TEXT)


def test_a_pair_may_name_a_project_and_a_plain_pair_is_the_default_projects():
    assert MAP["gs-cust-annot:customer-bot"] == Role.ANNOTATOR
    claims = {"groups": ["gs-cust-annot", "gs-cust-lead", "urn:acme:groups:qa"]}
    assert project_roles_from_claims(claims, claim="groups", role_map=MAP) == {
        "customer-bot": Role.LEAD,  # the strongest of the project's values
    }
    assert role_from_claims(claims, claim="groups", role_map=MAP) == Role.LEAD  # the URN value
    assert role_from_claims({"groups": ["gs-cust-annot"]}, claim="groups", role_map=MAP) is None
    assert {"customer-bot", "rfp", "no-such-project"} <= mapped_project_slugs(MAP)


@pytest.fixture
def projects(db):
    return {
        "customer-bot": Project.objects.create(name="Customer bot", slug="customer-bot"),
        "rfp": Project.objects.create(name="RFP", slug="rfp"),
        "manual": Project.objects.create(name="Managed by hand", slug="manual"),
    }


def sign_in(groups, subject="sub-p1"):
    claims = {"preferred_username": "pat", "groups": groups}
    return sign_in_with_provider(
        issuer="https://idp.example.org",
        subject=subject,
        claims=claims,
        role=role_from_claims(claims, claim="groups", role_map=MAP),
        provider="Acme SSO",
        values=groups,
        project_roles=project_roles_from_claims(claims, claim="groups", role_map=MAP),
        mapped_projects=mapped_project_slugs(MAP),
    )


def held(user) -> dict:
    return dict(ProjectMembership.objects.filter(user=user).values_list("project__slug", "role"))


def test_each_sign_in_sets_the_mapped_projects_memberships_and_leaves_others(projects):
    pat = sign_in(["gs-cust-annot", "gs-rfp"])
    assert held(pat) == {"customer-bot": "annotator", "rfp": "admin"}
    assert not pat.is_staff  # an admin of a project is not an installation admin
    grant_role(project=projects["manual"], user=pat, role=Role.LEAD)  # on its members page

    pat = sign_in(["gs-cust-lead", "goldset-leads"])  # rfp's value is gone, a lead in B now
    assert held(pat) == {
        "customer-bot": "adjudication_lead",
        "default": "adjudication_lead",
        "manual": "adjudication_lead",
    }
    changed = AuditEvent.objects.filter(verb="role_changed").order_by("id").last()
    assert changed.detail["projects"] == {
        "from": {"customer-bot": "annotator", "rfp": "admin"},
        "to": {"customer-bot": "adjudication_lead"},
    }

    with pytest.raises(SignInRefused):  # no mapped value left: refused, mapped roles withdrawn
        sign_in(["marketing"])
    assert held(get_user_model().objects.get(pk=pat.pk)) == {"manual": "adjudication_lead"}


def test_a_map_naming_only_a_missing_project_gives_no_role(projects):
    with pytest.raises(SignInRefused):
        sign_in(["gs-gone"], subject="sub-p2")


@pytest.mark.django_db
def test_a_real_sign_in_grants_the_projects_the_providers_groups_name(
    settings, oidc_provider, client
):
    """The authorization-code flow against the test provider, scripted (as in
    test_oidc_token_claims): the groups claim names a project; the member then reaches that
    project's pages and not the default project's."""
    for name, value in oidc_provider.workbench_settings().items():
        setattr(settings, name, value)
    settings.OIDC_ROLE_MAP = "goldset-leads:lead,gs-cust-annot:customer-bot:annotator"
    settings.AUTHENTICATION_BACKENDS = [
        "workbench.auth.ThrottledModelBackend",
        "workbench.auth.RoleMappingOIDCBackend",
    ]
    project = Project.objects.create(name="Customer bot", slug="customer-bot")
    oidc_provider.register_client("http://testserver/oidc/callback/")

    def sign_in_as(username, groups):
        oidc_provider.set_user(username, "idp-pass-1", groups=groups)
        browser = Client()
        start = browser.get(reverse("oidc_authentication_init"))
        with httpx.Client(follow_redirects=False, timeout=30) as idp:
            to_login = idp.get(start["Location"])
            login_url = httpx.URL(start["Location"]).join(to_login.headers["location"])
            form = idp.get(login_url)
            token = form.cookies.get("idp_csrftoken") or idp.cookies.get("idp_csrftoken")
            back = idp.post(
                login_url,
                data={
                    "username": username,
                    "password": "idp-pass-1",
                    "csrfmiddlewaretoken": token,
                    "next": login_url.params["next"],
                },
                headers={"Referer": str(login_url)},
            )
            authorize = idp.get(login_url.join(back.headers["location"]))
            callback = httpx.URL(authorize.headers["location"])
        done = browser.get(f"{callback.path}?{callback.query.decode()}")
        assert done.status_code == 302, done.content[:500]
        return browser

    browser = sign_in_as("quinn", ["gs-cust-annot"])
    quinn = get_user_model().objects.get(username="quinn")
    assert held(quinn) == {"customer-bot": "annotator"}
    assert browser.get("/p/customer-bot/").status_code == 200
    assert browser.get(reverse("corpus:documents")).status_code == 404  # not in the default
    assert ProjectMembership.objects.filter(project=default_project(), user=quinn).count() == 0

    sign_in_as("quinn", ["goldset-leads"])  # the project's group is gone at the provider
    assert held(quinn) == {"default": "adjudication_lead"}
    assert not ProjectMembership.objects.filter(project=project, user=quinn).exists()
