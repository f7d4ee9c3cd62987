"""The client covers the API: its methods name every operationId of the live schema (sync and
async alike), and every method is called against a live test server (sync, then async), lists
following their cursors page by page; a 429 of the live rate limit reaches the caller with its
Retry-After when that is longer than the client waits."""

import asyncio
import hashlib
import inspect
from datetime import UTC, datetime

import pytest
from django.core.cache import cache
from django.urls import reverse
from goldset_client import (
    API_VERSION,
    AsyncGoldsetClient,
    Conflict,
    GoldsetClient,
    RateLimited,
    RetryPolicy,
    __version__,
    operation_ids,
)
from goldset_client.models import (
    Comparison,
    Document,
    FreezeResult,
    ImportResult,
    Progress,
    ScoreResult,
    VersionDiff,
    VersionInfo,
)

from goldset.models import ImportJob, ScoringJob
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token


def schema_operations(client) -> set[str]:
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    return {op["operationId"] for ops in schema["paths"].values() for op in ops.values()}


@pytest.mark.django_db
def test_the_client_has_a_method_for_every_operation_of_the_schema(client):
    operations = schema_operations(client)
    assert len(operations) == 29
    assert set(operation_ids(GoldsetClient)) == operations
    assert set(operation_ids(AsyncGoldsetClient)) == operations
    for name in operation_ids(AsyncGoldsetClient).values():
        method = getattr(AsyncGoldsetClient, name)
        assert inspect.iscoroutinefunction(method) or name in ASYNC_VIA_RUN, name


def test_the_client_version_follows_the_api_version(client, db):
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    assert schema["info"]["version"] == API_VERSION == __version__.split(".")[0]


# Operations the shared table defines once: on the async client they return a coroutine (or an
# async iterator for lists) from ``_run`` rather than being ``async def`` themselves.
ASYNC_VIA_RUN = set(operation_ids(GoldsetClient).values()) - {
    "get_version",
    "download_version",
}


class Recording:
    """Records the operationId of every call a client makes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.called = set()

    def _run(self, call):
        self.called.add(call.operation_id)
        return super()._run(call)

    def _send(self, call, **kwargs):
        self.called.add(call.operation_id)
        return super()._send(call, **kwargs)


class RecordingClient(Recording, GoldsetClient):
    pass


class RecordingAsyncClient(Recording, AsyncGoldsetClient):
    pass


@pytest.fixture
def world(make_user, transactional_db, settings):
    """Two documents' blocks, a gold triple, a frozen version, jobs, an evaluator, import jobs
    (queued and failed) and an admin's write token."""
    settings.API_TOKEN_RATE = "100000/min"
    cache.clear()
    admin = make_user(Role.ADMIN, username="sdk-admin")
    versions = make_gold_corpus(6)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin,
    )
    jobs = [
        ScoringJob.objects.create(
            version=frozen,
            name=f"done{i}",
            kind="retrieval",
            run_format="trec",
            run_filename="r",
            run_sha256=f"{i}" * 64,
            run_size=1,
            status="succeeded",
        )  # fmt: skip
        for i in (1, 2)
    ]
    imports = {
        status: ImportJob.objects.create(
            kind="run",
            dedupe_key=status,
            filename="f",
            sha256="0" * 64,
            size=1,
            created_by=admin,
            status=status,
        )  # fmt: skip
        for status in ("queued", "failed")
    }
    _, token = create_api_token(user=admin, name="sdk", scope="write")
    triple = write_triple(make_user(Role.ANNOTATOR, username="sdk-author"))
    for reviewer in ("sdk-r1", "sdk-r2"):
        review(make_user(Role.ANNOTATOR, username=reviewer), triple)
    return {
        "token": token,
        "block": versions[0],
        "triple": triple.external_id,
        "version": frozen.number,
        "jobs": [j.pk for j in jobs],
        "evaluator": create_evaluator(
            project=default_project(), name="judge", version="1", kind="llm_judge"
        ).pk,
        "imports": imports,
    }


