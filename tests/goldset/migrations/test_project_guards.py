"""Issue 27: the database refuses a row naming a row of another project (migrations 0037 and
0041, ``goldset/migrations/_project_guards.py``), whatever writes it — here the ORM around the
services: ``create``, ``bulk_create``, ``.update()`` and raw SQL. Each guarded pair is written
once within one project (stored) and once across two (``IntegrityError`` naming the table and
the column, nothing stored). Runs on the database in ``DATABASE_URL`` (PostgreSQL in CI) and on
the embedded SQLite without it."""

import hashlib
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from goldset.models import (
    Adjudication,
    AnswerCitation,
    AnswerRecord,
    Block,
    BlockVersion,
    CalibrationItem,
    CalibrationSet,
    Customer,
    DiscussionMessage,
    Document,
    Domain,
    Evaluator,
    EvaluatorImport,
    EvaluatorOutput,
    EvidencePassage,
    GoldVersion,
    GuidelineVersion,
    PcsCalibration,
    Project,
    Question,
    ReleaseReport,
    RetrievedPassage,
    Run,
    ScoringJob,
    System,
    Triple,
    TripleRevision,
)
from goldset.models.answers import new_public_id
from goldset.models.curation import Source
from goldset.models.routing import Tier
from goldset.rules.labeling import queue_rank
from tests.factories import UserFactory, default_project

pytestmark = pytest.mark.django_db


class World:
    """One of everything the guards name, all in ``project``."""

    def __init__(self, project: Project, tag: str, user):
        self.project, self.tag, self.user = project, tag, user
        self.domain = Domain.objects.create(project=project, slug=f"d-{tag}", name=tag)
        self.domain2 = Domain.objects.create(project=project, slug=f"d2-{tag}", name=tag)
        self.customer = Customer.objects.create(project=project, name=tag, slug=f"c-{tag}")
        self.document = self.make_document("1")
        self.document2 = self.make_document("2")
        self.block = Block.objects.create(
            project=project, block_id=f"b-{tag}", document=self.document
        )
        self.version = BlockVersion.objects.create(
            block=self.block, version=1, text=tag, sha256="0" * 64
        )
        self.triple = self.make_triple("1")
        self.revision = self.make_revision(self.triple, self.version)
        self.system = System.objects.create(project=project, system_id=f"s-{tag}")
        self.run = Run.objects.create(project=project, run_id=f"r-{tag}", system=self.system)
        self.run2 = Run.objects.create(project=project, run_id=f"r2-{tag}", system=self.system)
        self.question = self.make_question("1")
        self.record = self.make_record(run=self.run, question=self.question)
        self.gold = GoldVersion.objects.create(project=project, number=1, created_by=user)
        self.calibration = PcsCalibration.objects.create(
            project=project, name=f"pcs-{tag}", version=1, created_by=user
        )
        self.calibration_set = CalibrationSet.objects.create(project=project, domain=self.domain)
        self.evaluator = Evaluator.objects.create(
            project=project, name=f"judge-{tag}", version="1", kind="llm_judge"
        )
        self.evaluator_import = EvaluatorImport.objects.create(
            evaluator=self.evaluator, source_name="o.jsonl", sha256="0" * 64, n_records=1
        )
        self.guideline = GuidelineVersion.objects.create(
            domain=self.domain,
            task="adjudication",
            version=1,
            body="b",
            html="b",
            created_by=user,
        )

    def make_document(self, n: str) -> Document:
        return Document.objects.create(
            project=self.project,
            document_id=f"doc-{self.tag}-{n}",
            title=self.tag,
            domain=self.domain,
            authority=Decimal("0.5"),
        )

    def make_triple(self, n: str, **fields) -> Triple:
        values = {
            "project": self.project,
            "external_id": f"gt-{self.tag}-{n}",
            "tier": Tier.GOLD,
            "routing_rule": "r",
            "rules_version": 1,
            "source": Source.PUBLIC_RFP,
            "domain": self.domain,
            "task_type": "factual_qa",
            "author": self.user,
            "added_at": timezone.now(),
        }
        return Triple.objects.create(**(values | fields))

    def make_revision(self, triple, version, number=1) -> TripleRevision:
        return TripleRevision.objects.create(
            project_id=triple.project_id,
            triple=triple,
            number=number,
            question="q?",
            expected_block_version=version,
            expected_answer="a",
            created_by=self.user,
            reviewers_needed=2,
        )

    def make_question(self, n: str) -> Question:
        return Question.objects.create(
            project=self.project,
            question_id=f"q-{self.tag}-{n}",
            domain=self.domain,
            task_family="f",
            text="t",
            content_sha256=hashlib.sha256(f"{self.tag}{n}".encode()).hexdigest(),
        )

    def record_fields(self, **fields) -> dict:
        public_id = new_public_id()
        values = {
            "project": self.project,
            "public_id": public_id,
            "run": self.run,
            "question": self.question,
            "domain": self.domain,
            "queue_rank": queue_rank(public_id=public_id),
            "answer": "a",
            "tier": Tier.GOLD,
            "routing_rule": "r",
            "rules_version": 1,
            "labels_required": 2,
        }
        return values | fields

    def make_record(self, **fields) -> AnswerRecord:
        return AnswerRecord.objects.create(**self.record_fields(**fields))

    def job_fields(self, **fields) -> dict:
        values = {
            "project": self.project,
            "version": self.gold,
            "name": "job",
            "kind": "retrieval",
            "run_format": "trec",
            "run_filename": "r",
            "run_sha256": "0",
            "run_size": 0,
        }
        return values | fields

    def adjudication_fields(self, **fields) -> dict:
        return {
            "record": self.make_record(run=self.run2),
            "lead": self.user,
            "reason": "no_majority",
            "acceptability": "acceptable",
            "grounding": "fully_grounded",
        } | fields

    def report_fields(self, **fields) -> dict:
        return {"project": self.project, "version": self.gold, "report": {}, "html": ""} | fields


