"""Reads for pairwise review (issue 30). Reviewers and leads get blind read models: a pair is its
opaque ``public_id``, the question and two answer texts placed on the sides the seed drew for
that person; no record id, run, system or model is reachable from them. The analysis names
systems for admins only (leads see "System 1", "System 2", … in the task's run order), as the
evaluator report does with evaluators."""

from dataclasses import dataclass, field, fields

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils import timezone

from goldset.conf import tunable
from goldset.models import (
    Adjudication,
    AnswerRecord,
    Label,
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
    Run,
)
from goldset.rules.blinding import sees_labelers, sees_systems
from goldset.rules.labeling import undo_closed
from goldset.rules.pairwise import (
    PAIR_CALIBRATION_SEED,
    AbsoluteLabel,
    choice_from_preference,
    pair_calibration_problems,
    pair_key,
    side_for,
)
from goldset.rules.probe_labels import final_severe_safety
from scoring.pairwise import Judgment, PairwiseReport, analyse
from workbench.roles import Role, roles_in

# The roles that adjudicate pairs and read the analysis (as for labels).
PAIR_LEADS = frozenset({Role.LEAD.value, Role.ADMIN.value})
OPEN_FOR_LEAD = (PairStatus.NEEDS_ADJUDICATION,)
LEAD_VISIBLE = (PairStatus.NEEDS_ADJUDICATION, PairStatus.ADJUDICATED)
CHOICE_DISPLAY = {
    "left": "A (left) better",
    "right": "B (right) better",
    "tie": "Tie",
    "both_unacceptable": "Both unacceptable",
}


def _pair_qs():
    return PairwisePair.objects.select_related("task", "question__domain", "record_a", "record_b")


def key_of(pair: PairwisePair) -> str:
    return pair_key(
        question_id=pair.question.question_id,
        a_public_id=pair.record_a.public_id,
        b_public_id=pair.record_b.public_id,
    )


def left_for(pair: PairwisePair, person_id: int) -> str:
    """The record this person sees on the left (seeded per pair and person)."""
    return side_for(seed=pair.task.seed, key=key_of(pair), person_id=person_id)


@dataclass(frozen=True)
class BlindPair:
    """A pair as a reviewer or lead sees it: the question and the two answers on their sides."""

    public_id: str
    question_text: str
    domain_name: str
    task_family: str
    left_answer: str
    right_answer: str
    status: str
    status_display: str
    pk: int

    @classmethod
    def of(cls, pair: PairwisePair, *, left: str) -> "BlindPair":
        first, second = (
            (pair.record_a, pair.record_b) if left == "a" else (pair.record_b, pair.record_a)
        )
        return cls(
            public_id=pair.public_id,
            question_text=pair.question.text,
            domain_name=pair.question.domain.name,
            task_family=pair.question.task_family,
            left_answer=first.answer,
            right_answer=second.answer,
            status=pair.status,
            status_display=pair.get_status_display(),
            pk=pair.pk,
        )


# The field policy of a blind pair: what a reviewer or lead reads of a pair, on a page or
# through the API (the internal ``pk`` is never sent).
BLIND_PAIR_FIELDS = tuple(f.name for f in fields(BlindPair) if f.name != "pk")


@dataclass(frozen=True)
class BlindJudgment:
    """A judgment as one person's screen reads it (sides as *they* see the pair)."""

    reviewer: str  # "Reviewer 1" … (a name only for the roles that see labelers)
    choice: str
    choice_display: str
    strength: str  # "slightly", "clearly" or "" (with a tie or "both unacceptable")
    strength_display: str
    rationale: str


# ---------------------------------------------------------------- a reviewer's pairs


def get_pair_assignment_for(*, project, reviewer, public_id: str) -> PairAssignment:
    """The reviewer's own assignment of ``project``'s pair; Http404 otherwise."""
    assignment = (
        PairAssignment.objects.select_related(
            "pair__task", "pair__question__domain", "pair__record_a", "pair__record_b"
        )
        .filter(reviewer=reviewer, pair__public_id=public_id, pair__project=project)
        .first()
    )
    if assignment is None:
        raise Http404("No such pair in your queue.")
    return assignment


