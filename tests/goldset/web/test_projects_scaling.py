"""The hot paths with 1 project and with 10 projects holding data (issue 27: "query counts and
the hot-path benchmarks unchanged with 10 projects; the scoping uses indexes that start with the
project").

In one project ("scaled") an annotator opens the queue page, claims the next item and submits it
(the htmx submit that records the decision and claims the next item), for answers and for triple
reviews. Then 9 more projects get pools larger than the scaled project's, older than it (their
revisions come first in the open-slots order), with decisions on part of them; a second
annotator of the scaled project does the same. Each request runs the same statements in both
states, and on PostgreSQL no SELECT of the second state scans a grown table (EXPLAIN); the
review claim's walk of open revisions reads the scaled project's rows only."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.models import (
    AnswerRecord,
    Domain,
    Label,
    LabelAssignment,
    Review,
    ReviewAssignment,
    Triple,
    TripleRevision,
)
from goldset.services.projects import create_project, grant_role
from goldset.services.triples import create_triple
from tests.factories import (
    AnswerRecordFactory,
    BlockVersionFactory,
    CalibrationResultFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
    UserFactory,
)
from tests.goldset.answers_helpers import GOOD
from tests.goldset.bulk_support import (
    analyze,
    grow_answer_pool,
    grow_decision_pool,
    grow_revision_pool,
)
from workbench.project_urls import project_url
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

GROWN_TABLES = tuple(
    m._meta.db_table
    for m in (
        AnswerRecord,
        Triple,
        TripleRevision,
        LabelAssignment,
        Label,
        ReviewAssignment,
        Review,
    )
)
OTHER_PROJECTS = 9
SCALED_POOL = 300
OTHER_POOL = 1_000  # each of the 9 others: 9,000 open records and triples beside the 300
LABEL = {**GOOD, "severe_safety": "no", "secondary_failures": []}


@pytest.fixture
def no_fast_decisions(settings):
    """Whether a decision is flagged fast depends on the clock: off, so the counts compare like
    with like (as in test_queue_pages_scaling)."""
    settings.FAST_DECISION_SECONDS_GOLD = 0
    settings.FAST_DECISION_SECONDS_TRIAGE = 0


@pytest.fixture
def installer():
    return UserFactory(username="installer", is_staff=True)


class ProjectData:
    """One project with a domain, an answer-record template and a triple template of its own."""

    def __init__(self, *, slug: str, by):
        self.project = create_project(name=slug, slug=slug, by=by)
        self.domain = Domain.objects.create(project=self.project, slug=f"{slug}_d", name=slug)
        self.record = AnswerRecordFactory(
            project=self.project,
            question=QuestionFactory(project=self.project, domain=self.domain),
            run=RunFactory(
                project=self.project,
                system=SystemFactory(project=self.project, system_id=f"{slug}-system"),
            ),
        )
        self.author = UserFactory(username=f"{slug}-author")
        grant_role(project=self.project, user=self.author, role=Role.ANNOTATOR)
        self.triple = create_triple(
            project=self.project,
            author=self.author,
            block_version=BlockVersionFactory(
                block__project=self.project,
                block__document__project=self.project,
                block__document__domain=self.domain,
            ),
            question="What encryption-at-rest mechanism protects customer documents?",
            expected_answer="AES-256 at the storage layer.",
            task_type="factual_qa",
            source="public_rfp",
        )

    def member(self, username: str):
        """A new annotator of this project only, qualified in its domain."""
        user = UserFactory(username=username)
        grant_role(project=self.project, user=user, role=Role.ANNOTATOR)
        CalibrationResultFactory(annotator=user, domain=self.domain)
        return user

    def url(self, viewname: str) -> str:
        return project_url(self.project, viewname)


def _grow_other_projects(installer) -> None:
    """9 projects, each with ``OTHER_POOL`` open records and pending triples, older than the
    scaled project's rows in the open-revisions order, a third of them decided by a member."""
    for k in range(OTHER_PROJECTS):
        other = ProjectData(slug=f"other-{k}", by=installer)
        tag = f"other{k}"
        grow_answer_pool(other.record, OTHER_POOL, tag=tag)
        grow_revision_pool(other.triple, OTHER_POOL, tag=tag)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE goldset_triplerevision SET created_at = created_at - interval '1 day'"
                " WHERE triple_id IN (SELECT id FROM goldset_triple WHERE project_id = %s)",
                [other.project.pk],
            )
        worker = other.member(f"{tag}-worker")
        decided = f"{tag}-decided"
        grow_answer_pool(other.record, OTHER_POOL // 3, tag=decided)
        grow_revision_pool(other.triple, OTHER_POOL // 3, tag=decided)
        grow_decision_pool(tag=decided, annotator=worker, reviewer=worker)
    analyze(*(m for m in (AnswerRecord, Triple, TripleRevision, LabelAssignment, Label)))
    analyze(ReviewAssignment, Review)


def _request(client, method: str, url: str, data=None, *, target: str = "") -> tuple:
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": target} if target else {}
    with CaptureQueriesContext(connection) as ctx:
        response = getattr(client, method)(url, data or {}, **headers)
    return response, [q["sql"] for q in ctx.captured_queries]


def _motion(client, scaled: ProjectData, kind: str) -> dict[str, list[str]]:
    """Queue page, claim (redirected to the item), and the htmx submit with the next item: the
    statements of each request."""
    queue, claim, form, target = {
        "labels": ("answers:queue", "answers:claim", LABEL, "label-item"),
        "reviews": ("curation:queue", "curation:next", {"verdict": "confirm"}, "review-item"),
    }[kind]
    page, page_sql = _request(client, "get", scaled.url(queue))
    assert page.status_code == 200
    claimed, claim_sql = _request(client, "post", scaled.url(claim))
    assert claimed.status_code == 302, claimed
    item = claimed["Location"]
    assert item.startswith(f"/p/{scaled.project.slug}/"), item
    done, submit_sql = _request(client, "post", item, form, target=target)
    assert done.status_code == 200 and "HX-Push-Url" in done, done.content[:500]
    assert done["HX-Push-Url"].startswith(f"/p/{scaled.project.slug}/")
    assert done["HX-Push-Url"] != item
    return {"queue": page_sql, "claim": claim_sql, "submit": submit_sql}


def _scans(statements: list[str]) -> list[str]:
    """The EXPLAIN plans of the SELECTs on grown tables that scan one of them sequentially."""
    found = []
    with connection.cursor() as cursor:
        for sql in statements:
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            if not any(f'"{table}"' in sql for table in GROWN_TABLES):
                continue
            cursor.execute("EXPLAIN " + sql)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            if any(f"Seq Scan on {table} " in plan for table in GROWN_TABLES):
                found.append(plan)
    return found


def _rows_read(statements: list[str], table: str) -> int:
    """The most rows any one of ``statements`` (plain SELECTs) read from ``table``: rows a scan
    of it returned plus rows its filter removed, over all loops (EXPLAIN ANALYZE)."""

    def walk(node):
        if node.get("Relation Name") == table:
            yield (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node[
                "Actual Loops"
            ]
        for child in node.get("Plans", ()):
            yield from walk(child)

    most = 0
    with connection.cursor() as cursor:
        for sql in statements:
            plain = sql.lstrip().upper().startswith("SELECT") and "FOR UPDATE" not in sql.upper()
            if plain and f'"{table}"' in sql:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
                plan = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                most = max(most, *walk(plan[0]["Plan"]), 0)
    return most


def _same_cost_with_ten_projects(client_for, installer, kind: str) -> dict:
    """Two annotators of the scaled project work one motion each with it alone, two more with
    nine other projects holding data: the n-th of each pair meets the same situation (with two
    reviewers per triple, the first of a pair completes a revision, the second opens one)."""
    scaled = ProjectData(slug="scaled", by=installer)
    grow_answer_pool(scaled.record, SCALED_POOL, tag="scaled")
    grow_revision_pool(scaled.triple, SCALED_POOL, tag="scaled")
    _motion(client_for(scaled.member("warm")), scaled, kind)  # per-process caches
    one = [_motion(client_for(scaled.member(f"one-{n}")), scaled, kind) for n in (1, 2)]

    _grow_other_projects(installer)
    ten = [_motion(client_for(scaled.member(f"ten-{n}")), scaled, kind) for n in (1, 2)]

    for alone, among in zip(one, ten, strict=True):
        counts = {step: (len(alone[step]), len(among[step])) for step in alone}
        assert all(a == b for a, b in counts.values()), counts
    statements = [sql for motion in ten for step in motion.values() for sql in step]
    assert _scans(statements) == []
    return {"scaled": scaled, "statements": statements}


def test_labeling_costs_the_same_with_ten_projects(client_for, installer, no_fast_decisions):
    _same_cost_with_ten_projects(client_for, installer, "labels")


def test_reviewing_costs_the_same_with_ten_projects(client_for, installer, no_fast_decisions):
    seen = _same_cost_with_ten_projects(client_for, installer, "reviews")
    # The claim walks the scaled project's open revisions only (an index starting with the
    # project), never past the 9,000 older open revisions of the other projects.
    own = TripleRevision.objects.filter(project=seen["scaled"].project).count()
    assert TripleRevision.objects.count() > 20 * own
    # (a statement may read the project's rows twice, by the open-slots index and by the
    # primary key, as the planner chooses with the whole suite's statistics: 594 for 301 once)
    assert 0 < _rows_read(seen["statements"], TripleRevision._meta.db_table) <= 2 * own
