"""The cross-project crawl (issue 27, "Tests that must exist"): project B holds canary data of
every kind — corpus, customer, guideline, routing rules, triples with a review assignment and a
discussion, a system, run, question and answer record with a claimed label slot, calibration,
a frozen gold version with a file, a scoring job, an evaluator, a PCS calibration and a release
report, an import job, a webhook with a delivery, notifications, a retake request, an audit
event, a working slice and a spot-check draw — every text carrying :data:`CANARY`.

Members of project A (the seeded demo, the default project) of every role walk every page,
htmx fragment, download and API endpoint of :data:`workbench.access.ACCESS` under ``/p/<a>/``
and ``/api/v1/projects/<a>/`` (the access table's entries reversed, links followed): no
response may contain a canary. Two of them (the lead and ``ann1``) are members of B as well —
B's rows are theirs to see, under B's URLs only. Then every entry that takes an object's key
is requested under A with B's keys: each answers 404."""

import copy
import hashlib
import re
from collections import deque
from decimal import Decimal
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, TestCase
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from django.utils import timezone

from goldset.models import (
    Adjudication,
    AgreementSnapshot,
    AnswerRecord,
    Block,
    BlockVersion,
    CalibrationRetake,
    CalibrationSet,
    Customer,
    CustomerPermission,
    DiscussionMessage,
    Document,
    Domain,
    Evaluator,
    EvaluatorReportSnapshot,
    GoldVersion,
    GoldVersionFile,
    GoldVersionFileChunk,
    GoldVersionRow,
    GuidelineVersion,
    ImportJob,
    Label,
    LabelAssignment,
    Notification,
    PairAssignment,
    PairCalibrationItem,
    PairQualification,
    PairwisePair,
    PairwiseTask,
    PairwiseTaskRun,
    PcsCalibration,
    Project,
    QualityTrackerEntry,
    Question,
    ReceivedTrace,
    ReleaseReport,
    Review,
    ReviewAssignment,
    RoutingRules,
    Run,
    SamplingRule,
    ScoringJob,
    SpotCheckDraw,
    System,
    Tier,
    Triple,
    TripleRevision,
    VersionTag,
    VersionTagMove,
    WebhookDelivery,
    WebhookEndpoint,
    WorkingSlice,
)
from goldset.models.answers import new_public_id
from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.rules.labeling import queue_rank
from goldset.services.projects import grant_role
from tests.conftest import shared_test_data
from workbench.access import ACCESS, Kind
from workbench.roles import Role, is_installation_admin
from workbench.services.audit import record_event

pytestmark = pytest.mark.django_db

CANARY = "QZCANARYB7X"  # in every text of project B
B_SLUG = "canary-b"
B_NAME = "Second project under test"
A = DEFAULT_PROJECT_SLUG
# Project A's members by role; the lead and ann1 also belong to B (the lead as B's admin).
MEMBERS = {"admin": Role.ADMIN, "lead": Role.LEAD, "ann1": Role.ANNOTATOR, "author": Role.ANNOTATOR}
ALSO_IN_B = {"lead": Role.ADMIN, "ann1": Role.ANNOTATOR}
LINK = re.compile(r'(?:href|hx-get|action)="(/[^"#]*)"')
PER_VIEW = 5  # distinct URLs fetched per view name (item pages, ?page=, filters)
# Entries with arguments that are not an object's key: fetched with each of these.
PLAIN_ARGS = {
    "quality:agreement-download": [("csv",), ("json",)],
    "quality:table-download": [(n, f) for n in ("confusion", "workload", "time") for f in ("csv",)],
}
NOT_CRAWLED = {"api:not_found"}  # any other /api/v1/ URL: answers 404 by design


@pytest.fixture(scope="module")
def canary_projects(django_db_setup, django_db_blocker, tmp_path_factory):
    with shared_test_data(django_db_blocker):
        with django_db_blocker.unblock():
            with TestCase.captureOnCommitCallbacks(execute=False):
                call_command(
                    "seed_demo",
                    password="crawl-projects-1",
                    credentials_file=tmp_path_factory.mktemp("crawl") / "c.txt",
                )
                keys = _plant_project_b()
        yield keys