def get_open_pair_assignment(*, project, reviewer) -> PairAssignment | None:
    return (
        PairAssignment.objects.filter(
            reviewer=reviewer, completed_at__isnull=True, pair__project=project
        )
        .select_related("pair")
        .first()
    )


def get_own_judgment(assignment: PairAssignment) -> PairJudgment | None:
    if assignment.completed_at is None:
        return None
    return PairJudgment.objects.filter(assignment=assignment).first()


def get_undoable_judgment(*, project, reviewer) -> PairJudgment | None:
    """The reviewer's last judgment in ``project`` if it can still be undone: its pair still
    collects judgments and it was made within the project's ``LABEL_UNDO_WINDOW_SECONDS``
    (``undo_closed``, the labels' rule). The undo service re-checks both under lock."""
    last = (
        PairJudgment.objects.filter(reviewer=reviewer, pair__project=project)
        .select_related("pair")
        .order_by("-created_at", "-id")
        .first()
    )
    if last is None or last.pair.status != PairStatus.JUDGING:
        return None
    window = tunable("LABEL_UNDO_WINDOW_SECONDS", project=project)
    if undo_closed(submitted_at=last.created_at, now=timezone.now(), window_seconds=window):
        return None
    return last


def count_my_judgments(*, project, reviewer) -> int:
    return PairJudgment.objects.filter(reviewer=reviewer, pair__project=project).count()


def count_open_pairs(*, project, reviewer) -> int:
    """Pairs of ``project`` with an open slot the reviewer has not held nor skipped."""
    mine = PairAssignment.objects.filter(pair_id=OuterRef("pk"), reviewer=reviewer)
    skipped = PairSkip.objects.filter(pair_id=OuterRef("pk"), reviewer=reviewer)
    return open_pairs(project=project).exclude(Exists(mine)).exclude(Exists(skipped)).count()


def open_pairs(*, project):
    """The project's pairs with an open slot (the ``pairwise_pair_open`` index's condition)."""
    return PairwisePair.objects.filter(
        project=project, status=PairStatus.JUDGING, assigned_count__lt=F("reviewers_required")
    )


# ---------------------------------------------------------------- absolute labels


def absolute_labels(record_ids) -> dict[int, AbsoluteLabel]:
    """Per answer record: its final acceptability and grounding (when settled) and its
    severe-safety flag as PROBE reads it (``goldset.rules.probe_labels``: the adjudication's,
    else the labels' majority, a tie counting as severe)."""
    ids = list(record_ids)
    finals = {
        pk: (acc, grounding)
        for pk, acc, grounding in AnswerRecord.objects.filter(pk__in=ids).values_list(
            "pk", "final_acceptability", "final_grounding"
        )
    }
    flags: dict[int, list[bool]] = {}
    for record_id, severe in Label.objects.filter(
        record_id__in=ids, assignment__is_calibration=False
    ).values_list("record_id", "severe_safety"):
        flags.setdefault(record_id, []).append(severe)
    adjudicated = dict(
        Adjudication.objects.filter(record_id__in=ids).values_list("record_id", "severe_safety")
    )
    return {
        pk: AbsoluteLabel(
            acceptability=finals.get(pk, ("", ""))[0],
            grounding=finals.get(pk, ("", ""))[1],
            severe_safety=final_severe_safety(flags.get(pk, []), adjudicated=adjudicated.get(pk)),
        )
        for pk in ids
    }


# ---------------------------------------------------------------- leads


def adjudicable_pairs(*, user, project, statuses=LEAD_VISIBLE):
    """The one home of "who may adjudicate which pair": pairs of ``project`` in ``statuses``, for
    a lead or admin of the project who did not judge the pair; none for anyone else."""
    if not roles_in(user, project) & PAIR_LEADS:
        return PairwisePair.objects.none()
    own = PairJudgment.objects.filter(pair_id=OuterRef("pk"), reviewer_id=user.pk)
    return PairwisePair.objects.filter(
        project_id=getattr(project, "pk", project), status__in=statuses
    ).exclude(Exists(own))


