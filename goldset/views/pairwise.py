"""Pairwise review pages (issue 30): tasks (leads and admins create them), the reviewers' queue
and blind judging page, a lead's blind adjudication of a split, and the analysis.

Pairs are addressed by their opaque ``public_id``; the judging and adjudication pages render
blind read models only (``goldset.selectors.pairwise.BlindPair``): the two answers as "A (left)"
and "B (right)", no record id, run or system."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, push_url

from goldset.conf import tunable
from goldset.exceptions import CrossProjectReference
from goldset.forms.answers import JsonlUploadForm
from goldset.forms.pairwise import CalibrationForm, JudgmentForm, PairwiseTaskForm
from goldset.forms.time_on_item import timing_from
from goldset.models import DecisionKind, ImportKind
from goldset.rules.pairwise import choice_from_preference, preference_from_choice
from goldset.rules.time_on_item import opening_token, read_opening
from goldset.selectors import pairwise as selectors
from goldset.services.locking import SubmitBusy
from goldset.services.pairwise import (
    PairSkipRefused,
    PairUndoRefused,
    PairwiseRejected,
    claim_next_pair,
    create_pairwise_task,
    record_pair_adjudication,
    skip_pair,
    submit_judgment,
    undo_last_judgment,
)
from goldset.services.pairwise_calibration import (
    add_calibration_pair,
    reset_pair_calibration,
    submit_calibration_answer,
)
from goldset.views.busy import as_busy
from goldset.views.htmx import wants_fragment
from goldset.views.imports import submit_upload, upload_data, upload_page
from workbench.roles import Role, role_required
from workbench.services.audit import record_event

LEADS = tuple(selectors.PAIR_LEADS)
# The opening token's kind for time on item (a judgment's time is a DecisionKind's, with stored
# figures; no fast-decision flag yet).
JUDGING, ADJUDICATING = DecisionKind.PAIR_JUDGMENT.value, "pair_adjudication"


@role_required(*LEADS)
def tasks(request):
    context = {
        "rows": selectors.list_tasks(project=request.project),
        "to_adjudicate": selectors.list_pairs_to_adjudicate(
            user=request.user, project=request.project
        ),
        "calibration_pairs": selectors.count_calibration_pairs(project=request.project),
        "qualifications": selectors.list_pair_qualifications(
            project=request.project, user=request.user
        ),
    }
    return render(request, "pairwise/tasks.html", context)


@role_required(*LEADS)
def create(request):
    runs = selectors.runs_for_form(project=request.project, user=request.user)
    form = PairwiseTaskForm(request.POST or None, project=request.project, runs=runs)
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                task = create_pairwise_task(
                    project=request.project,
                    actor=request.user,
                    name=data["name"],
                    runs=selectors.runs_of(project=request.project, pks=data["runs"]),
                    design=data["design"],
                    comparisons_per_question=data.get("comparisons_per_question"),
                    seed=data["seed"],
                    tier=data["tier"],
                    gold_version=data.get("gold_version"),
                )
            except (PairwiseRejected, CrossProjectReference) as exc:
                field = getattr(exc, "field", None)
                form.add_error(field if field in form.fields else None, str(exc))
            else:
                messages.success(request, f"Task {task.name!r} created with its pairs.")
                return redirect("pairwise:tasks")
        return render(request, "pairwise/create.html", {"form": form}, status=422)
    return render(request, "pairwise/create.html", {"form": form})


@role_required(Role.ANNOTATOR)
def queue(request):
    context = {
        "open": selectors.get_open_pair_assignment(project=request.project, reviewer=request.user),
        "done": selectors.count_my_judgments(project=request.project, reviewer=request.user),
        "waiting": selectors.count_open_pairs(project=request.project, reviewer=request.user),
        "qualified": selectors.is_pair_qualified(project=request.project, reviewer=request.user),
    }
    return render(request, "pairwise/queue.html", context)


@require_POST
@role_required(Role.ANNOTATOR)
def claim(request):
    assignment = claim_next_pair(project=request.project, reviewer=request.user)
    if assignment is None:
        messages.info(request, "No pair is waiting for you.")
        return redirect("pairwise:queue")
    return redirect("pairwise:judge", public_id=assignment.pair.public_id)


def _render_pair(request, assignment, form=None, *, status=200):
    pair = assignment.pair
    judgment = selectors.get_own_judgment(assignment)
    undoable = selectors.get_undoable_judgment(project=request.project, reviewer=request.user)
    context = {
        "pair": selectors.BlindPair.of(pair, left=assignment.left),
        "judgment": judgment
        and selectors.CHOICE_DISPLAY[
            choice_from_preference(judgment.preference, left=assignment.left)
        ],
        "judgment_row": judgment,
        "form": form or JudgmentForm(),
        "undoable": undoable is not None,
        "opening": _opening(request, JUDGING, assignment.pk),
        "idle_ms": _idle_ms(),
    }
    template = "pairwise/judge.html"
    if wants_fragment(request, "pair-item"):
        template += "#pair-item"
    return render(request, template, context, status=status)


def _opening(request, kind: str, object_id: int) -> str:
    """The signed opening of the decision form (a re-rendered form keeps the one it was posted
    with, so its clock does not restart), as ``goldset.views.guidelines.task_panel`` does."""
    user_id = request.user.pk
    posted = request.POST.get("opened") if request.method == "POST" else None
    if read_opening(posted, kind=kind, object_id=object_id, user_id=user_id) is not None:
        return posted
    return opening_token(kind=kind, object_id=object_id, user_id=user_id, now=timezone.now())


def _idle_ms() -> int:
    return tunable("ACTIVE_IDLE_GAP_SECONDS") * 1000


@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def judge(request, public_id):
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=public_id
    )
    form = JudgmentForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        timing = timing_from(
            request.POST, kind=JUDGING, object_id=assignment.pk, user_id=request.user.pk
        )
        try:
            submit_judgment(assignment=assignment, **form.service_kwargs(), timing=timing)
        except PairwiseRejected as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        except SubmitBusy as exc:
            form.add_error(None, str(exc))
            return as_busy(_render_pair(request, assignment, form), exc)
        else:
            messages.success(request, "Judgment saved.")
            return _next_pair(request)
    if request.method == "GET":
        record_event(actor=request.user, verb="viewed", obj=assignment.pair)
    status = 422 if request.method == "POST" else 200
    return _render_pair(
        request, assignment, form if request.method == "POST" else None, status=status
    )


def _next_pair(request):
    """One motion per pair: the answer to a submit, skip or undo is the next pair itself."""
    assignment = claim_next_pair(project=request.project, reviewer=request.user)
    if assignment is None:
        messages.info(request, "No more pairs are waiting for you.")
        target = redirect("pairwise:queue")
        return HttpResponseClientRedirect(target.url) if request.htmx else target
    url = redirect("pairwise:judge", public_id=assignment.pair.public_id).url
    if request.htmx:
        assignment = selectors.get_pair_assignment_for(
            project=request.project, reviewer=request.user, public_id=assignment.pair.public_id
        )
        return push_url(_render_pair(request, assignment), url)
    return redirect(url)


@require_POST
@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def skip(request, public_id):
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=public_id
    )
    try:
        skip_pair(assignment=assignment, reason=request.POST.get("reason", ""))
    except PairSkipRefused as exc:
        messages.error(request, str(exc))
        return _render_pair(request, assignment, status=422)
    messages.info(request, "Pair skipped; it went back to the pool.")
    return _next_pair(request)


@require_POST
@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def undo(request):
    try:
        assignment = undo_last_judgment(project=request.project, reviewer=request.user)
    except PairUndoRefused as exc:
        messages.error(request, str(exc))
        target = redirect("pairwise:queue")
        return HttpResponseClientRedirect(target.url) if request.htmx else target
    messages.info(request, "Your last judgment was withdrawn: judge the pair again.")
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=assignment.pair.public_id
    )
    url = redirect("pairwise:judge", public_id=assignment.pair.public_id).url
    response = _render_pair(request, assignment)
    return push_url(response, url) if request.htmx else response


@role_required(*LEADS)
@vary_on_headers("HX-Request")
def adjudicate(request, public_id):
    pair = selectors.access_pair_for_adjudication(
        user=request.user, project=request.project, public_id=public_id
    )
    form = JudgmentForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        timing = timing_from(
            request.POST, kind=ADJUDICATING, object_id=pair.pk, user_id=request.user.pk
        )
        try:
            record_pair_adjudication(
                lead=request.user, pair=pair, **form.service_kwargs(), timing=timing
            )
        except PairwiseRejected as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        except SubmitBusy as exc:
            form.add_error(None, str(exc))
            return as_busy(_render_adjudication(request, pair, form), exc)
        else:
            messages.success(request, "Pair adjudicated.")
            return redirect("pairwise:tasks")
    if request.method == "GET":
        record_event(actor=request.user, verb="viewed", obj=pair)
    status = 422 if request.method == "POST" else 200
    return _render_adjudication(request, pair, form, status=status)


def _render_adjudication(request, pair, form, *, status=200):
    left = selectors.left_for(pair, request.user.pk)
    adjudication = selectors.get_pair_adjudication(pair)
    context = {
        "pair": selectors.BlindPair.of(pair, left=left),
        "judgments": selectors.list_blind_judgments(pair, user=request.user, left=left),
        "adjudication": adjudication
        and selectors.CHOICE_DISPLAY[choice_from_preference(adjudication.preference, left=left)],
        "adjudication_row": adjudication,
        "form": form,
        "opening": _opening(request, ADJUDICATING, pair.pk),
        "idle_ms": _idle_ms(),
    }
    template = "pairwise/adjudicate.html"
    if wants_fragment(request, "pair-adjudication"):
        template += "#pair-adjudication"
    return render(request, template, context, status=status)


@role_required(Role.ADMIN)
def import_judgments(request, pk):
    """Upload judgments made elsewhere into a task (admins, as through the API: the file names
    reviewers). Like every upload page: the file is stored and queued as an import job, which
    validates all of it (every problem with its line and field) and stores all or nothing; the
    answer is the job's page (422 with the problems when it is rejected)."""
    task = selectors.get_task_for(project=request.project, pk=pk)
    form = JsonlUploadForm(*upload_data(request))
    context = {"task": task, "form": form, "errors": []}
    if request.method == "POST" and form.is_valid():
        return submit_upload(
            request,
            kind=ImportKind.PAIRWISE,
            options={"task": task.pk},
            template="pairwise/import.html",
            context=context,
        )
    return upload_page(request, "pairwise/import.html", context)