def _plant_project_b() -> dict:
    """Project B with canary rows of every kind; returns the keys of B's objects."""
    User = get_user_model()
    users = {u.username: u for u in User.objects.filter(username__in=MEMBERS)}
    b_admin = User.objects.create_user(username="b-only-admin", password="x-Passw0rd-1")
    project = Project.objects.create(name=B_NAME, slug=B_SLUG, description=f"{CANARY} project")
    grant_role(project=project, user=b_admin, role=Role.ADMIN)
    for username, role in ALSO_IN_B.items():
        grant_role(project=project, user=users[username], role=role)
    ann1, lead = users["ann1"], users["lead"]
    now = timezone.now()

    domain = Domain.objects.create(project=project, slug="canary-domain", name=f"{CANARY} domain")
    document = Document.objects.create(
        project=project,
        document_id="canary-doc",
        title=f"{CANARY} document",
        domain=domain,
        authority=Decimal("0.500"),
        metadata={"note": CANARY},
    )
    block = Block.objects.create(project=project, block_id="canary-doc#1", document=document)
    text = f"{CANARY} block text: the canary clause."
    version = BlockVersion.objects.create(
        block=block,
        version=1,
        text=text,
        section=f"{CANARY} section",
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
    customer = Customer.objects.create(
        project=project, name=f"{CANARY} customer", slug="canary-customer"
    )
    CustomerPermission.objects.create(customer=customer, granted_by=b_admin, note=CANARY)
    for task in ("answer_labeling", "triple_review", "adjudication"):
        GuidelineVersion.objects.create(
            domain=domain,
            task=task,
            version=1,
            body=f"{CANARY} guideline",
            html=f"<p>{CANARY} guideline</p>",
            note=CANARY,
            created_by=b_admin,
        )
    RoutingRules.objects.create(
        project=project,
        version=1,
        gold_task_types=["factual_qa"],
        uncertainty_threshold=Decimal("0.400"),
        gold_domains=["canary-domain"],
        note=f"{CANARY} rules",
        created_by=b_admin,
    )

    # curation: a triple waiting for ann1's review, with a discussion and a quality entry
    triple = Triple.objects.create(
        project=project,
        external_id="gt-canary-1",
        state="pending_review",
        tier=Tier.GOLD,
        routing_rule=f"{CANARY}-rule",
        rules_version=1,
        source="public_rfp",
        domain=domain,
        task_type="factual_qa",
        author=b_admin,
        added_at=now,
    )
    revision = TripleRevision.objects.create(
        project_id=triple.project_id,
        triple=triple,
        number=1,
        question=f"{CANARY} question?",
        expected_block_version=version,
        expected_answer=f"{CANARY} expected answer",
        created_by=b_admin,
        reviewers_needed=2,
    )
    Triple.objects.filter(pk=triple.pk).update(current_revision=revision)
    review = ReviewAssignment.objects.create(revision=revision, reviewer=ann1, slot=1)
    # a review the lead submitted (its own slot), for the API's reviews/<id>/
    lead_review = Review.objects.create(
        assignment=ReviewAssignment.objects.create(
            revision=revision, reviewer=lead, slot=2, completed_at=timezone.now()
        ),
        revision=revision,
        reviewer=lead,
        verdict="confirm",
        comment=f"{CANARY} review comment",
    )
    DiscussionMessage.objects.create(
        triple=triple, revision=revision, author=b_admin, body=f"{CANARY} message"
    )
    QualityTrackerEntry.objects.create(
        project=project,
        triple=triple,
        revision=revision,
        author=b_admin,
        flags=[CANARY],
        comments=[CANARY],
    )
    WorkingSlice.objects.create(
        project=project,
        quarter="2031Q4",
        seed=7,
        size=1,
        triple_ids=[triple.pk],
        strata={"canary-domain": 1},
        gold_count=1,
        drawn_by=lead,
    )
    SpotCheckDraw.objects.create(
        project=project,
        iso_year=2031,
        iso_week=7,
        seed=7,
        rate=Decimal("0.10"),
        eligible_revision_ids=[revision.pk],
        selected_revision_ids=[revision.pk],
        drawn_by=lead,
    )

    # answers: a system's answer to a question, a slot claimed by ann1, a calibration set
    system = System.objects.create(
        project=project, system_id=f"{CANARY}-system", config={"retriever": CANARY}
    )
    run = Run.objects.create(project=project, run_id=f"{CANARY}-run", system=system)
    question = Question.objects.create(
        project=project,
        question_id="canary-q-1",
        domain=domain,
        task_family=f"{CANARY}-family",
        task_type="rag_synthesis",
        text=f"{CANARY} question text",
        content_sha256=hashlib.sha256(CANARY.encode()).hexdigest(),
    )
    public_id = new_public_id()
    record = AnswerRecord.objects.create(
        project=project,
        public_id=public_id,
        run=run,
        question=question,
        domain=domain,
        queue_rank=queue_rank(public_id=public_id),
        answer=f"{CANARY} answer text",
        model={"generator": CANARY},
        extra={"prompt_hash": CANARY},
        tier=Tier.GOLD,
        routing_rule=f"{CANARY}-route",
        rules_version=1,
        labels_required=2,
    )
    LabelAssignment.objects.create(
        record=record, annotator=ann1, slot=1, shuffle_seed=7, shuffle_key="canary"
    )
    # a label the lead gave (its own slot) and the lead's adjudication of the record, for the
    # API's labels/<id>/ and adjudications/<id>/
    label_axes = {
        "acceptability": "acceptable",
        "grounding": "fully_grounded",
        "rationale": f"{CANARY} rationale",
    }
    label = Label.objects.create(
        assignment=LabelAssignment.objects.create(
            record=record,
            annotator=lead,
            slot=2,
            shuffle_seed=7,
            shuffle_key="canary-2",
            completed_at=timezone.now(),
        ),
        record=record,
        annotator=lead,
        evidence_sufficiency="sufficient",
        citation_correctness="correct",
        conflict_handling="not_applicable",
        safety_boundary="respected",
        **label_axes,
    )
    adjudication = Adjudication.objects.create(
        record=record, lead=lead, reason="no_majority", **label_axes
    )
    # pairwise review: a second system's answer to the question, a task with one pair (split,
    # waiting for a lead) that ann1 holds a slot of
    system_2 = System.objects.create(project=project, system_id=f"{CANARY}-system-2")
    run_2 = Run.objects.create(project=project, run_id=f"{CANARY}-run-2", system=system_2)
    second_id = new_public_id()
    second = AnswerRecord.objects.create(
        project=project,
        public_id=second_id,
        run=run_2,
        question=question,
        domain=domain,
        queue_rank=queue_rank(public_id=second_id),
        answer=f"{CANARY} second answer text",
        tier=Tier.GOLD,
        routing_rule=f"{CANARY}-route",
        rules_version=1,
        labels_required=2,
    )
    pairwise_task = PairwiseTask.objects.create(
        project=project,
        name=f"{CANARY} pairwise task",
        design="all_pairs",
        seed=7,
        tier=Tier.GOLD,
        reviewers_per_pair=3,
        created_by=b_admin,
    )
    PairwiseTaskRun.objects.bulk_create(
        [PairwiseTaskRun(task=pairwise_task, run=r) for r in (run, run_2)]
    )
    pair = PairwisePair.objects.create(
        project=project,
        task=pairwise_task,
        question=question,
        record_a=record,
        record_b=second,
        position=0,
        queue_rank=1,
        reviewers_required=3,
        assigned_count=1,
        status="needs_adjudication",
    )
    PairAssignment.objects.create(pair=pair, reviewer=ann1, slot=1, left="a")
    PairQualification.objects.create(
        project=project, reviewer=ann1, n_items=4, kappa=0.1, threshold=0.7, passed=False
    )
    calibration_pair = PairCalibrationItem.objects.create(
        project=project,
        question=question,
        record_a=record,
        record_b=second,
        reference="a",
        source_pair=pair,
        created_by=b_admin,
    )
    CalibrationSet.objects.create(project=project, domain=domain)
    retake = CalibrationRetake.objects.create(
        annotator=ann1, domain=domain, message=f"{CANARY} retake", reason=CANARY
    )
    AgreementSnapshot.objects.create(
        project=project,
        protocol="answers",
        axis="grounding",
        metric="kappa",
        tier="tier_b",
        task_type="rag_synthesis",
        domain="canary-domain",
        week="2031-W07",
        subject=CANARY,
        value=0.1,
        reason=CANARY,
        data_version=CANARY,
    )

    # a frozen version with its rows and a file, and what hangs off it
    line = f'{{"id":"gt-canary-1","question":"{CANARY} question?"}}'
    data = (line + "\n").encode()
    gold = GoldVersion.objects.create(
        project=project,
        number=77,
        note=f"{CANARY} version",
        filters={"note": CANARY},
        manifest={"note": CANARY},
        rows_sha256=hashlib.sha256(data).hexdigest(),
        manifest_sha256=hashlib.sha256(CANARY.encode()).hexdigest(),
        row_count=1,
        created_by=b_admin,
    )
    GoldVersionRow.objects.create(
        version=gold,
        position=0,
        triple_id="gt-canary-1",
        line=line,
        sha256=hashlib.sha256(line.encode()).hexdigest(),
        domain="canary-domain",
        tier="tier_b",
        source="public_rfp",
        task_type="factual_qa",
        block_id="canary-doc#1",
    )
    stored = GoldVersionFile.objects.create(
        version=gold,
        format="gold_jsonl",
        filename=f"{CANARY}.jsonl",
        content_type="application/jsonl",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        chunk_count=1,
    )
    GoldVersionFileChunk.objects.create(file=stored, index=0, data=data)
    GoldVersion.objects.filter(pk=gold.pk).update(sealed=True)
    # a tag on it, and its history
    tag = VersionTag.objects.create(
        project=project, name="canary-release", version=gold, note=f"{CANARY} tag", moved_by=b_admin
    )
    VersionTagMove.objects.create(
        project=project, name=tag.name, to_version=gold, note=f"{CANARY} tagged", moved_by=b_admin
    )
    # a scoring job shaped as one of the demo's, under B's name
    demo_job = ScoringJob.objects.order_by("pk").first()
    shaped = {
        f.attname: getattr(demo_job, f.attname)
        for f in ScoringJob._meta.concrete_fields
        if demo_job is not None
        and not f.primary_key
        and f.name not in {"project", "version", "created_by", "name", "notice", "run_filename"}
    }
    job = ScoringJob.objects.create(
        **shaped,
        project=project,
        version=gold,
        name=f"{CANARY} job",
        run_filename=f"{CANARY}.trec",
        notice=CANARY,
        created_by=b_admin,
    )
    evaluator = Evaluator.objects.create(
        project=project,
        name=f"{CANARY}-judge",
        version="1",
        kind="llm_judge",
        model_id=CANARY,
        prompt_hash=CANARY,
        description=CANARY,
        created_by=b_admin,
    )
    # a report shaped as the demo's (the latest one), naming B's judge
    demo_report = EvaluatorReportSnapshot.objects.order_by("-created_at").first()
    report_data = copy.deepcopy(demo_report.report) if demo_report else {}
    for key in ("rows", "weeks", "alerts", "comparisons"):
        report_data.setdefault(key, [])
    for row in report_data["rows"]:
        row["name"] = f"{CANARY}-judge"
    report_data["note"] = CANARY
    EvaluatorReportSnapshot.objects.create(
        project=project, report=report_data, trust_kappa=0.5, n_items=1, created_by=b_admin
    )
    calibration = PcsCalibration.objects.create(
        project=project,
        name=f"{CANARY} calibration",
        version=1,
        status="failed",
        error=CANARY,
        notice=CANARY,
        created_by=b_admin,
    )
    report = ReleaseReport.objects.create(
        project=project,
        version=gold,
        run_ids=[run.pk],
        calibration=calibration,
        report={  # the shape the release page reads, with nothing scored
            "meta": {"title": f"{CANARY} release"},
            "systems": [],
            "failures": {},
            "n_unacceptable": 0,
            "ablation": [],
            "checklist": [],
            "comparisons": [],
            "families": [],
            "seeds": [],
        },
        html=f"<html><body>{CANARY} report</body></html>",
        created_by=b_admin,
    )

    # operations: imports by two of A's members, a webhook with a delivery, an inbox, the log
    imports = {}
    for username in ("ann1", "lead", "admin"):
        imports[username] = ImportJob.objects.create(
            project=project,
            kind="corpus",
            dedupe_key=f"canary-{username}",
            filename=f"{CANARY}-{username}.jsonl",
            sha256=hashlib.sha256(username.encode()).hexdigest(),
            size=1,
            file_name=f"{CANARY}-{username}.jsonl",
            status="failed",
            message=CANARY,
            errors=[{"line": 1, "field": "title", "message": CANARY}],
            created_by=users[username],
        )
    endpoint = WebhookEndpoint.objects.create(
        project=project,
        url="https://canary.example.org/hook",
        description=f"{CANARY} hook",
        events=["version.frozen"],
        secret=f"whsec_{CANARY}",
        created_by=b_admin,
    )
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_type="version.frozen",
        message_id=f"msg_{CANARY}",
        payload={"note": CANARY},
        last_error=CANARY,
        response_snippet=CANARY,
    )
    trace = ReceivedTrace.objects.create(
        project=project,
        trace_id="c" * 32,
        status="mapped",
        reason=CANARY,
        record=record,
        sampled_by=CANARY,
    )
    sampling_rule = SamplingRule.objects.create(
        project=project, name=CANARY, kind="feedback", note=CANARY
    )
    notifications = {}
    for username, user in users.items():
        notifications[username] = Notification.objects.create(
            project=project,
            recipient=user,
            kind="discussion_opened",
            text=f"{CANARY} notification",
            link=f"/p/{B_SLUG}/curation/triples/{triple.pk}/",
            key=f"canary-{username}",
        )
    record_event(
        actor=b_admin,
        verb="canary.event",
        object_type="project",
        object_id=B_SLUG,
        detail={"note": CANARY},
        project=project,
    )
    return {
        "project": project,
        "document": document,
        "block": block,
        "triple": triple,
        "review": review,
        "lead_review": lead_review,
        "record": record,
        "label": label,
        "adjudication": adjudication,
        "pair": pair,
        "pairwise_task": pairwise_task,
        "calibration_pair": calibration_pair,
        "ann1": ann1,
        "retake": retake,
        "gold": gold,
        "tag": tag,
        "job": job,
        "evaluator": evaluator,
        "calibration": calibration,
        "report": report,
        "imports": imports,
        "endpoint": endpoint,
        "delivery": delivery,
        "trace": trace,
        "sampling_rule": sampling_rule,
        "notifications": notifications,
        "b_admin": b_admin,
    }