def access_pair_for_adjudication(*, user, project, public_id: str) -> PairwisePair:
    """Fetch and authorize in one call (Http404 whatever the reason)."""
    pair = (
        adjudicable_pairs(user=user, project=project)
        .select_related("task", "question__domain", "record_a", "record_b")
        .filter(public_id=public_id)
        .first()
    )
    if pair is None:
        raise Http404("No such pair to adjudicate.")
    return pair


def _slotted_judgments():
    return PairJudgment.objects.select_related("assignment", "reviewer").order_by(
        "assignment__slot", "id"
    )


def list_blind_judgments(pair: PairwisePair, *, user, left: str) -> list[BlindJudgment]:
    """The pair's judgments in slot order, read with ``left`` on the left (the viewer's sides);
    reviewers as "Reviewer 1/2/3" unless the viewer's roles see labelers. Reads the pair's
    ``slotted_judgments`` when a list prefetched them (:func:`list_pairs_to_adjudicate_for`)."""
    show = sees_labelers(roles_in(user, pair.project_id))
    rows = getattr(pair, "slotted_judgments", None)
    if rows is None:
        rows = _slotted_judgments().filter(pair=pair)
    out = []
    for i, judgment in enumerate(rows, start=1):
        choice = choice_from_preference(judgment.preference, left=left)
        out.append(
            BlindJudgment(
                reviewer=judgment.reviewer.username if show else f"Reviewer {i}",
                choice=choice,
                choice_display=CHOICE_DISPLAY[choice],
                strength=judgment.strength,
                strength_display=judgment.get_strength_display() if judgment.strength else "",
                rationale=judgment.rationale,
            )
        )
    return out


def list_pairs_to_adjudicate_for(*, user, project):
    """The split pairs of ``project`` waiting for this lead or admin (``adjudicable_pairs``),
    with what their blind read models need and their judgments in slot order
    (``slotted_judgments``): a queryset for the API's paginated list, a constant number of
    queries a page. ``split_at``: its last judgment's time, the one that split it (a split pair
    takes no more judgments and no undo), for ``updated_since``."""
    last = PairJudgment.objects.filter(pair_id=OuterRef("pk")).order_by("-created_at")
    return (
        adjudicable_pairs(user=user, project=project, statuses=OPEN_FOR_LEAD)
        .annotate(split_at=Subquery(last.values("created_at")[:1]))
        .select_related("task", "question__domain", "record_a", "record_b")
        .prefetch_related(
            Prefetch("judgments", queryset=_slotted_judgments(), to_attr="slotted_judgments")
        )
    )


def get_pair_adjudication(pair: PairwisePair) -> PairAdjudication | None:
    return PairAdjudication.objects.filter(pair=pair).first()


@dataclass(frozen=True)
class TaskRow:
    task: PairwiseTask
    pairs: int
    judgments: int
    final: int
    to_adjudicate: int


def list_tasks(*, project) -> list[TaskRow]:
    tasks = (
        PairwiseTask.objects.filter(project=project)
        .select_related("gold_version")
        .annotate(
            n_pairs=Count("pairs", distinct=True),
            n_final=Count(
                "pairs",
                filter=Q(pairs__status__in=[PairStatus.FINAL, PairStatus.ADJUDICATED]),
                distinct=True,
            ),
            n_split=Count(
                "pairs", filter=Q(pairs__status=PairStatus.NEEDS_ADJUDICATION), distinct=True
            ),
        )
    )
    judged = dict(
        PairJudgment.objects.filter(pair__project=project)
        .values("pair__task_id")
        .annotate(n=Count("id"))
        .values_list("pair__task_id", "n")
    )
    return [
        TaskRow(t, t.n_pairs, judged.get(t.pk, 0), t.n_final, t.n_split)
        for t in tasks.order_by("-created_at", "-id")
    ]


def list_pairs_to_adjudicate(*, user, project, limit: int = 100) -> list[PairwisePair]:
    return list(
        adjudicable_pairs(user=user, project=project, statuses=OPEN_FOR_LEAD)
        .select_related("task")
        .order_by("id")[:limit]
    )


def get_task_for(*, project, pk: int) -> PairwiseTask:
    task = (
        PairwiseTask.objects.filter(project=project, pk=pk).select_related("gold_version").first()
    )
    if task is None:
        raise Http404("No such pairwise task.")
    return task