@role_required(*LEADS)
def analysis(request, pk):
    task = selectors.get_task_for(project=request.project, pk=pk)
    context = {
        "task": task,
        "analysis": selectors.get_pairwise_analysis(task=task, user=request.user),
    }
    return render(request, "pairwise/analysis.html", context)


# ---------------------------------------------------------------- qualification


@role_required(Role.ANNOTATOR)
def calibration(request):
    """The reviewer's calibration pairs: their status and the next pair, blind, on their own
    seeded sides; POST judges it (one motion: the answer is the next pair or the result)."""
    status = selectors.get_pair_calibration_status(project=request.project, reviewer=request.user)
    form = CalibrationForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        item = selectors.access_calibration_item_for(
            project=request.project, reviewer=request.user, public_id=form.cleaned_data["item"]
        )
        try:
            submit_calibration_answer(
                project=request.project,
                reviewer=request.user,
                item=item,
                choice=form.cleaned_data["choice"],
            )
        except PairwiseRejected as exc:
            form.add_error("choice" if exc.field == "choice" else None, str(exc))
        else:
            return redirect("pairwise:calibration")
    item = status.next_item
    context = {
        "status": status,
        "pair": item
        and selectors.blind_calibration_pair(
            item, left=selectors.calibration_left_for(item, request.user.pk)
        ),
        "form": form if request.method == "POST" else CalibrationForm(),
    }
    code = 422 if request.method == "POST" else 200
    return render(request, "pairwise/calibration.html", context, status=code)