@pytest.fixture
def worlds():
    user = UserFactory()
    other = Project.objects.create(name="Other", slug="other")
    return World(default_project(), "a", user), World(other, "b", user)


def refused(table: str, column: str):
    """The database's refusal, naming the table and the column."""
    return pytest.raises(IntegrityError, match=rf"{table}\.{column}")


# Writes of a new row: (model, what is stored in one project, the same across two,
# table.column).
INSERTS = {
    "triple domain": (
        Triple,
        lambda a, b: a.make_triple("x", domain=a.domain2),
        lambda a, b: a.make_triple("x", domain=b.domain),
        "goldset_triple.domain_id",
    ),
    "triple customer": (
        Triple,
        lambda a, b: a.make_triple("x", source=Source.CUSTOMER_PERMISSIONED, customer=a.customer),
        lambda a, b: a.make_triple("x", source=Source.CUSTOMER_PERMISSIONED, customer=b.customer),
        "goldset_triple.customer_id",
    ),
    "triple parent": (
        Triple,
        lambda a, b: a.make_triple("x", parent=a.triple),
        lambda a, b: a.make_triple("x", parent=b.triple),
        "goldset_triple.parent_id",
    ),
    "revision pin": (
        TripleRevision,
        lambda a, b: a.make_revision(a.triple, a.version, number=2),
        lambda a, b: a.make_revision(a.triple, b.version, number=2),
        "goldset_triplerevision.expected_block_version_id",
    ),
    "record run": (
        AnswerRecord,
        lambda a, b: a.make_record(run=a.run2),
        lambda a, b: a.make_record(run=b.run),
        "goldset_answerrecord.run_id",
    ),
    "record question": (
        AnswerRecord,
        lambda a, b: a.make_record(run=a.run2, question=a.question),
        lambda a, b: a.make_record(run=a.run2, question=b.question),
        "goldset_answerrecord.question_id",
    ),
    "record domain": (
        AnswerRecord,
        lambda a, b: a.make_record(run=a.run2, domain=a.domain2),
        lambda a, b: a.make_record(run=a.run2, domain=b.domain),
        "goldset_answerrecord.domain_id",
    ),
    "job version": (
        ScoringJob,
        lambda a, b: ScoringJob.objects.create(**a.job_fields()),
        lambda a, b: ScoringJob.objects.create(**a.job_fields(version=b.gold)),
        "goldset_scoringjob.version_id",
    ),
    "job calibration": (
        ScoringJob,
        lambda a, b: ScoringJob.objects.create(**a.job_fields(calibration=a.calibration)),
        lambda a, b: ScoringJob.objects.create(**a.job_fields(calibration=b.calibration)),
        "goldset_scoringjob.calibration_id",
    ),
    "release report version": (
        ReleaseReport,
        lambda a, b: ReleaseReport.objects.create(**a.report_fields()),
        lambda a, b: ReleaseReport.objects.create(**a.report_fields(version=b.gold)),
        "goldset_releasereport.version_id",
    ),
    "release report calibration": (
        ReleaseReport,
        lambda a, b: ReleaseReport.objects.create(**a.report_fields(calibration=a.calibration)),
        lambda a, b: ReleaseReport.objects.create(**a.report_fields(calibration=b.calibration)),
        "goldset_releasereport.calibration_id",
    ),
    "gold version parent": (
        GoldVersion,
        lambda a, b: GoldVersion.objects.create(project=a.project, number=2, parent=a.gold),
        lambda a, b: GoldVersion.objects.create(project=a.project, number=2, parent=b.gold),
        "goldset_goldversion.parent_id",
    ),
    "calibration set domain": (
        CalibrationSet,
        lambda a, b: CalibrationSet.objects.create(project=a.project, domain=a.domain2),
        lambda a, b: CalibrationSet.objects.create(project=a.project, domain=b.domain2),
        "goldset_calibrationset.domain_id",
    ),
    "calibration item record": (
        CalibrationItem,
        lambda a, b: CalibrationItem.objects.create(
            calibration_set=a.calibration_set, record=a.record
        ),
        lambda a, b: CalibrationItem.objects.create(
            calibration_set=a.calibration_set, record=b.record
        ),
        "goldset_calibrationitem.record_id",
    ),
    "document domain": (
        Document,
        lambda a, b: Document.objects.create(
            project=a.project, document_id="x", title="x", domain=a.domain2, authority=1
        ),
        lambda a, b: Document.objects.create(
            project=a.project, document_id="x", title="x", domain=b.domain2, authority=1
        ),
        "goldset_document.domain_id",
    ),
    "block document": (
        Block,
        lambda a, b: Block.objects.create(project=a.project, block_id="x", document=a.document2),
        lambda a, b: Block.objects.create(project=a.project, block_id="x", document=b.document2),
        "goldset_block.document_id",
    ),
    "question domain": (
        Question,
        lambda a, b: a.make_question("x"),
        lambda a, b: Question.objects.create(
            project=a.project,
            question_id="q-x",
            domain=b.domain,
            task_family="f",
            text="t",
            content_sha256="1" * 64,
        ),
        "goldset_question.domain_id",
    ),
    "run system": (
        Run,
        lambda a, b: Run.objects.create(project=a.project, run_id="x", system=a.system),
        lambda a, b: Run.objects.create(project=a.project, run_id="x", system=b.system),
        "goldset_run.system_id",
    ),
    "revision triple": (
        TripleRevision,
        lambda a, b: a.make_revision(a.make_triple("x"), a.version),
        lambda a, b: TripleRevision.objects.create(
            project=a.project,
            triple=b.make_triple("x"),
            number=1,
            question="q?",
            expected_block_version=b.version,
            expected_answer="a",
            created_by=a.user,
            reviewers_needed=2,
        ),
        "goldset_triplerevision.triple_id",
    ),
    "evidence pin": (
        EvidencePassage,
        lambda a, b: EvidencePassage.objects.create(
            question=a.question, kind="gold", block_version=a.version, passage_ref="p"
        ),
        lambda a, b: EvidencePassage.objects.create(
            question=a.question, kind="gold", block_version=b.version, passage_ref="p"
        ),
        "goldset_evidencepassage.block_version_id",
    ),
    "citation pin": (
        AnswerCitation,
        lambda a, b: AnswerCitation.objects.create(
            record=a.record, block_version=a.version, passage_ref="p", position=1
        ),
        lambda a, b: AnswerCitation.objects.create(
            record=a.record, block_version=b.version, passage_ref="p", position=1
        ),
        "goldset_answercitation.block_version_id",
    ),
    "retrieved passage pin": (
        RetrievedPassage,
        lambda a, b: RetrievedPassage.objects.create(
            record=a.record, block_version=a.version, passage_ref="p", rank=1
        ),
        lambda a, b: RetrievedPassage.objects.create(
            record=a.record, block_version=b.version, passage_ref="p", rank=1
        ),
        "goldset_retrievedpassage.block_version_id",
    ),
    "judge output record": (
        EvaluatorOutput,
        lambda a, b: EvaluatorOutput.objects.create(
            evaluator=a.evaluator, record=a.record, source=a.evaluator_import
        ),
        lambda a, b: EvaluatorOutput.objects.create(
            evaluator=a.evaluator, record=b.record, source=a.evaluator_import
        ),
        "goldset_evaluatoroutput.record_id",
    ),
    "discussion revision": (
        DiscussionMessage,
        lambda a, b: DiscussionMessage.objects.create(
            triple=a.triple, revision=a.revision, author=a.user, body="m"
        ),
        lambda a, b: DiscussionMessage.objects.create(
            triple=a.triple, revision=b.revision, author=a.user, body="m"
        ),
        "goldset_discussionmessage.revision_id",
    ),
    "adjudication guideline": (
        Adjudication,
        lambda a, b: Adjudication.objects.create(**a.adjudication_fields(guideline=a.guideline)),
        lambda a, b: Adjudication.objects.create(**a.adjudication_fields(guideline=b.guideline)),
        "goldset_adjudication.guideline_id",
    ),
}