def runs_for_form(*, project, user) -> list[tuple[int, str]]:
    """The project's runs as the task form offers them: run ids for admins, "Run 1", "Run 2",
    … (newest first, with their answer counts) for everyone else."""
    admin = sees_systems(roles_in(user, project))
    rows = (
        Run.objects.filter(project=project)
        .annotate(n=Count("records"))
        .order_by("-imported_at", "run_id")
        .values_list("pk", "run_id", "n")
    )
    return [
        (pk, f"{run_id if admin else f'Run {i}'} ({n} answers)")
        for i, (pk, run_id, n) in enumerate(rows, start=1)
    ]


# ---------------------------------------------------------------- analysis


def _system_keys(task: PairwiseTask) -> dict[int, tuple[str, str]]:
    """System pk → (key, system id) for the task's systems. Keys (``system:001`` …) follow the
    system ids' order, so the analysis orders the systems as it would by their names and its
    figures are those of ``analyse`` on judgments naming the systems."""
    rows = sorted(set(task.runs.values_list("system_id", "system__system_id")), key=lambda r: r[1])
    return {pk: (f"system:{i:03d}", system_id) for i, (pk, system_id) in enumerate(rows, 1)}


def system_names(*, task: PairwiseTask, user) -> dict[str, str]:
    """System key → what this user may read: the system id for admins, "System N" for everyone
    else."""
    admin = sees_systems(roles_in(user, task.project_id))
    return {
        key: system_id if admin else f"System {i}"
        for i, (key, system_id) in enumerate(_system_keys(task).values(), 1)
    }


def task_judgments(task: PairwiseTask) -> list[Judgment]:
    """The task's judgments as :class:`scoring.pairwise.Judgment` records: systems by their key
    (:func:`_system_keys`), reviewers as ``reviewer:<pk>``, each question's stratum its
    domain."""
    keys = {pk: key for pk, (key, _) in _system_keys(task).items()}
    rows = PairJudgment.objects.filter(pair__task=task).values_list(
        "pair__question__question_id",
        "pair__question__domain__slug",
        "pair__record_a__run__system_id",
        "pair__record_b__run__system_id",
        "left",
        "preference",
        "strength",
        "reviewer_id",
    )
    out = []
    for question_id, domain, sys_a, sys_b, left, preference, strength, reviewer in rows.order_by(
        "pair__position", "assignment__slot"
    ):
        a, b = keys[sys_a], keys[sys_b]
        out.append(
            Judgment(
                question_id=question_id,
                system_a=a,
                system_b=b,
                left=a if left == "a" else b,
                preference=preference,
                reviewer=f"reviewer:{reviewer}",
                strength=strength or None,
                stratum=domain,
            )
        )
    return out


@dataclass(frozen=True)
class PairwiseAnalysis:
    """The analysis as the page shows it: ``report`` is ``scoring.pairwise.analyse``'s report
    on the task's judgments (systems and reviewers by key); the rows carry the names the viewer
    may read."""

    report: PairwiseReport | None
    names: dict[str, str]
    reason: str = ""
    strengths: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    kappas: list = field(default_factory=list)
    position_bias: list = field(default_factory=list)


