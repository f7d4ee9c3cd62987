"""The adversarial crawl, as a test: on the seeded demo with canary system, run, model, config,
prompt-hash, latency and cost values planted, every page, htmx fragment and download that the
annotator, the author and the lead can reach (following links, and every entry of the access
table they hold) is fetched, and none may contain a system or run identifier; annotators never
see another annotator's name; a lead never sees labelers' names beside their labels (adjudication
pages) nor any person's name or key in a download."""

import re
from collections import deque
from decimal import Decimal
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, TestCase
from django.urls import Resolver404, resolve

from goldset.models import AnswerRecord, Run, System
from goldset.rules.blinding import SYSTEM_FIELDS
from tests.conftest import shared_test_data
from workbench.access import ACCESS, Kind
from workbench.roles import roles_of

pytestmark = pytest.mark.django_db

LINK = re.compile(r'(?:href|hx-get)="(/[^"#]*)"')
SKIP = ("/static/", "/django-admin/", "/logout/")
PER_VIEW = 4  # distinct URLs fetched per view name (item pages, ?page=, filters)
CANARY_LATENCY = 987_654_3
CANARY_COST = Decimal("0.918273")


# Seeded once for the module's tests (each crawls in a savepoint, rolled back after it): the
# seeding costs more than a crawl, and the tests only read.
@pytest.fixture(scope="module")
def canary_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    with shared_test_data(django_db_blocker):
        with django_db_blocker.unblock():
            canaries = _plant_canaries(tmp_path_factory.mktemp("crawl"))
        yield canaries


def _plant_canaries(tmp_path):
    with TestCase.captureOnCommitCallbacks(execute=True):
        call_command("seed_demo", password="crawl-demo-pass-1", credentials_file=tmp_path / "c.txt")
    original = set(System.objects.values_list("system_id", flat=True)) | set(
        Run.objects.values_list("run_id", flat=True)
    )
    for system in System.objects.all():
        system.system_id = f"CANARYSYS{system.pk}Q"
        system.config = {"retriever": "CANARYCONFIG", "k": 7}
        system.save(update_fields=["system_id", "config"])
    for run in Run.objects.all():
        run.run_id = f"CANARYRUN{run.pk}Q"
        run.save(update_fields=["run_id"])
    AnswerRecord.objects.update(
        model={"generator": "CANARYMODEL-gen", "temperature": 0},
        extra={"prompt_hash": "CANARYHASH0f0f"},
        latency_ms=CANARY_LATENCY,
        cost_usd=CANARY_COST,
    )
    # every system field of these models (the list in goldset.rules.blinding) carries a canary
    planted = {
        System: {"system_id", "config"},
        Run: {"run_id"},
        AnswerRecord: {"model", "extra", "latency_ms", "cost_usd"},
    }
    for model, fields in planted.items():
        declared = {
            f.name
            for f in model._meta.concrete_fields
            if f.name in SYSTEM_FIELDS and not f.is_relation
        }
        assert declared == fields, model
    canaries = {"CANARYSYS", "CANARYRUN", "CANARYCONFIG", "CANARYMODEL", "CANARYHASH"}
    canaries |= {str(CANARY_LATENCY), str(CANARY_COST)}
    # identifiers frozen into the demo's gold versions before the canaries were planted
    canaries |= {name for name in original if len(name) >= 6}
    return canaries


def _crawl(client: Client, roles: frozenset[str]) -> dict[str, tuple[str, str]]:
    """Fetch everything reachable: {url: (view name, body)} including fragments."""
    seeds = ["/"]
    for name, entry in ACCESS.items():
        if entry.roles and entry.roles & roles and entry.kind in (Kind.PAGE, Kind.DOWNLOAD):
            try:
                from django.urls import reverse

                seeds.append(reverse(name))
            except Exception:
                continue
    queue, seen, per_view, bodies = deque(seeds), set(), {}, {}
    while queue:
        url = queue.popleft()
        if url in seen or url.startswith(SKIP):
            continue
        seen.add(url)
        try:
            match = resolve(urlsplit(url).path)
        except Resolver404:
            continue
        entry = ACCESS.get(match.view_name)
        if entry is None or entry.kind not in (Kind.PAGE, Kind.DOWNLOAD):
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


def _hits(text: str, needles) -> list[str]:
    return sorted(n for n in needles if n in text)


def _names(usernames) -> re.Pattern:
    return re.compile(r"\b(" + "|".join(re.escape(u) for u in usernames) + r")\b")


@pytest.mark.parametrize("username", ["ann1", "author"])
def test_annotators_reach_no_system_run_or_other_annotator(canary_demo, username):
    user = get_user_model().objects.get(username=username)
    others = [f"ann{n}" for n in range(1, 7) if f"ann{n}" != username]
    client = Client()
    client.force_login(user)
    bodies = _crawl(client, roles_of(user))
    assert len(bodies) >= 20, sorted(bodies)
    views = {view for view, _ in bodies.values()}
    assert {"answers:queue", "curation:queue", "corpus:documents"} <= views
    identity = _names(others)
    for url, (_, body) in bodies.items():
        assert not _hits(body, canary_demo), (url, _hits(body, canary_demo))
        assert not identity.search(body), (url, identity.search(body).group(0))


def test_a_lead_reaches_no_system_or_run_and_no_labeler_identity(canary_demo):
    user = get_user_model().objects.get(username="lead")
    annotators = [f"ann{n}" for n in range(1, 7)]
    client = Client()
    client.force_login(user)
    bodies = _crawl(client, roles_of(user))
    assert len(bodies) >= 40, sorted(bodies)
    views = {view for view, _ in bodies.values()}
    assert {"answers:adjudicate", "exports:download", "quality:agreement"} <= views, views
    downloads = [u for u, (v, _) in bodies.items() if ACCESS[v].kind == Kind.DOWNLOAD]
    assert any("/download/adjudication/" in u for u in downloads), downloads
    # the canaries are planted where admins see them: the crawl would notice a leak
    admin = Client()
    admin.force_login(get_user_model().objects.get(username="admin"))
    assert "CANARYSYS" in admin.get("/answers/runs/").content.decode()
    identity = _names(annotators)
    person_key = re.compile(r"reviewer-\d+")
    for url, (view, body) in bodies.items():
        assert not _hits(body, canary_demo), (url, _hits(body, canary_demo))
        if view.startswith("answers:adjudicat") or ACCESS[view].kind == Kind.DOWNLOAD:
            if view.startswith("quality:"):
                continue  # the agreement dashboard's tables name annotators (the protocol allows)
            assert not identity.search(body), (url, identity.search(body).group(0))
            assert not person_key.search(body), url