@pytest.mark.parametrize("case", INSERTS)
def test_a_new_row_naming_another_projects_row_is_refused(worlds, case):
    a, b = worlds
    model, same, across, column = INSERTS[case]
    table, name = column.split(".")
    before = model.objects.count()
    with refused(table, name), transaction.atomic():
        across(a, b)
    assert model.objects.count() == before  # nothing stored
    assert same(a, b).pk is not None  # the same row within the project is stored
    assert model.objects.count() == before + 1


# Updates through the ORM, bypassing the services: (model, the row, field, same, across).
UPDATES = {
    "triple domain": (Triple, "triple", "domain", "domain2", "goldset_triple.domain_id"),
    "revision pin": (
        TripleRevision,
        "revision",
        "expected_block_version",
        "version",
        "goldset_triplerevision.expected_block_version_id",
    ),
    "record run": (AnswerRecord, "record", "run", "run2", "goldset_answerrecord.run_id"),
    "block document": (Block, "block", "document", "document2", "goldset_block.document_id"),
    "question domain": (Question, "question", "domain", "domain2", "goldset_question.domain_id"),
    "calibration set domain": (
        CalibrationSet,
        "calibration_set",
        "domain",
        "domain2",
        "goldset_calibrationset.domain_id",
    ),
}


@pytest.mark.parametrize("case", UPDATES)
def test_an_update_to_another_projects_row_is_refused(worlds, case):
    a, b = worlds
    model, row, field, same, column = UPDATES[case]
    table, name = column.split(".")
    pk = getattr(a, row).pk
    model.objects.filter(pk=pk).update(**{field: getattr(a, same)})  # within the project
    assert getattr(model.objects.get(pk=pk), f"{field}_id") == getattr(a, same).pk
    with refused(table, name), transaction.atomic():
        model.objects.filter(pk=pk).update(**{field: getattr(b, same)})
    assert getattr(model.objects.get(pk=pk), f"{field}_id") == getattr(a, same).pk


