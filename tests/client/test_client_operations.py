"""The client covers the API: its methods name every operationId of the live schema (sync and
async alike), and every method is called against a live test server (sync, then async), lists
following their cursors page by page; a 429 of the live rate limit reaches the caller with its
Retry-After when that is longer than the client waits."""

import asyncio
import hashlib
import inspect
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.urls import reverse
from goldset_client import (
    API_VERSION,
    AsyncGoldsetClient,
    Conflict,
    Forbidden,
    GoldsetClient,
    NotFound,
    RateLimited,
    RetryPolicy,
    Unprocessable,
    __version__,
    operation_ids,
)
from goldset_client.models import (
    Adjudication,
    BlindPair,
    CalibrationPair,
    Comparison,
    Document,
    FreezeResult,
    ImportResult,
    Label,
    Member,
    OpenItem,
    PairwiseAnalysis,
    PairwiseRun,
    PairwiseTask,
    Progress,
    Project,
    ProjectSetting,
    Review,
    SamplingRule,
    ScoreResult,
    Tag,
    VersionDiff,
    VersionInfo,
    WebhookEndpoint,
)

from goldset.models import (
    ImportJob,
    PairwisePair,
    ScoringJob,
    WebhookDelivery,
    default_project_id,
)
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import store_frozen_version
from tests.client._loop import run_in_own_loop
from tests.factories import DomainFactory, default_project, gold_row_for, make_gold_corpus
from tests.goldset.answers_helpers import BAD, GOOD, build_conflict_item, claim_and_label
from tests.goldset.api.documented import (
    AsyncRecordingTransport,
    Documented,
    RecordingTransport,
)
from tests.goldset.curation_support import review, write_triple
from tests.goldset.pairwise_support import build_runs, make_task
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token


def schema_operations(client) -> set[str]:
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    return {op["operationId"] for ops in schema["paths"].values() for op in ops.values()}


