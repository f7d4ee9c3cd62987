"""The client's ``project=`` (issue 27): every call goes under ``/api/v1/projects/<slug>/``
(cursor pages too), ``list_projects`` names the caller's projects wherever the client points,
and a project the token does not reach is ``NotFound``."""

import asyncio

import pytest
from django.core.cache import cache
from goldset_client import AsyncGoldsetClient, GoldsetClient, NotFound
from goldset_client._operations import api_prefix

from goldset.models import Domain, Project
from goldset.services.projects import grant_role
from tests.factories import DocumentFactory, UserFactory, default_project
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token


def test_the_prefix_names_the_project_and_refuses_a_path():
    assert api_prefix("https://gs.example.org", None) == "https://gs.example.org/api/v1/"
    assert api_prefix("https://gs.example.org", "customer-bot") == (
        "https://gs.example.org/api/v1/projects/customer-bot/"
    )
    for bad in ("", "a/b", " / "):
        with pytest.raises(ValueError):
            api_prefix("https://gs.example.org", bad)


@pytest.fixture
def two_projects(transactional_db, settings):
    settings.API_TOKEN_RATE = "100000/min"
    cache.clear()
    project = Project.objects.create(name="Customer bot", slug="customer-bot")
    domain = Domain.objects.create(project=project, slug="bot", name="Bot")
    for n in (1, 2, 3):
        DocumentFactory(project=project, domain=domain, document_id=f"bot-{n}", title=f"B{n}")
    DocumentFactory(document_id="default-1")
    user = UserFactory(username="two")
    grant_role(project=default_project(), user=user, role=Role.LEAD)
    grant_role(project=project, user=user, role=Role.ANNOTATOR)
    _, everywhere = create_api_token(user=user, name="all")
    _, default_only = create_api_token(user=user, name="a", project=default_project())
    return {"all": everywhere, "default": default_only}


@pytest.mark.postgres
def test_a_client_for_a_project_reads_that_projects_objects_across_pages(two_projects, live_server):
    with GoldsetClient(live_server.url, two_projects["all"], project="customer-bot") as gs:
        documents = [d.document_id for d in gs.list_documents(page_size=1)]
        assert documents == ["bot-1", "bot-2", "bot-3"]
        assert gs.get_document("bot-2").title == "B2"
        assert sorted((p.slug, p.role) for p in gs.list_projects()) == [
            ("customer-bot", "annotator"),
            ("default", "adjudication_lead"),
        ]
    with GoldsetClient(live_server.url, two_projects["all"]) as gs:
        assert [d.document_id for d in gs.list_documents()] == ["default-1"]
        with pytest.raises(NotFound):
            gs.get_document("bot-1")


@pytest.mark.postgres
def test_a_token_of_another_project_is_not_found(two_projects, live_server):
    with GoldsetClient(live_server.url, two_projects["default"], project="customer-bot") as gs:
        with pytest.raises(NotFound):
            list(gs.list_documents())
        assert [p.slug for p in gs.list_projects()] == ["default"]


@pytest.mark.postgres
def test_the_async_client_takes_a_project_too(two_projects, live_server):
    async def run():
        async with AsyncGoldsetClient(
            live_server.url, two_projects["all"], project="customer-bot"
        ) as gs:
            return [d.document_id async for d in gs.list_documents(page_size=2)]

    assert asyncio.run(run()) == ["bot-1", "bot-2", "bot-3"]
