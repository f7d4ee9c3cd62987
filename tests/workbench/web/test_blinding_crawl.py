"""The adversarial crawl, as a test, in each project of the demo (issue 27: "the blinding suite
runs per project"): on the seeded demo — the default project and the second project
``policy-assistant`` — with canary system, run, model, config, prompt-hash, latency and cost
values planted in each project's systems, runs and answer records, every page, htmx fragment
and download that the project's annotators and its lead can reach under ``/p/<slug>/``
(following links, and every entry of the access table their roles *in that project* hold) is
fetched, and none may contain a system or run identifier; annotators never see another
annotator's name; a lead never sees labelers' names beside their labels (adjudication pages)
nor any person's name or key in a download. The demo is seeded once for the module; each
project is crawled by its own members. (That project A's pages show nothing of project B is
tests/workbench/web/test_projects_crawl.py.)"""

import re
from collections import deque
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, Resolver404, resolve, reverse

from goldset.models import Review, Triple
from goldset.selectors.projects import access_project
from tests.goldset.blinding_support import (
    ANNOTATOR_NAMES,
    CANARY_COST,
    CANARY_LATENCY,
    PROJECTS,
    canary_demo_data,
    hits,
    names,
)
from workbench.access import ACCESS, Kind

pytestmark = pytest.mark.django_db

# absolute paths and query-only links ("?show=all", "?page=2"), resolved against the page
LINK = re.compile(r'(?:href|hx-get)="([/?][^"#]*)"')
SKIP = ("/static/", "/django-admin/", "/logout/")
PER_VIEW = 4  # distinct URLs fetched per view name (item pages, ?page=, filters)
# Pages of one triple that show its resolved reviews, reviewers named, to the parties of the
# curation protocol (DESIGN.md §5: the author and a flagging reviewer discuss; see
# goldset.selectors.curation.may_discuss). There the triple's own reviewers may be named to its
# author; every other annotator's name is still a leak.
TRIPLE_PAGES = {"curation:triple", "curation:revise", "curation:split"}


# Seeded once for the module's tests (tests/goldset/blinding_support.py; each crawls in a
# savepoint, rolled back after it).
@pytest.fixture(scope="module")
def canary_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    with canary_demo_data(django_db_blocker, tmp_path_factory.mktemp("crawl")) as canaries:
        yield canaries


def _mounted(slug: str, path: str) -> str:
    """``path`` (from ``reverse``, unmounted) inside project ``slug``."""
    return f"/p/{slug}{path}"


def _unmounted(url: str, slug: str) -> str | None:
    """The path under project ``slug``'s mount, or None for a URL outside it."""
    path = urlsplit(url).path
    prefix = f"/p/{slug}/"
    return "/" + path[len(prefix) :] if path.startswith(prefix) else None


def _crawl(client: Client, slug: str, roles: frozenset[str]) -> dict[str, tuple[str, str]]:
    """Fetch everything reachable inside project ``slug`` (under ``/p/<slug>/``): {url: (view
    name, body)} including fragments. Seeds: the project's home and every page and download of
    the access table the caller's roles in the project hold."""
    seeds = [f"/p/{slug}/"]
    for name, entry in ACCESS.items():
        if entry.scoped and entry.roles and entry.roles & roles:
            if entry.kind in (Kind.PAGE, Kind.DOWNLOAD):
                try:
                    seeds.append(_mounted(slug, reverse(name)))
                except NoReverseMatch:
                    continue  # takes an object's key: reached by following links
    queue, seen, per_view, bodies = deque(seeds), set(), {}, {}
    while queue:
        url = queue.popleft()
        if url in seen or url.startswith(SKIP):
            continue
        seen.add(url)
        inner = _unmounted(url, slug)
        if inner is None:
            continue  # outside the project (the projects home, another project)
        try:
            match = resolve(inner)
        except Resolver404:
            continue
        entry = ACCESS.get(match.view_name)
        if entry is None or entry.kind not in (Kind.PAGE, Kind.DOWNLOAD) or not entry.scoped:
            continue
        if per_view.get(match.view_name, 0) >= PER_VIEW:
            continue
        per_view[match.view_name] = per_view.get(match.view_name, 0) + 1
        response = client.get(url)
        assert response.status_code < 500, f"{url} answered {response.status_code}"
        body = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode("utf-8", "replace")
        bodies[url] = (match.view_name, body)
        for fragment in entry.fragments:
            part = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=fragment)
            assert part.status_code < 500
            bodies[f"{url} #{fragment}"] = (match.view_name, part.content.decode())
        if response.status_code == 200 and "html" in response.get("Content-Type", ""):
            for link in LINK.findall(body):
                queue.append(urljoin(url, link.replace("&amp;", "&")))
    return bodies


