"""Project bundles carry pairwise review (issue 30): a project's tasks with their runs, pairs,
claims, judgments (with their time on item), skips, adjudications, calibration pairs, the
reviewers' calibration answers and qualification results go into the bundle and come back in
the copy (``import_project --slug``) with new ids, every link inside the new project, the same
values (compared by natural keys: public ids, usernames, question and run ids), the same
analysis, the same qualified reviewers; a tampered pairwise member is refused and leaves
nothing behind."""

import io
import json
import tarfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import F, Q

from goldset.models import (
    PairAdjudication,
    PairAssignment,
    PairCalibrationAnswer,
    PairCalibrationItem,
    PairJudgment,
    PairQualification,
    PairSkip,
    PairStatus,
    PairwisePair,
    PairwiseTask,
    PairwiseTaskRun,
    Project,
)
from goldset.rules.pairwise import choice_from_preference
from goldset.rules.time_on_item import ItemTiming
from goldset.selectors.pairwise import (
    analysis_data,
    calibration_left_for,
    get_pairwise_analysis,
    is_pair_qualified,
)
from goldset.services.pairwise import (
    claim_next_pair,
    record_pair_adjudication,
    skip_pair,
    submit_judgment,
)
from goldset.services.pairwise_calibration import add_calibration_pair, submit_calibration_answer
from tests.factories import default_project
from tests.goldset.pairwise_support import build_runs, choice_for, make_task, reviewers

pytestmark = pytest.mark.django_db

TABLES = (
    PairwiseTask,
    PairwiseTaskRun,
    PairwisePair,
    PairAssignment,
    PairJudgment,
    PairSkip,
    PairAdjudication,
    PairCalibrationItem,
    PairCalibrationAnswer,
    PairQualification,
)


def _rec(prefix: str) -> list[str]:
    """An answer record by natural key (question id, run id): public ids may be redrawn."""
    return [f"{prefix}__question__question_id", f"{prefix}__run__run_id"]


# Per table: how to find a project's rows, and the values compared (natural keys for links).
SHAPES = {
    PairwiseTask: ("project", ["name", "design", "comparisons_per_question", "seed", "tier",
                               "reviewers_per_pair", "created_by__username", "created_at"]),
    PairwiseTaskRun: ("task__project", ["task__name", "run__run_id", "run__system__system_id"]),
    PairwisePair: ("project", ["task__name", "public_id", "question__question_id",
                               *_rec("record_a"), *_rec("record_b"), "position", "queue_rank",
                               "reviewers_required", "assigned_count", "status",
                               "final_preference", "final_source", "finalized_at"]),
    PairAssignment: ("pair__project", ["pair__public_id", "reviewer__username", "slot", "left",
                                       "claimed_at", "completed_at"]),
    PairJudgment: ("pair__project", ["pair__public_id", "assignment__slot", "reviewer__username",
                                     "preference", "strength", "rationale", "left", "server_ms",
                                     "active_ms", "created_at"]),
    PairSkip: ("pair__project", ["pair__public_id", "reviewer__username", "reason",
                                 "created_at"]),
    PairAdjudication: ("pair__project", ["pair__public_id", "lead__username", "preference",
                                         "strength", "rationale", "server_ms", "active_ms",
                                         "created_at"]),
    PairCalibrationItem: ("project", ["public_id", "question__question_id", *_rec("record_a"),
                                      *_rec("record_b"), "reference", "source_pair__public_id",
                                      "created_by__username", "created_at"]),
    PairCalibrationAnswer: ("item__project", ["item__public_id", "reviewer__username",
                                              "preference", "left", "created_at"]),
    PairQualification: ("project", ["reviewer__username", "n_items", "kappa", "kappa_note",
                                    "threshold", "passed", "disagreements", "scored_at"]),
}  # fmt: skip


def _rows(project) -> dict[str, list]:
    return {
        model.__name__: sorted(
            model.objects.filter(**{scope: project}).values_list(*fields), key=repr
        )
        for model, (scope, fields) in SHAPES.items()
    }