def exercise(call, world, tmp_path) -> None:
    """Every operation once, through ``call(method_name, *args, **kwargs)`` (which returns
    lists as lists)."""
    block = world["block"]
    document_id = block.block.document.document_id
    since = datetime(2000, 1, 1, tzinfo=UTC)

    assert [(p.slug, p.role) for p in call("list_projects")] == [("default", "admin")]
    assert {d.slug for d in call("list_domains")} >= {"supply_chain", "federal_it"}
    one_by_one = call("list_documents", updated_since=since, page_size=1)
    assert len(one_by_one) >= 2 and all(isinstance(d, Document) for d in one_by_one)
    assert len({d.document_id for d in one_by_one}) == len(one_by_one)  # cursors, not repeats
    assert call("list_documents", updated_since=datetime.now(UTC).isoformat()) == []
    assert call("get_document", document_id).document_id == document_id
    assert block.block.block_id in {b.block_id for b in call("list_document_blocks", document_id)}
    assert [v.version for v in call("list_block_versions", block.block.block_id)] == [1]
    pinned = call("get_block_version", block.block.block_id, 1)
    assert pinned.sha256 == block.sha256

    triples = call("list_triples", page_size=1)
    assert world["triple"] in {t.id for t in triples}
    assert call("get_triple", world["triple"]).id == world["triple"]

    uploads = []
    line = b'{"not": "a valid record"}\n'
    jobs = [
        call("import_triples", line, progress=uploads.append),
        call("import_questions", line),
        call("import_answers", line),
        call("import_evaluator_outputs", world["evaluator"], line),
        call("create_import", "questions", line),
    ]
    assert all(isinstance(j, ImportResult) for j in jobs)
    assert uploads and uploads[-1] == Progress("upload", len(line), len(line))
    assert call("get_import", jobs[0].id).id == jobs[0].id
    assert call("cancel_import", world["imports"]["queued"].pk).status == "cancelled"
    with pytest.raises(Conflict):  # failed, and its file is no longer stored
        call("retry_import", world["imports"]["failed"].pk)

    number = world["version"]
    assert [v.number for v in call("list_versions", updated_since=since)] == [number]
    latest = call("get_version", "latest")
    assert isinstance(latest, VersionInfo) and latest.number == number and latest.manifest
    assert call("diff_versions", number, number) == VersionDiff(a=number, b=number)
    received = []
    done = call("download_version", number, "gold_jsonl", tmp_path, progress=received.append)
    assert hashlib.sha256(done.path.read_bytes()).hexdigest() == done.sha256
    assert received[-1].done == done.size
    frozen = call("freeze", note="sdk")
    assert isinstance(frozen, FreezeResult) and frozen.created
    assert frozen.version.number == number + 1 and frozen.version.note == "sdk"

    assert set(world["jobs"]) <= {j.job_id for j in call("list_jobs", page_size=1)}
    queued = call("submit_run", number, [{"query_id": "q1", "block_id": "b", "rank": 1}],
                  as_json=True)  # fmt: skip
    assert isinstance(queued, ImportResult) and queued.kind == "run"
    job = call("get_job", world["jobs"][0])
    assert isinstance(job, ScoreResult) and job.status == "succeeded"
    assert call("list_job_queries", world["jobs"][0]) == []
    comparison = call("compare_jobs", world["jobs"])
    assert isinstance(comparison, Comparison)
    assert [j["id"] for j in comparison.jobs] == world["jobs"]
    figures = call("list_agreement", protocol="triple_review", updated_since=since, page_size=5)
    assert len(figures) > 5 and {f.protocol for f in figures} == {"triple_review"}
    assert call("list_agreement", updated_since=datetime.now(UTC)) == []
    assert isinstance(call("list_alerts"), list)


@pytest.mark.postgres
def test_every_client_method_works_against_the_live_server(world, live_server, tmp_path):
    with RecordingClient(live_server.url, world["token"]) as gs:

        def call(name, *args, **kwargs):
            result = getattr(gs, name)(*args, **kwargs)
            return list(result) if inspect.isgenerator(result) else result

        exercise(call, world, tmp_path)
    assert gs.called == set(operation_ids(GoldsetClient))


@pytest.mark.postgres
def test_every_async_client_method_works_against_the_live_server(world, live_server, tmp_path):
    async def run():
        async with RecordingAsyncClient(live_server.url, world["token"]) as gs:
            loop = asyncio.get_running_loop()

            async def collect(result):
                if inspect.isasyncgen(result):
                    return [row async for row in result]
                return await result

            def call(name, *args, **kwargs):
                # exercise() is synchronous: each call runs on this loop in a worker thread.
                coro = collect(getattr(gs, name)(*args, **kwargs))
                return asyncio.run_coroutine_threadsafe(coro, loop).result()

            await asyncio.to_thread(exercise, call, world, tmp_path)
        return gs.called

    assert asyncio.run(run()) == set(operation_ids(AsyncGoldsetClient))


@pytest.mark.postgres
def test_a_live_429_reaches_the_caller_with_its_retry_after(world, live_server, settings):
    settings.API_TOKEN_RATE = "2/min"
    cache.clear()
    patient = RetryPolicy(attempts=3, max_retry_after=1.0)
    with GoldsetClient(live_server.url, world["token"], retry=patient) as gs:
        with pytest.raises(RateLimited) as refused:
            for _ in range(3):
                gs.get_job(world["jobs"][0])
    assert refused.value.retry_after and refused.value.retry_after > 1.0