def get_pairwise_analysis(*, task: PairwiseTask, user) -> PairwiseAnalysis:
    """``scoring.pairwise.analyse`` on the task's judgments (its defaults: bootstrap over
    questions within domains, 95 % percentile intervals, seed 8821) with systems and reviewers
    named for ``user`` (admins: system ids and usernames; others: "System N", "Reviewer N")."""
    judgments = task_judgments(task)
    names = system_names(task=task, user=user)
    show = sees_labelers(roles_in(user, task.project_id))
    reviewers = sorted({j.reviewer for j in judgments}, key=lambda r: int(r.split(":")[1]))
    usernames = {}
    if show:
        usernames = dict(
            get_user_model()
            .objects.filter(pk__in=[int(r.split(":")[1]) for r in reviewers])
            .values_list("pk", "username")
        )
    for i, key in enumerate(reviewers, start=1):
        names[key] = usernames.get(int(key.split(":")[1]), f"Reviewer {i}")
    systems = {s for j in judgments for s in (j.system_a, j.system_b)}
    if len(systems) < 2:
        return PairwiseAnalysis(None, names, "No judgments yet.")
    report = analyse(judgments)
    return PairwiseAnalysis(
        report,
        names,
        strengths=[
            {
                "rank": s.rank,
                "system": names[s.system],
                "strength": s.strength,
                "ci": s.ci,
                "n": s.n_judgments,
            }
            for s in report.strengths
        ],
        pairs=[{"a": names[p.system_a], "b": names[p.system_b], "row": p} for p in report.pairs],
        kappas=[
            {"a": names[k.reviewer_a], "b": names[k.reviewer_b], "row": k}
            for k in report.agreement.kappa
        ],
        position_bias=[
            {"who": "All reviewers" if b.reviewer is None else names[b.reviewer], "row": b}
            for b in report.position_bias
        ],
    )


def runs_of(*, project, pks) -> list[Run]:
    """The runs of ``project`` among ``pks`` (the task form's choice)."""
    return list(Run.objects.filter(project=project, pk__in=list(pks)))


# ---------------------------------------------------------------- qualification


def is_pair_qualified(*, project, reviewer) -> bool:
    """The reviewer passed ``project``'s calibration pairs (qualification is per project)."""
    return PairQualification.objects.filter(
        project=project, reviewer=reviewer, passed=True
    ).exists()


def calibration_left_for(item: PairCalibrationItem, person_id: int) -> str:
    """The record this person sees on the left of a calibration pair (seeded per pair and
    person, as for real pairs)."""
    key = pair_key(
        question_id=item.question.question_id,
        a_public_id=item.record_a.public_id,
        b_public_id=item.record_b.public_id,
    )
    return side_for(seed=PAIR_CALIBRATION_SEED, key=key, person_id=person_id)


def _calibration_qs(project):
    return PairCalibrationItem.objects.filter(project=project).select_related(
        "question__domain", "record_a", "record_b"
    )


@dataclass(frozen=True)
class CalibrationStatus:
    """Where a reviewer stands on ``project``'s calibration pairs."""

    total: int
    answered: int
    problems: list
    result: PairQualification | None
    next_item: PairCalibrationItem | None

    @property
    def passed(self) -> bool:
        return self.result is not None and self.result.passed


def get_pair_calibration_status(*, project, reviewer) -> CalibrationStatus:
    references = list(
        PairCalibrationItem.objects.filter(project=project).values_list("reference", flat=True)
    )
    answered = PairCalibrationAnswer.objects.filter(
        item__project=project, reviewer=reviewer
    ).count()
    result = PairQualification.objects.filter(project=project, reviewer=reviewer).first()
    problems = pair_calibration_problems(references)
    next_item = None
    if result is None and not problems:
        mine = PairCalibrationAnswer.objects.filter(item_id=OuterRef("pk"), reviewer=reviewer)
        next_item = _calibration_qs(project).exclude(Exists(mine)).order_by("id").first()
    return CalibrationStatus(len(references), answered, problems, result, next_item)


def access_calibration_item_for(*, project, reviewer, public_id: str) -> PairCalibrationItem:
    """A calibration pair of ``project`` for a reviewer of it who has not been scored yet;
    Http404 otherwise (fetch and authorize in one call)."""
    if Role.ANNOTATOR.value not in roles_in(reviewer, project):
        raise Http404("No such calibration pair.")
    if PairQualification.objects.filter(project=project, reviewer=reviewer).exists():
        raise Http404("Your calibration is already scored.")
    item = _calibration_qs(project).filter(public_id=public_id).first()
    if item is None:
        raise Http404("No such calibration pair.")
    return item


def blind_calibration_pair(item: PairCalibrationItem, *, left: str) -> BlindPair:
    first, second = (
        (item.record_a, item.record_b) if left == "a" else (item.record_b, item.record_a)
    )
    return BlindPair(
        public_id=item.public_id,
        question_text=item.question.text,
        domain_name=item.question.domain.name,
        task_family=item.question.task_family,
        left_answer=first.answer,
        right_answer=second.answer,
        status="calibration",
        status_display="Calibration pair",
        pk=item.pk,
    )