@pytest.mark.django_db
def test_the_client_has_a_method_for_every_operation_of_the_schema(client):
    operations = schema_operations(client)
    assert len(operations) == 90
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
            project_id=frozen.project_id,
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
            project_id=default_project_id(),
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
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True  # the endpoint below is on 127.0.0.1
    record, labelers = build_conflict_item(DomainFactory(slug="sdk_domain"))
    for labeler, fields in zip(labelers, (GOOD, GOOD, BAD), strict=True):
        claim_and_label(labeler, **{**fields, "severe_safety": fields is BAD, "rationale": "r"})
    runs, _, _ = build_runs(n_systems=2, n_questions=2, domain_slug="sdk_pairwise")
    task = make_task(runs, actor=admin, name="SDK comparison")
    return {
        "record": record.public_id,
        "pairwise_task": task.pk,
        "pair": PairwisePair.objects.filter(task=task).values_list("public_id", flat=True)[0],
        "pairs": set(PairwisePair.objects.filter(task=task).values_list("public_id", flat=True)),
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

    tag = call("set_tag", "sdk-release", number, note="pinned")
    assert isinstance(tag, Tag) and (tag.name, tag.version) == ("sdk-release", number)
    moved = call("set_tag", "sdk-release", "latest", note="moved")
    assert moved.version == number + 1
    assert [m.action for m in moved.history] == ["moved", "created"]
    assert [t.name for t in call("list_tags", updated_since=since, page_size=1)] == ["sdk-release"]
    assert call("get_tag", "sdk-release").history[0].to_version == number + 1
    assert call("get_version", "sdk-release").number == number + 1
    assert call("diff_versions", "sdk-release", number).b == number
    assert call("delete_tag", "sdk-release", note="done") is None
    with pytest.raises(NotFound):
        call("get_tag", "sdk-release")

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

    # labels, reviews, adjudications (an admin: reads everything the pages show an admin,
    # adjudicates; labeling, reviewing and claiming are an annotator's: test_client_decisions)
    labels = call("list_labels", record=world["record"], updated_since=since, page_size=1)
    assert len(labels) == 3 and all(isinstance(x, Label) and x.labeler for x in labels)
    assert call("get_label", labels[0].id) == labels[0]
    (waiting,) = call("list_adjudication_queue", page_size=1)
    assert isinstance(waiting, OpenItem) and len(waiting.labels) == 3
    final = call("adjudicate", waiting.record, acceptability="unacceptable",
                 grounding="misgrounded", primary_failure="stale_source_acceptance",
                 rationale="the memo governs")  # fmt: skip
    assert isinstance(final, Adjudication) and final.record == world["record"]
    assert call("get_adjudication", final.id) == final
    assert [a.id for a in call("list_adjudications", updated_since=since)] == [final.id]
    reviews = call("list_reviews", triple=world["triple"], page_size=1)
    assert len(reviews) == 2 and all(isinstance(r, Review) for r in reviews)
    assert call("get_review", reviews[0].id) == reviews[0]
    for name, args, kwargs in [
        ("claim_item", (), {}),
        ("submit_label", (world["record"],), dict(GOOD, secondary_failures=())),
        ("claim_review", (), {}),
        ("submit_review", (1, "confirm"), {}),
    ]:
        with pytest.raises(Forbidden):  # an annotator's work: the admin's role may not
            call(name, *args, **kwargs)

    # pairwise review (an admin: reads tasks, judgments and the analysis, imports judgments;
    # claiming and judging pairs are a qualified reviewer's: test_pairwise_api)
    task_id = world["pairwise_task"]
    tasks = call("list_pairwise_tasks", updated_since=since, page_size=1)
    assert [t.id for t in tasks] == [task_id] and isinstance(tasks[0], PairwiseTask)
    assert tasks[0].name == "SDK comparison" and tasks[0].pairs == len(world["pairs"])
    assert call("list_pairwise_judgments", task_id, page_size=1) == []
    analysis = call("get_pairwise_analysis", task_id)  # nothing judged yet: says so
    assert isinstance(analysis, PairwiseAnalysis)
    assert (analysis.task, analysis.reason, analysis.ranking) == (task_id, "No judgments yet.", [])
    queued = call("import_pairwise_judgments", task_id, b'{"pair": "nothing"}\n')
    assert isinstance(queued, ImportResult) and queued.kind == "pairwise"
    for name, args in [
        ("claim_pair", ()),
        ("get_pair", (world["pair"],)),
        ("judge_pair", (world["pair"], "tie")),
        ("skip_pair", (world["pair"], "not mine")),
        ("undo_pair_judgment", ()),
    ]:
        with pytest.raises(Forbidden):  # a reviewer's work: the admin's role may not
            call(name, *args)
    assert call("list_pair_adjudications", page_size=1) == []  # no split yet
    for name, args, kwargs in [
        ("get_pair_adjudication", (world["pair"],), {}),
        ("adjudicate_pair", (world["pair"], "left"), {"rationale": "r", "strength": "clearly"}),
    ]:
        with pytest.raises(NotFound):  # the pair is not split: nothing to adjudicate
            call(name, *args, **kwargs)

    # pairwise qualification (an admin: builds the calibration pairs and reads the results;
    # taking the calibration is a reviewer's: test_pairwise_calibration_api)
    assert call("list_pair_calibration", page_size=1) == []
    candidate = call("get_pair_calibration_candidate")
    assert isinstance(candidate, BlindPair) and candidate.public_id in world["pairs"]
    assert candidate.left_answer and "CANARYSYS" not in str(candidate.raw)
    added = call("add_pair_calibration", candidate.public_id, choice="tie")
    assert isinstance(added, CalibrationPair) and (added.reference, added.answers) == ("tie", 0)
    again = call("add_pair_calibration", candidate.public_id)
    assert again.public_id == added.public_id
    listed = call("list_pair_calibration", updated_since=since, page_size=1)
    assert [c.public_id for c in listed] == [added.public_id]
    assert call("list_pair_qualifications", updated_since=since, page_size=1) == []
    for name, args in [
        ("get_pair_qualification", ()),
        ("claim_pair_calibration", ()),
        ("judge_pair_calibration", (added.public_id, "tie")),
    ]:
        with pytest.raises(Forbidden):  # a reviewer's work: the admin's role may not
            call(name, *args)
    # a new pairwise task from the runs as the task form offers them (after the calibration
    # candidate above: the new task's pairs join the project's queue)
    runs = call("list_pairwise_runs")
    assert all(isinstance(r, PairwiseRun) for r in runs)
    offered = [r.id for r in runs if r.label.startswith("CANARYRUN")]
    assert len(offered) == 2  # an admin reads run ids (leads: "Run N")
    made = call("create_pairwise_task", "SDK second look", offered, seed=5)
    assert isinstance(made, PairwiseTask)
    assert (made.name, made.seed, made.gold_version, made.pairs) == ("SDK second look", 5, None, 2)
    with pytest.raises(Unprocessable) as refused:  # the version holds none of their questions
        call("create_pairwise_task", "SDK on v", offered, gold_version=number)
    assert "share no question of gold version" in str(refused.value)
    # sampling rules of production traces (an admin's; every role: test_sampling_rules_api)
    made = call("create_sampling_rule", "sdk-tenth", "percentage", percentage=Decimal("10"),
                seed=7)  # fmt: skip
    assert isinstance(made, SamplingRule) and (made.percentage, made.version) == ("10.000", 1)
    rules = call("list_sampling_rules", updated_since=since, page_size=1)
    assert [r.id for r in rules] == [made.id]
    assert call("get_sampling_rule", made.id).seed == 7
    changed = call("update_sampling_rule", made.id, daily_cap=5, note="sdk")
    assert (changed.daily_cap, changed.version, changed.sampled_today) == (5, 2, 0)
    assert call("update_sampling_rule", made.id, enabled=False).enabled is False
    with pytest.raises(Unprocessable) as refused:  # what the kind needs: the service's rule
        call("create_sampling_rule", "sdk-unsure", "uncertainty")
    assert "threshold" in str(refused.value)

    # webhook endpoints
    hook = call("create_webhook", "http://127.0.0.1:9/hook", ["label.submitted"], description="ci")
    assert isinstance(hook, WebhookEndpoint) and hook.secret.startswith("whsec_")
    assert [h.id for h in call("list_webhooks", updated_since=since, page_size=1)] == [hook.id]
    assert call("get_webhook", hook.id).secret is None  # shown once
    test = call("send_test_webhook", hook.id)
    assert (test.event_type, test.status) == ("webhook.test", "pending")
    assert [d.id for d in call("list_webhook_deliveries", hook.id, page_size=1)] == [test.id]
    # its attempts used up (nothing listens on port 9): one more, with the same message id
    WebhookDelivery.objects.filter(pk=test.id).update(status="failed", attempts=8, max_attempts=8)
    again = call("redeliver_webhook", test.id)
    assert (again.message_id, again.max_attempts) == (test.message_id, 9)
    replaced = call("update_webhook", hook.id, url="http://127.0.0.1:9/other",
                    events=["triple.resolved", "adjudication.recorded"])  # fmt: skip
    assert replaced.url.endswith("/other") and replaced.description == ""
    assert call("patch_webhook", hook.id, enabled=False).enabled is False
    assert call("delete_webhook", hook.id) is None
    with pytest.raises(NotFound):
        call("get_webhook", hook.id)

    # projects (an installation admin's; every role: test_project_management_api): the
    # client's project is the default one, ``project=`` names another
    made = call("create_project", "sdk-bot", "SDK bot", description="d", copy_from="default")
    assert isinstance(made, Project) and (made.slug, made.role) == ("sdk-bot", "admin")
    assert made.api == "/api/v1/projects/sdk-bot/" and made.created_at
    assert call("get_project").slug == "default"
    assert call("get_project", project="sdk-bot").description == "d"
    changed = call("update_project", name="SDK bot 2", archived=True, project="sdk-bot")
    assert (changed.name, changed.description, changed.archived) == ("SDK bot 2", "d", True)
    rows = call("update_project_settings", {"KAPPA_GATE": Decimal("0.8")}, project="sdk-bot",
                AUDIT_SAMPLE_SEED=77)  # fmt: skip
    assert all(isinstance(r, ProjectSetting) for r in rows)
    in_force = {r.name: r for r in call("get_project_settings", project="sdk-bot")}
    assert (in_force["KAPPA_GATE"].own, in_force["KAPPA_GATE"].value) == ("0.8", 0.8)
    assert in_force["AUDIT_SAMPLE_SEED"].overridden and not in_force["AUDIT_SAMPLE_RATE"].overridden
    with pytest.raises(Unprocessable) as refused:
        call("update_project_settings", project="sdk-bot", AUDIT_SAMPLE_RATE="1.5")
    assert refused.value.field == "AUDIT_SAMPLE_RATE"
    added = call("add_member", "sdk-author", "annotator", project="sdk-bot")
    assert isinstance(added, Member) and (added.username, added.role) == ("sdk-author", "annotator")
    assert [m.username for m in call("list_members", project="sdk-bot")] == [
        "sdk-admin",
        "sdk-author",
    ]
    assert call("get_member", added.id, project="sdk-bot").username == "sdk-author"
    promoted = call("set_member_role", "sdk-author", "adjudication_lead", project="sdk-bot")
    assert promoted.role == "adjudication_lead"
    assert call("remove_member", "sdk-author", project="sdk-bot") is None
    with pytest.raises(Conflict):  # its last admin, given another role
        call("set_member_role", "sdk-admin", "annotator", project="sdk-bot")
    with pytest.raises(Conflict):  # its last admin
        call("remove_member", "sdk-admin", project="sdk-bot")
    with pytest.raises(Conflict):  # copied domains: it holds data (archived, it stays)
        call("delete_project", "sdk-bot")
    call("create_project", "sdk-empty", "Empty")
    assert call("delete_project", "sdk-empty") is None
    with pytest.raises(NotFound):
        call("get_project", project="sdk-empty")


def assert_documented(client, answers, *, every_operation=True) -> None:
    """Every answer the live server gave is as the schema documents it (status, headers), and
    (``every_operation``) every operation of the schema was answered at least once."""
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    documented = Documented(schema)
    assert [p for answer in answers for p in documented.problems(answer)] == []
    if every_operation:
        answered = {documented.operation_id(answer) for answer in answers}
        assert answered >= schema_operations(client)


@pytest.mark.postgres
def test_every_client_method_works_against_the_live_server(world, live_server, tmp_path, client):
    transport = RecordingTransport()
    with RecordingClient(live_server.url, world["token"], transport=transport) as gs:

        def call(name, /, *args, **kwargs):
            result = getattr(gs, name)(*args, **kwargs)
            return list(result) if inspect.isgenerator(result) else result

        exercise(call, world, tmp_path)
    assert gs.called == set(operation_ids(GoldsetClient))
    assert_documented(client, transport.answers)


@pytest.mark.postgres
def test_every_async_client_method_works_against_the_live_server(
    world, live_server, tmp_path, client
):
    transport = AsyncRecordingTransport()

    async def run():
        async with RecordingAsyncClient(live_server.url, world["token"], transport=transport) as gs:
            loop = asyncio.get_running_loop()

            async def collect(result):
                if inspect.isasyncgen(result):
                    return [row async for row in result]
                return await result

            def call(name, /, *args, **kwargs):
                # exercise() is synchronous: each call runs on this loop in a worker thread.
                coro = collect(getattr(gs, name)(*args, **kwargs))
                return asyncio.run_coroutine_threadsafe(coro, loop).result()

            await asyncio.to_thread(exercise, call, world, tmp_path)
        return gs.called

    assert run_in_own_loop(run()) == set(operation_ids(AsyncGoldsetClient))
    assert_documented(client, transport.answers)


@pytest.mark.postgres
def test_a_live_429_reaches_the_caller_with_its_retry_after(world, live_server, settings, client):
    settings.API_TOKEN_RATE = "2/min"
    cache.clear()
    patient = RetryPolicy(attempts=3, max_retry_after=1.0)
    transport = RecordingTransport()
    with GoldsetClient(live_server.url, world["token"], retry=patient, transport=transport) as gs:
        with pytest.raises(RateLimited) as refused:
            for _ in range(3):
                gs.get_job(world["jobs"][0])
    assert refused.value.retry_after and refused.value.retry_after > 1.0
    assert [a.status for a in transport.answers] == [200, 200, 429]
    assert_documented(client, transport.answers, every_operation=False)