def _member(slug: str, username: str) -> tuple[Client, frozenset[str]]:
    """A client signed in as ``username`` and the roles the person holds in project ``slug``."""
    user = get_user_model().objects.get(username=username)
    client = Client()
    client.force_login(user)
    return client, access_project(user=user, slug=slug).roles


@pytest.mark.parametrize(
    ("slug", "username"),
    [(slug, name) for slug, crew in PROJECTS.items() for name in crew["annotators"]],
)
def test_annotators_reach_no_system_run_or_other_annotator(canary_demo, slug, username):
    client, roles = _member(slug, username)
    assert roles == {"annotator"}, roles  # an annotator in this project
    others = [name for name in ANNOTATOR_NAMES if name != username]
    bodies = _crawl(client, slug, roles)
    assert len(bodies) >= 20, sorted(bodies)
    views = {view for view, _ in bodies.values()}
    assert {"answers:queue", "curation:queue", "corpus:documents"} <= views
    for url, (view, body) in bodies.items():
        assert not hits(body, canary_demo), (url, hits(body, canary_demo))
        identity = names(sorted(set(others) - _parties(view, url, slug, username)))
        assert not identity.search(body), (url, identity.search(body).group(0))


def _parties(view: str, url: str, slug: str, username: str) -> set[str]:
    """The reviewers of the triple a triple page shows when ``username`` is its author."""
    if view not in TRIPLE_PAGES:
        return set()
    page = url.split(" #")[0]  # a fragment's key names its page
    triple = Triple.objects.get(pk=resolve(_unmounted(page, slug)).kwargs["pk"])
    if triple.author.username != username:
        return set()
    return set(
        Review.objects.filter(revision__triple=triple).values_list("reviewer__username", flat=True)
    )


@pytest.mark.parametrize("slug", sorted(PROJECTS))
def test_a_lead_reaches_no_system_or_run_and_no_labeler_identity(canary_demo, slug):
    crew = PROJECTS[slug]
    client, roles = _member(slug, crew["lead"])
    assert roles == {"adjudication_lead"}, roles  # the lead in this project
    bodies = _crawl(client, slug, roles)
    assert len(bodies) >= 40, sorted(bodies)
    views = {view for view, _ in bodies.values()}
    assert {"answers:adjudicate", "exports:download", "quality:agreement"} <= views, views
    downloads = [u for u, (v, _) in bodies.items() if ACCESS[v].kind == Kind.DOWNLOAD]
    assert any("/download/adjudication/" in u for u in downloads), downloads
    # the canaries are planted where the project's admins see them: the crawl would notice
    admin, _ = _member(slug, crew["admin"])
    assert "CANARYSYS" in admin.get(_mounted(slug, "/answers/runs/")).content.decode()
    identity = names(ANNOTATOR_NAMES)
    person_key = re.compile(r"reviewer-\d+")
    for url, (view, body) in bodies.items():
        assert not hits(body, canary_demo), (url, hits(body, canary_demo))
        if view.startswith("answers:adjudicat") or ACCESS[view].kind == Kind.DOWNLOAD:
            if view.startswith("quality:"):
                continue  # the agreement dashboard's tables name annotators (the protocol allows)
            assert not identity.search(body), (url, identity.search(body).group(0))
            assert not person_key.search(body), url


def test_a_numeric_canary_is_found_as_a_number_not_inside_another():
    needles = {str(CANARY_LATENCY), str(CANARY_COST), "CANARYSYS"}
    assert hits('{"latency_ms": 9876543}', needles) == ["9876543"]
    assert hits("<td>9876543.0 ms</td><td>$0.918273</td>", needles) == ["0.918273", "9876543"]
    assert hits('{"ci": [0.509876543, 19876543, 0.9182731]}', needles) == []
    assert hits("xCANARYSYS12Q", needles) == ["CANARYSYS"]