def list_qualification_results(*, project):
    """The project's pairwise qualification results (a queryset, for the API's list)."""
    return PairQualification.objects.filter(project=project)


def qualification_reviewer_names(*, project, user) -> dict[int, str]:
    """Reviewer pk → how ``user`` reads them on the qualification results: usernames for the
    roles that see labelers, else "Reviewer N" in reviewer order (the page's and the API's
    names alike). One query."""
    show = sees_labelers(roles_in(user, project))
    rows = list_qualification_results(project=project).order_by("reviewer_id")
    if show:
        return dict(rows.values_list("reviewer_id", "reviewer__username"))
    ids = rows.values_list("reviewer_id", flat=True)
    return {pk: f"Reviewer {i}" for i, pk in enumerate(ids, start=1)}


def list_pair_qualifications(*, project, user) -> list[dict]:
    """Leads' view of the project's pairwise qualification results (reviewer names as the
    viewer's roles allow)."""
    names = qualification_reviewer_names(project=project, user=user)
    rows = list_qualification_results(project=project).order_by("reviewer_id")
    return [
        {"reviewer": names[q.reviewer_id], "reviewer_pk": q.reviewer_id, "row": q} for q in rows
    ]


def count_calibration_pairs(*, project) -> int:
    return PairCalibrationItem.objects.filter(project=project).count()


def get_qualification_reviewer(*, project, pk: int):
    """The reviewer of a qualification result of ``project``; Http404 otherwise."""
    result = PairQualification.objects.filter(project=project, reviewer_id=pk).first()
    if result is None:
        raise Http404("No such qualification result.")
    return result.reviewer


# ---------------------------------------------------------------- plain data (API, exports, report)


def _ci(interval) -> dict:
    return {"low": interval.low, "high": interval.high}


def analysis_data(analysis: PairwiseAnalysis) -> dict | None:
    """The analysis as plain data, systems and reviewers named as ``analysis.names`` says (what
    the viewer may read): the API's answer, the pairwise gold's figures and the release
    report's section read this one shape. None without judgments."""
    report, names = analysis.report, analysis.names
    if report is None:
        return None
    return {
        "n_judgments": report.n_judgments,
        "n_questions": report.n_questions,
        "mle_exists": report.mle_exists,
        "settings": dict(report.settings),
        "ranking": [
            {
                "rank": s.rank,
                "system": names[s.system],
                "strength": s.strength,
                "ci": _ci(s.ci),
                "n_judgments": s.n_judgments,
            }
            for s in report.strengths
        ],
        "pairs": [
            {
                "system_a": names[p.system_a],
                "system_b": names[p.system_b],
                "n_judgments": p.n_judgments,
                "wins_a": p.wins_a,
                "wins_b": p.wins_b,
                "ties": p.ties,
                "both_unacceptable": p.both_unacceptable,
                "win_rate_a": p.win_rate_a,
                "win_rate_a_ci": _ci(p.win_rate_a_ci),
                "p_b_beats_a": p.p_b_beats_a,
                "p_b_beats_a_ci": _ci(p.p_b_beats_a_ci),
            }
            for p in report.pairs
        ],
        "agreement": {
            "alpha": report.agreement.alpha,
            "alpha_reason": report.agreement.alpha_reason or "",
            "n_items": report.agreement.n_items,
            "n_reviewers": report.agreement.n_reviewers,
            "kappa": [
                {
                    "reviewer_a": names[k.reviewer_a],
                    "reviewer_b": names[k.reviewer_b],
                    "kappa": k.kappa,
                    "n_items": k.n_items,
                }
                for k in report.agreement.kappa
            ],
        },
        "position_bias": [
            {
                "reviewer": None if b.reviewer is None else names[b.reviewer],
                "n_decisive": b.n_decisive,
                "n_left": b.n_left,
                "share_left": b.share_left,
                "pvalue": b.pvalue,
            }
            for b in report.position_bias
        ],
    }