# ------------------------------------------------------------------------------ URLs


def _mounted(slug: str, path: str) -> str:
    """``path`` (from ``reverse``, unmounted) inside project ``slug``: pages under
    ``/p/<slug>/``, the API under ``/api/v1/projects/<slug>/``."""
    if path.startswith("/api/v1/"):
        return f"/api/v1/projects/{slug}/{path[len('/api/v1/') :]}"
    return f"/p/{slug}{path}"


def _unmounted(url: str, slug: str) -> str | None:
    path = urlsplit(url).path
    for prefix in (f"/p/{slug}/", f"/api/v1/projects/{slug}/"):
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            return ("/api/v1/" if prefix.startswith("/api") else "/") + rest
    return None


def _entries_for(roles: set[str]):
    for name, entry in ACCESS.items():
        if not entry.scoped or name in NOT_CRAWLED or "*" in name:
            continue
        if entry.roles is not None and not (entry.roles & roles):
            continue
        yield name, entry


def _takes_args(name: str) -> bool:
    try:
        reverse(name)
    except NoReverseMatch:
        return True
    return False


def _seeds(slug: str, roles: set[str]) -> list[str]:
    seeds = [f"/p/{slug}/"]
    for name, entry in _entries_for(roles):
        if entry.kind == Kind.ACTION:
            continue
        if name in PLAIN_ARGS:
            seeds += [_mounted(slug, reverse(name, args=a)) for a in PLAIN_ARGS[name]]
        elif not _takes_args(name):
            seeds.append(_mounted(slug, reverse(name)))
    return seeds