@require_POST
@role_required(*LEADS)
def add_calibration(request, public_id):
    pair = selectors.access_pair_for_adjudication(
        user=request.user, project=request.project, public_id=public_id
    )
    try:
        add_calibration_pair(project=request.project, actor=request.user, pair=pair)
    except PairwiseRejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "The pair is a calibration pair now.")
    return redirect("pairwise:tasks")


@require_POST
@role_required(*LEADS)
def reset_calibration(request, reviewer_pk):
    reviewer = selectors.get_qualification_reviewer(project=request.project, pk=reviewer_pk)
    try:
        reset_pair_calibration(project=request.project, actor=request.user, reviewer=reviewer)
    except PairwiseRejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Retake granted: the reviewer's calibration answers are cleared.")
    return redirect("pairwise:tasks")


@role_required(*LEADS)
def calibration_set(request):
    """Leads build the calibration pairs: the next pair of the project, blind on their own
    sides; their choice becomes its reference (POST ``pair``, ``choice``)."""
    form = CalibrationForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        pair = selectors.access_pair_for_calibration(
            user=request.user, project=request.project, public_id=form.cleaned_data["item"]
        )
        reference = preference_from_choice(
            form.cleaned_data["choice"], left=selectors.left_for(pair, request.user.pk)
        )
        try:
            add_calibration_pair(
                project=request.project, actor=request.user, pair=pair, reference=reference
            )
        except PairwiseRejected as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Calibration pair added.")
            return redirect("pairwise:calibration_set")
    candidate = selectors.next_calibration_candidate(user=request.user, project=request.project)
    context = {
        "items": selectors.list_calibration_pairs(project=request.project),
        "pair": candidate
        and selectors.BlindPair.of(candidate, left=selectors.left_for(candidate, request.user.pk)),
        "form": form if request.method == "POST" else CalibrationForm(),
    }
    code = 422 if request.method == "POST" else 200
    return render(request, "pairwise/calibration_set.html", context, status=code)