def list_task_summaries(*, project):
    """The project's tasks with their pair, decided, split and judgment counts (one query, for
    a paginated list)."""
    judged = (
        PairJudgment.objects.filter(pair__task=OuterRef("pk"))
        .values("pair__task")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        PairwiseTask.objects.filter(project=project)
        .select_related("gold_version")
        .annotate(
            n_pairs=Count("pairs", distinct=True),
            n_final=Count(
                "pairs",
                filter=Q(pairs__status__in=[PairStatus.FINAL, PairStatus.ADJUDICATED]),
                distinct=True,
            ),
            n_split=Count(
                "pairs", filter=Q(pairs__status=PairStatus.NEEDS_ADJUDICATION), distinct=True
            ),
            n_judgments=Coalesce(Subquery(judged, output_field=IntegerField()), 0),
        )
    )


def judgment_names(*, task: PairwiseTask, user) -> dict:
    """How judgments of ``task`` name people and systems for ``user``: ``reviewers`` (pk →
    username for roles that see labelers, else "Reviewer N" by the task's reviewers' order, as
    the analysis names them) and ``systems`` (system pk → system id, for admins only: an empty
    map hides systems)."""
    show = sees_labelers(roles_in(user, task.project_id))
    ids = sorted(
        set(PairJudgment.objects.filter(pair__task=task).values_list("reviewer_id", flat=True))
    )
    usernames = {}
    if show:
        usernames = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    reviewers = {pk: usernames.get(pk, f"Reviewer {i}") for i, pk in enumerate(ids, start=1)}
    systems = {}
    if sees_systems(roles_in(user, task.project_id)):
        systems = {pk: system_id for pk, (_, system_id) in _system_keys(task).items()}
    return {"reviewers": reviewers, "systems": systems}


def list_task_judgments(*, task: PairwiseTask):
    return PairJudgment.objects.filter(pair__task=task).select_related(
        "pair__question", "pair__record_a__run", "pair__record_b__run"
    )


def release_analysis_data(task: PairwiseTask) -> dict | None:
    """The task's analysis for a release report (an admin's document: systems by their system
    ids, as Table 5 names them; reviewers as "Reviewer N"). None without judgments."""
    judgments = task_judgments(task)
    names = {key: system_id for key, system_id in _system_keys(task).values()}
    reviewers = sorted({j.reviewer for j in judgments}, key=lambda r: int(r.split(":")[1]))
    names.update({key: f"Reviewer {i}" for i, key in enumerate(reviewers, start=1)})
    if len({s for j in judgments for s in (j.system_a, j.system_b)}) < 2:
        return None
    return analysis_data(PairwiseAnalysis(analyse(judgments), names))


def next_calibration_candidate(*, user, project) -> PairwisePair | None:
    """For a lead or admin: the project's next pair (seeded queue order) that is not yet a
    calibration pair, to set a reference on; None for anyone else or when none is left."""
    if not roles_in(user, project) & PAIR_LEADS:
        return None
    taken = PairCalibrationItem.objects.filter(
        project=project, record_a_id=OuterRef("record_a_id"), record_b_id=OuterRef("record_b_id")
    )
    return (
        _pair_qs()
        .filter(project=project)
        .exclude(Exists(taken))
        .order_by("queue_rank", "id")
        .first()
    )


def access_pair_for_calibration(*, user, project, public_id: str) -> PairwisePair:
    """A pair of ``project`` for a lead or admin of it to make a calibration pair (Http404
    otherwise)."""
    if not roles_in(user, project) & PAIR_LEADS:
        raise Http404("No such pair.")
    pair = _pair_qs().filter(project=project, public_id=public_id).first()
    if pair is None:
        raise Http404("No such pair.")
    return pair


def list_calibration_pairs(*, project) -> list[PairCalibrationItem]:
    return list(_calibration_qs(project).order_by("id"))


def list_calibration_pair_rows(*, project):
    """The project's calibration pairs with their question, answers and the number of reviewers
    who judged each (``n_answers``): a queryset for the API's paginated list."""
    return _calibration_qs(project).annotate(n_answers=Count("answers"))


def get_calibration_answer(*, item: PairCalibrationItem, reviewer) -> PairCalibrationAnswer | None:
    return PairCalibrationAnswer.objects.filter(item=item, reviewer=reviewer).first()