@pytest.fixture
def pairwise_project(lead, postgres):
    """The default project with every pairwise table filled: a task of three systems judged by
    three reviewers (timed), a skip, a split adjudicated, an open claim, four calibration pairs,
    one reviewer qualified through them and one who failed."""
    project = default_project()
    runs, _, _ = build_runs(n_systems=3, n_questions=3)
    task = make_task(runs, actor=lead, name="Bundle comparison")
    people = reviewers(3, prefix="pw-bundle")
    # each reviewer skips their first pair and judges the next three (the same three for all):
    # the first of them splits, the others are decided by majority
    plans = {0: ["a", "a", "b"], 1: ["b", "a", "b"], 2: ["tie", "a", "b"]}
    for i, person in enumerate(people):
        assignment = claim_next_pair(project=project, reviewer=person)
        skip_pair(assignment=assignment, reason="Not my field.")
        for preference in plans[i]:
            assignment = claim_next_pair(project=project, reviewer=person)
            submit_judgment(
                assignment=assignment,
                choice=choice_for(assignment, preference),
                strength="clearly" if preference in ("a", "b") else "",
                rationale="Because.",
                timing=ItemTiming(active_ms=900 + i),
            )
    claim_next_pair(project=project, reviewer=people[0])  # left open
    split = PairwisePair.objects.filter(task=task, status=PairStatus.NEEDS_ADJUDICATION).first()
    assert split is not None
    record_pair_adjudication(lead=lead, pair=split, choice="left", strength="slightly",
                             rationale="The left one cites the memo.")  # fmt: skip
    pairs = list(PairwisePair.objects.filter(task=task).order_by("position"))
    items = [
        add_calibration_pair(project=project, actor=lead, pair=pair, reference=reference)
        for pair, reference in zip(pairs[-4:], ("a", "b", "tie", "a"), strict=True)
    ]
    good, bad = reviewers(2, prefix="pw-bundle-cal", qualified=False)
    for item in items:
        left = calibration_left_for(item, good.pk)
        right = choice_from_preference(item.reference, left=left)
        submit_calibration_answer(project=project, reviewer=good, item=item, choice=right)
        submit_calibration_answer(project=project, reviewer=bad, item=item, choice="tie")
    assert is_pair_qualified(project=project, reviewer=good)
    assert not is_pair_qualified(project=project, reviewer=bad)
    for model in TABLES:
        assert _rows(project)[model.__name__], model.__name__  # every table has rows
    return project, task, good


def _export(project, path):
    call_command("export_project", "--project", project.slug, "--out", str(path),
                 stdout=io.StringIO())  # fmt: skip


def test_a_copy_carries_every_pairwise_table(pairwise_project, tmp_path, lead, admin_user):
    source, task, qualified = pairwise_project
    before = _rows(source)
    path = tmp_path / "pairwise.tar.gz"
    _export(source, path)
    with tarfile.open(path, "r:gz") as bundle:
        manifest = json.load(bundle.extractfile("manifest.json"))
    for model in TABLES:
        assert manifest["counts"][model._meta.label] == len(before[model.__name__])

    call_command("import_project", str(path), "--slug", "pw-copy", stdout=io.StringIO())
    copy = Project.objects.get(slug="pw-copy")
    assert _rows(copy) == before
    assert _rows(source) == before  # the source is untouched

    # new ids, and every link inside the new project
    for model in TABLES:
        scope = SHAPES[model][0]
        old = set(model.objects.filter(**{scope: source}).values_list("pk", flat=True))
        new = set(model.objects.filter(**{scope: copy}).values_list("pk", flat=True))
        assert len(new) == len(old) and not old & new, model.__name__
    pairs = PairwisePair.objects.filter(project=copy)
    assert not pairs.exclude(task__project=copy).exists()
    assert not pairs.exclude(record_a__project=copy).exclude(record_b__project=copy).exists()
    assert not pairs.filter(~Q(record_a__question=F("question"))).exists()
    judgments = PairJudgment.objects.filter(pair__project=copy)
    assert not judgments.exclude(assignment__pair=F("pair")).exists()
    items = PairCalibrationItem.objects.filter(project=copy)
    assert not items.exclude(record_a__project=copy).exists()
    assert not items.exclude(source_pair__project=copy).exists()
    assert (
        not PairwiseTaskRun.objects.filter(task__project=copy).exclude(run__project=copy).exists()
    )

    # the copy works as the source: same analysis, same qualified reviewers, its own queue
    twin = PairwiseTask.objects.get(project=copy, name=task.name)
    for viewer in (lead, admin_user):
        assert analysis_data(get_pairwise_analysis(task=twin, user=viewer)) == analysis_data(
            get_pairwise_analysis(task=task, user=viewer)
        )
    assert is_pair_qualified(project=copy, reviewer=qualified)


def test_a_tampered_pairwise_member_is_refused_and_nothing_is_written(pairwise_project, tmp_path):
    source, _task, _ = pairwise_project
    path, tampered = tmp_path / "pairwise.tar.gz", tmp_path / "tampered.tar.gz"
    _export(source, path)
    member = "tables/goldset.PairJudgment.jsonl"
    with tarfile.open(path, "r:gz") as src, tarfile.open(tampered, "w:gz") as dst:
        for info in src.getmembers():
            data = src.extractfile(info).read()
            if info.name == member:
                data = data.replace(b"Because.", b"Because!", 1)
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    counts = {m.__name__: m.objects.count() for m in TABLES}
    with pytest.raises(CommandError) as refused:
        call_command("import_project", str(tampered), "--slug", "pw-tampered")
    assert refused.value.returncode == 2 and member in str(refused.value)
    assert not Project.objects.filter(slug="pw-tampered").exists()
    assert {m.__name__: m.objects.count() for m in TABLES} == counts