def _body(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return raw.decode("utf-8", "replace")


def _crawl(client: Client, slug: str, roles: set[str]) -> tuple[dict[str, str], dict[str, int]]:
    """Every page, fragment, download and API response reachable inside project ``slug``, and
    the URLs that answered a server error (collected, so that one broken page does not hide
    what the rest of the crawl finds)."""
    queue, seen, per_view, bodies, errors = deque(_seeds(slug, roles)), set(), {}, {}, {}
    while queue:
        url = queue.popleft()
        if url in seen:
            continue
        seen.add(url)
        inner = _unmounted(url, slug)
        if inner is None:
            continue  # outside the project (the projects home, tokens, another project)
        try:
            match = resolve(inner)
        except Resolver404:
            continue
        entry = ACCESS.get(match.view_name)
        if entry is None or entry.kind == Kind.ACTION or not entry.scoped:
            continue
        if per_view.get(match.view_name, 0) >= PER_VIEW:
            continue
        per_view[match.view_name] = per_view.get(match.view_name, 0) + 1
        try:
            response = client.get(url)
        except Exception as exc:  # reported with the URL below
            errors[url] = repr(exc)[:200]
            continue
        if response.status_code >= 500:
            errors[url] = response.status_code
        body = _body(response)
        bodies[url] = body
        for fragment in entry.fragments:
            try:
                part = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=fragment)
            except Exception as exc:
                errors[f"{url} #{fragment}"] = repr(exc)[:200]
                continue
            if part.status_code >= 500:
                errors[f"{url} #{fragment}"] = part.status_code
            bodies[f"{url} #{fragment}"] = _body(part)
        if response.status_code == 200 and "html" in response.get("Content-Type", ""):
            for link in LINK.findall(body):
                queue.append(urljoin(url, link.replace("&amp;", "&")))
    return bodies, errors


