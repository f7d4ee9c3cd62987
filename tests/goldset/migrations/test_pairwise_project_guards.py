"""Pairwise tables under the project guards (migration 0047, ``GUARDS_PAIRWISE_0047``): the
reverse side — a task, question, answer record, run, gold version or pair whose project (or, for
a record, question) changes while pairwise rows of its old project name it is refused — and the
calibration pairs' guards both ways. Whatever writes it (here ``.update()`` and ``create``
around the services): ``IntegrityError`` naming the table and the column, nothing stored."""

import pytest
from django.db import transaction

from goldset.models import (
    AnswerRecord,
    GoldVersion,
    PairCalibrationItem,
    PairwisePair,
    PairwiseTask,
    PairwiseTaskRun,
    Question,
    Run,
)
from tests.goldset.migrations.test_project_guards import refused, worlds  # noqa: F401

pytestmark = pytest.mark.django_db


def _pairwise(w):
    """A task of ``w``'s project on its gold version comparing two runs, one pair of two records
    answering ``w.question``."""
    second = w.make_record(run=w.run2, question=w.question)
    task = PairwiseTask.objects.create(
        project=w.project,
        name=f"t-{w.tag}",
        gold_version=w.gold,
        design="all_pairs",
        seed=1,
        tier="tier_b",
        reviewers_per_pair=1,
        created_by=w.user,
    )
    PairwiseTaskRun.objects.create(task=task, run=w.run)
    pair = PairwisePair.objects.create(
        project=w.project,
        task=task,
        question=w.question,
        record_a=w.record,
        record_b=second,
        position=0,
        queue_rank=1,
        reviewers_required=1,
    )
    return task, pair, second


def test_referenced_rows_cannot_move_under_pairwise_rows(worlds):  # noqa: F811
    a, b = worlds
    task, pair, second = _pairwise(a)
    moves = [
        ("goldset_pairwisetask", PairwiseTask, task.pk),
        ("goldset_question", Question, a.question.pk),
        ("goldset_answerrecord", AnswerRecord, second.pk),
        ("goldset_run", Run, a.run.pk),
        ("goldset_goldversion", GoldVersion, a.gold.pk),
    ]
    for table, model, pk in moves:
        # the moved row's own forward guards may refuse first (a record's run, a task's gold
        # version): the pairwise reverse guards are the last line, shown alone below
        with refused(table, r"\w+"), transaction.atomic():
            model.objects.filter(pk=pk).update(project=b.project)
        assert model.objects.get(pk=pk).project_id == a.project.pk
    # alone: a task without a gold version whose run moves, then the task itself
    bare = PairwiseTask.objects.create(
        project=a.project, name="bare", design="all_pairs", seed=1, tier="tier_b",
        reviewers_per_pair=1, created_by=a.user,
    )  # fmt: skip
    lone_run = Run.objects.create(project=a.project, run_id="r-lone", system=a.system)
    PairwiseTaskRun.objects.create(task=bare, run=lone_run)
    with refused("goldset_run", "project_id"), transaction.atomic():
        Run.objects.filter(pk=lone_run.pk).update(project=b.project, system=b.system)
    with refused("goldset_pairwisetask", "project_id"), transaction.atomic():
        PairwiseTask.objects.filter(pk=bare.pk).update(project=b.project)
    # a record answering another question than its pair's
    other_question = a.make_question("2")
    with refused("goldset_answerrecord", "project_id"), transaction.atomic():
        AnswerRecord.objects.filter(pk=second.pk).update(question=other_question)
    # a record nobody pairs moves freely
    lone = a.make_record(run=a.run2, question=other_question)
    AnswerRecord.objects.filter(pk=lone.pk).update(question=a.make_question("3"))


def test_calibration_pairs_name_rows_of_their_project_only(worlds):  # noqa: F811
    a, b = worlds
    _, pair, second = _pairwise(a)
    b_second = b.make_record(run=b.run2, question=b.question)

    def item(w, **fields):
        values = {
            "project": w.project,
            "question": a.question,
            "record_a": a.record,
            "record_b": second,
            "reference": "a",
            "source_pair": pair,
            "created_by": a.user,
        }
        return PairCalibrationItem.objects.create(**(values | fields))

    for column, fields in (
        # its records then answer another question too: any of the three may refuse first
        ("(question_id|record_a_id|record_b_id)", {"question": b.question}),
        ("record_a_id", {"record_a": b.record}),
        ("record_b_id", {"record_b": b_second}),
        (
            "source_pair_id",
            {
                "project": b.project,
                "question": b.question,
                "record_a": b.record,
                "record_b": b_second,
            },
        ),
    ):
        with refused("goldset_paircalibrationitem", column), transaction.atomic():
            item(a, **fields)
    assert not PairCalibrationItem.objects.exists()
    stored = item(a)
    with refused("goldset_paircalibrationitem", "record_a_id"), transaction.atomic():
        PairCalibrationItem.objects.filter(pk=stored.pk).update(record_a=b.record)
    with (
        refused("goldset_pairwisepair", "(project_id|task_id|question_id|record_a_id)"),
        transaction.atomic(),
    ):
        PairwisePair.objects.filter(pk=pair.pk).update(project=b.project)
    assert PairCalibrationItem.objects.get(pk=stored.pk).record_a_id == a.record.pk