def test_moving_a_row_to_another_project_is_refused_while_it_or_its_targets_stay(worlds):
    a, b = worlds
    # the referring row moves: its domain and its revision's pin stay in A
    with refused("goldset_triple", "(domain_id|project_id)"), transaction.atomic():
        Triple.objects.filter(pk=a.triple.pk).update(project=b.project)
    # the referred row moves: A's triple, record and calibration set still name it
    with refused("goldset_domain", "project_id"), transaction.atomic():
        Domain.objects.filter(pk=a.domain.pk).update(project=b.project)
    with refused("goldset_goldversion", "project_id"), transaction.atomic():
        ScoringJob.objects.create(**a.job_fields())
        GoldVersion.objects.filter(pk=a.gold.pk).update(project=b.project)
    # the pinned block moves (the revision's triple stays), or the version to B's block
    with refused("goldset_block", "(document_id|project_id)"), transaction.atomic():
        Block.objects.filter(pk=a.block.pk).update(project=b.project)
    with refused("goldset_blockversion", "block_id"), transaction.atomic():
        BlockVersion.objects.filter(pk=a.version.pk).update(block=b.block, version=2)
    # a row nobody names moves freely
    lone = Domain.objects.create(project=a.project, slug="lone", name="lone")
    Domain.objects.filter(pk=lone.pk).update(project=b.project)
    assert Domain.objects.get(pk=lone.pk).project_id == b.project.pk