def _b_objects(keys) -> dict[str, tuple]:
    """Every entry that takes an object's key → the key(s) of B's object."""
    triple, record, gold = keys["triple"], keys["record"], keys["gold"]
    domain = "canary-domain"
    return {
        "projects:member_remove": (keys["b_admin"].pk,),
        "corpus:document": (keys["document"].document_id,),
        "corpus:block": (keys["block"].block_id,),
        "curation:triple": (triple.pk,),
        "curation:message": (triple.pk,),
        "curation:revise": (triple.pk,),
        "curation:split": (triple.pk,),
        "curation:drop": (triple.pk,),
        "curation:verify": (triple.pk,),
        "curation:review": (keys["review"].pk,),
        "curation:review_skip": (keys["review"].pk,),
        "curation:repin": (triple.pk,),
        "curation:retire": (triple.pk,),
        "curation:slice": ("2031Q4",),
        "curation:customer": ("canary-customer",),
        "curation:grant": ("canary-customer",),
        "curation:revoke": ("canary-customer",),
        "answers:item": (record.public_id,),
        "answers:skip": (record.public_id,),
        "answers:calibration_start": (domain,),
        "answers:adjudicate": (record.public_id,),
        "answers:calibration_set": (domain,),
        "answers:calibration_reference": (domain, record.public_id),
        "pairwise:judge": (keys["pair"].public_id,),
        "pairwise:skip": (keys["pair"].public_id,),
        "pairwise:adjudicate": (keys["pair"].public_id,),
        "pairwise:analysis": (keys["pairwise_task"].pk,),
        "pairwise:import": (keys["pairwise_task"].pk,),
        "pairwise:add_calibration": (keys["pair"].public_id,),
        "pairwise:reset_calibration": (keys["ann1"].pk,),
        "promotion:triple": (triple.pk,),
        "promotion:record": (record.public_id,),
        "exports:version": (gold.number,),
        "exports:download": (gold.number, "gold_jsonl"),
        "exports:tag_delete": (keys["tag"].name,),
        "exports:job": (keys["job"].pk,),
        "exports:retry": (keys["job"].pk,),
        "exports:cancel": (keys["job"].pk,),
        "exports:job_download": (keys["job"].pk, "json"),
        "evaluators:detail": (keys["evaluator"].pk,),
        "evaluators:calibration": (keys["calibration"].pk,),
        "evaluators:release": (keys["report"].pk,),
        "evaluators:release_html": (keys["report"].pk,),
        "evaluators:release_json": (keys["report"].pk,),
        "imports:job": ("import",),
        "imports:cancel": ("import",),
        "imports:retry": ("import",),
        "inbox:open": ("notification",),
        "inbox:mark_read": ("notification",),
        "inbox:retake_decide": (keys["retake"].pk,),
        "inbox:retake_request": (domain,),
        "guidelines:edit": (domain, "answer_labeling"),
        "guidelines:version": (domain, "answer_labeling", 1),
        "webhooks:endpoint": (keys["endpoint"].pk,),
        "webhooks:enabled": (keys["endpoint"].pk,),
        "webhooks:test": (keys["endpoint"].pk,),
        "webhooks:redeliver": (keys["delivery"].pk,),
        "traces:trace": (keys["trace"].trace_id,),
        "traces:sampling_rule": (keys["sampling_rule"].pk,),
        "traces:sampling_enabled": (keys["sampling_rule"].pk,),
        "promotion:record_triple": (record.public_id,),
        "api:document": (keys["document"].document_id,),
        "api:document_blocks": (keys["document"].document_id,),
        "api:block_versions": (keys["block"].block_id,),
        "api:block_version": (keys["block"].block_id, 1),
        "api:triple": (triple.external_id,),
        "api:evaluator_outputs_import": (keys["evaluator"].pk,),
        "api:import": ("import",),
        "api:import_cancel": ("import",),
        "api:import_retry": ("import",),
        "api:version": (gold.number,),
        "api:version_download": (gold.number, "gold_jsonl"),
        "api:tag": (keys["tag"].name,),
        "api:job": (keys["job"].pk,),
        "api:job_queries": (keys["job"].pk,),
        "api:pairwise_judgments": (keys["pairwise_task"].pk,),
        "api:pairwise_analysis": (keys["pairwise_task"].pk,),
        "api:pairwise_judgments_import": (keys["pairwise_task"].pk,),
        "api:pairwise_pair": (keys["pair"].public_id,),
        "api:pairwise_judge": (keys["pair"].public_id,),
        "api:pairwise_skip": (keys["pair"].public_id,),
        "api:pairwise_adjudication": (keys["pair"].public_id,),
        "api:pairwise_calibration_judge": (keys["calibration_pair"].public_id,),
        "api:label": (keys["label"].pk,),
        "api:review": (keys["lead_review"].pk,),
        "api:adjudication": (keys["adjudication"].pk,),
        "api:webhook": (keys["endpoint"].pk,),
        "api:webhook_deliveries": (keys["endpoint"].pk,),
        "api:webhook_test": (keys["endpoint"].pk,),
        "api:webhook_redeliver": (keys["delivery"].pk,),
        "api:sampling_rule": (keys["sampling_rule"].pk,),
        "api:project_member": (keys["b_admin"].username,),  # a member of B only
    }


