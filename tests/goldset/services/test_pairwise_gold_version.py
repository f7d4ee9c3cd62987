"""A pairwise task on a gold version (issue 30: "two or more systems' answers on the same gold
version"): its pairs come only from the questions the version holds (its PROBE question file),
a version that holds none of the runs' shared questions or belongs to another project is
refused with nothing stored, and the release report refuses a task on another version than
its own (the service and the command, exit 2), while a task that names none is stated as such
in the section."""

import pytest
from django.core.management import CommandError, call_command

from goldset.exceptions import CrossProjectReference
from goldset.models import GoldVersion, PairwisePair, PairwiseTask, Question, ReleaseReport
from goldset.services.exports import version_question_ids
from goldset.services.freeze import store_frozen_version
from goldset.services.pairwise import PairwiseRejected
from goldset.services.release_reports import (
    PairwiseVersionMismatch,
    create_release_report,
    pairwise_section,
)
from goldset.services.version_tags import resolve_version, set_version_tag
from tests.factories import (
    AnswerRecordFactory,
    RunFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from tests.goldset.pairwise_support import frozen_runs, make_task
from tests.goldset.project_support import other_project

pytestmark = pytest.mark.django_db


def _questions(task) -> set[str]:
    return set(
        PairwisePair.objects.filter(task=task).values_list("question__question_id", flat=True)
    )


def _draw(task) -> list[tuple]:
    return list(
        task.pairs.order_by("position").values_list(
            "question__question_id", "record_a__public_id", "record_b__public_id"
        )
    )


def test_a_task_on_a_gold_version_draws_pairs_only_from_its_questions(lead, admin_user):
    runs, version, frozen, later = frozen_runs(admin_user)
    assert set(frozen) <= version_question_ids(version)
    assert not set(later) & version_question_ids(version)
    on_version = make_task(runs, actor=lead, name="On v1", gold_version=version)
    unversioned = make_task(runs, actor=lead, name="Any question")
    assert on_version.gold_version == version and unversioned.gold_version is None
    assert _questions(on_version) == set(frozen)
    assert _questions(unversioned) == set(frozen) | set(later)
    assert on_version.pairs.count() == 3 * len(frozen)  # all pairs of 3 systems per question


def test_a_tag_names_the_same_version_and_the_same_pairs(lead, admin_user):
    runs, version, frozen, _ = frozen_runs(admin_user)
    set_version_tag(project=default_project(), actor=admin_user, name="pw-release", version=version)
    by_number = make_task(
        runs,
        actor=lead,
        name="by number",
        gold_version=resolve_version(project=default_project(), ref="v1"),
    )
    by_tag = make_task(
        runs,
        actor=lead,
        name="by tag",
        gold_version=resolve_version(project=default_project(), ref="pw-release"),
    )
    assert by_tag.gold_version == by_number.gold_version == version
    assert _draw(by_tag) == _draw(by_number)
    assert {q for q, _, _ in _draw(by_tag)} == set(frozen)


def test_runs_sharing_no_question_of_the_version_are_refused(lead, admin_user):
    _, version, frozen, later = frozen_runs(admin_user)
    # two more systems that answered only questions imported after the freeze
    later_runs = [RunFactory(run_id=f"pw-late-run-{j}") for j in range(2)]
    for question in Question.objects.filter(question_id__in=later):
        for run in later_runs:
            AnswerRecordFactory(run=run, question=question)
    with pytest.raises(PairwiseRejected) as refused:
        make_task(later_runs, actor=lead, name="Nothing frozen", gold_version=version)
    assert refused.value.field == "gold_version"
    assert "share no question of gold version v1" in str(refused.value)
    assert not PairwiseTask.objects.filter(name="Nothing frozen").exists()


def test_another_projects_version_is_refused(lead, admin_user):
    runs, _, _, _ = frozen_runs(admin_user)
    theirs = GoldVersion(project=other_project(slug="pw-gv-other"), number=1, sealed=True)
    with pytest.raises(CrossProjectReference):
        make_task(runs, actor=lead, name="Theirs", gold_version=theirs)
    assert not PairwiseTask.objects.exists()


# ---------------------------------------------------------------- the release report


@pytest.fixture
def two_versions(lead, admin_user):
    """v1 (three questions) and v2 (frozen after two more): a task on v2."""
    runs, v1, _, _ = frozen_runs(admin_user)
    block = make_gold_corpus(1, domains=("federal_it",))[0]
    v2 = store_frozen_version(
        project=default_project(), rows=[gold_row_for(block, triple_id="gt-pw-2")], actor=admin_user
    )
    task = make_task(runs, actor=lead, name="On v2", gold_version=v2)
    return runs, v1, v2, task


def test_the_release_report_refuses_a_task_on_another_version(two_versions, admin_user):
    runs, v1, _, task = two_versions
    with pytest.raises(PairwiseVersionMismatch) as refused:
        create_release_report(
            project=default_project(),
            version=v1,
            run_ids=[r.run_id for r in runs],
            actor=admin_user,
            pairwise_task=task,
        )
    assert refused.value.field == "pairwise_task"
    assert str(refused.value) == (
        "pairwise task 'On v2' compares the questions of gold version v2, but this report is "
        "on v1: choose a pairwise task on v1 (or none)"
    )
    assert not ReleaseReport.objects.exists()


def test_the_command_refuses_it_with_exit_2(two_versions, admin_user):
    runs, _, _, task = two_versions
    with pytest.raises(CommandError) as refused:
        call_command(
            "release_report",
            "--gold-version",
            "1",
            "--run",
            runs[0].run_id,
            "--pairwise-task",
            task.name,
        )
    assert refused.value.returncode == 2
    assert "compares the questions of gold version v2, but this report is on v1" in str(
        refused.value
    )
    assert not ReleaseReport.objects.exists()


def test_the_section_states_the_tasks_version_or_that_it_names_none(two_versions, lead):
    runs, v1, v2, task = two_versions
    versioned = pairwise_section(task, systems=[], version=v2)
    assert versioned["gold_version"] == "v2"
    assert (
        versioned["version_note"] == "The pairwise task compares the questions of gold version v2."
    )
    loose = make_task(runs, actor=lead, name="No version")
    stated = pairwise_section(loose, systems=[], version=v1)
    assert stated["gold_version"] is None
    assert stated["version_note"] == (
        "The pairwise task names no gold version: its pairs are drawn from the runs' shared "
        "questions, which v1 may not all hold."
    )