def test_the_0041_pairs_refuse_a_move_under_the_rows_that_name_them(worlds):
    """The reverse side of migration 0041's guards: a target row changing project (or a block
    version moving to another block) while rows of its old project still name it."""
    a, b = worlds
    EvidencePassage.objects.create(
        question=a.question, kind="gold", block_version=a.version, passage_ref="p"
    )
    EvaluatorOutput.objects.create(
        evaluator=a.evaluator, record=a.record, source=a.evaluator_import
    )
    Adjudication.objects.create(**a.adjudication_fields(guideline=a.guideline))
    with refused("goldset_system", "project_id"), transaction.atomic():
        System.objects.filter(pk=a.system.pk).update(project=b.project)
    # (a moving document or question also leaves its domain behind: either guard may answer)
    with refused("goldset_document", "(domain_id|project_id)"), transaction.atomic():
        Document.objects.filter(pk=a.document.pk).update(project=b.project)
    with refused("goldset_question", "(domain_id|project_id)"), transaction.atomic():
        Question.objects.filter(pk=a.question.pk).update(project=b.project)
    with refused("goldset_evaluator", "project_id"), transaction.atomic():
        Evaluator.objects.filter(pk=a.evaluator.pk).update(project=b.project)
    with refused("goldset_guidelineversion", "domain_id"), transaction.atomic():
        GuidelineVersion.objects.filter(pk=a.guideline.pk).update(domain=b.domain)
    with refused("goldset_blockversion", "block_id"), transaction.atomic():
        BlockVersion.objects.filter(pk=a.version.pk).update(block=b.block, version=2)
    assert Question.objects.get(pk=a.question.pk).project_id == a.project.pk


def test_a_bulk_insert_with_one_cross_project_row_stores_none(worlds):
    """Many rows in one statement (a ``COPY`` or multi-row ``INSERT`` of an import): one row
    naming B's question refuses the whole statement."""
    a, b = worlds
    questions = [a.make_question(f"m{n}") for n in range(5)]
    rows = [AnswerRecord(**a.record_fields(run=a.run2, question=q)) for q in questions]
    rows.append(AnswerRecord(**a.record_fields(run=a.run2, question=b.question)))
    before = AnswerRecord.objects.count()
    with refused("goldset_answerrecord", "question_id"), transaction.atomic():
        AnswerRecord.objects.bulk_create(rows)
    assert AnswerRecord.objects.count() == before
    AnswerRecord.objects.bulk_create(rows[:-1])
    assert AnswerRecord.objects.count() == before + 5


def test_raw_sql_is_refused_too(worlds):
    a, b = worlds
    with refused("goldset_triple", "customer_id"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE goldset_triple SET source = %s, customer_id = %s WHERE id = %s",
                [Source.CUSTOMER_PERMISSIONED, b.customer.pk, a.triple.pk],
            )
    assert Triple.objects.get(pk=a.triple.pk).customer_id is None


def test_a_write_within_one_project_stores_every_pair(worlds):
    """The same-project side of every guarded pair stores, in both projects."""
    a, b = worlds
    for world, other in ((a, b), (b, a)):
        for _model, same, _across, _column in INSERTS.values():
            with transaction.atomic():
                stored = same(world, other)
                assert stored.pk is not None
                transaction.set_rollback(True)