def _member_for(entry) -> str:
    """The A member who holds one of the entry's roles (a member of B too where one does)."""
    for username in ("ann1", "lead", "admin"):
        if entry.roles is None or MEMBERS[username].value in entry.roles:
            return username
    raise AssertionError(entry.name)


def _client(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def _args(keys, username: str, args: tuple) -> tuple:
    resolved = []
    for arg in args:
        if arg == "import":
            arg = keys["imports"][username].pk
        elif arg == "notification":
            arg = keys["notifications"][username].pk
        resolved.append(arg)
    return tuple(resolved)


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("username", sorted(MEMBERS))
def test_members_of_a_see_nothing_of_b(canary_projects, username):
    roles = {MEMBERS[username].value}
    client = _client(username)
    bodies, errors = _crawl(client, A, roles)
    assert len(bodies) >= 25, sorted(bodies)
    needles = [CANARY]
    user = get_user_model().objects.get(username=username)
    if username not in ALSO_IN_B and not is_installation_admin(user):
        needles += [B_NAME, f"/p/{B_SLUG}/"]  # B is not theirs: not even its name
    leaks = {
        url: [n for n in needles if n in body]
        for url, body in bodies.items()
        if any(n in body for n in needles)
    }
    assert not leaks and not errors, (
        f"{len(leaks)} responses under /p/{A}/ show project B: {sorted(leaks)}; "
        f"{len(errors)} failed: {errors}"
    )


def test_the_canaries_are_where_b_members_see_them(canary_projects):
    """The control: under B's own URLs its members see the canaries (the crawl would notice a
    leak), and B's object URLs are right (they answer 200 there)."""
    keys = canary_projects
    lead = _client("lead")  # B's admin
    assert CANARY in _body(lead.get(_mounted(B_SLUG, reverse("corpus:documents"))))
    for name in ("corpus:document", "curation:triple", "exports:version", "api:document"):
        args = _b_objects(keys)[name]
        url = _mounted(B_SLUG, reverse(name, args=args))
        response = lead.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert CANARY in _body(response), url


def test_every_object_url_of_b_answers_404_under_a(canary_projects):
    keys = canary_projects
    objects = _b_objects(keys)
    scoped_with_keys = {
        name
        for name, entry in ACCESS.items()
        if entry.scoped
        and "*" not in name
        and name not in NOT_CRAWLED
        and name not in PLAIN_ARGS
        and _takes_args(name)
    }
    assert scoped_with_keys == set(objects), (
        "entries taking an object's key without B's key here (or gone):",
        sorted(scoped_with_keys ^ set(objects)),
    )
    clients = {u: _client(u) for u in ("ann1", "lead", "admin")}
    answers = {}
    for name in sorted(objects):
        entry = ACCESS[name]
        username = _member_for(entry)
        url = _mounted(A, reverse(name, args=_args(keys, username, objects[name])))
        client = clients[username]
        posting = entry.kind == Kind.ACTION or name.endswith(
            ("_import", "_cancel", "_retry", "_freeze", "_judge", "_skip", "_test", "_redeliver")
        )
        try:
            response = client.post(url) if posting else client.get(url)
        except Exception as exc:  # a crash on B's object is a finding too
            answers[name] = (url, username, repr(exc)[:120])
            continue
        answers[name] = (url, username, response.status_code)
    wrong = {name: got for name, got in answers.items() if got[2] != 404}
    assert not wrong, f"{len(wrong)} of B's object URLs do not answer 404 under /p/{A}/: {wrong}"
