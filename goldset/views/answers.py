"""Annotator pages for blinded answer labeling: the queue, the label form, calibration.

Items are addressed by their opaque ``public_id``; nothing here loads or renders the system, run
or model of a record."""

import json

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, push_url

from goldset.forms.answers import LabelForm
from goldset.forms.time_on_item import timing_from
from goldset.models import DecisionKind, Domain
from goldset.selectors import answers as selectors
from goldset.selectors.guidelines import ANSWER_LABELING
from goldset.selectors.positions import (
    WAITING_CAP,
    QueuePosition,
    count_labels_today,
    get_calibration_position,
)
from goldset.services.calibration import CalibrationError, start_calibration
from goldset.services.labeling import (
    ALL_CLEAR,
    LabelingClosed,
    LabelRuleViolation,
    SkipRefused,
    UndoRefused,
    all_clear_rationale_required,
    claim_next_item,
    count_waiting_items,
    skip_item,
    submit_label,
    undo_last_label,
)
from goldset.services.locking import SubmitBusy
from goldset.views.busy import as_busy
from goldset.views.guidelines import task_panel
from goldset.views.htmx import wants_fragment
from workbench.roles import Role, role_required
from workbench.services.audit import record_event


@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def queue(request):
    overview = selectors.get_queue_overview(project=request.project, annotator=request.user)
    done = selectors.list_my_done_assignments(project=request.project, annotator=request.user)
    context = {"overview": overview, "done": done}
    template = (
        "answers/queue.html#queue-summary"
        if wants_fragment(request, "queue-summary")
        else "answers/queue.html"
    )
    return render(request, template, context)


@require_POST
@role_required(Role.ANNOTATOR)
def claim(request):
    result = claim_next_item(project=request.project, annotator=request.user)
    if result.assignment is None:
        messages.info(request, result.message)
        return redirect("answers:queue")
    return redirect("answers:item", public_id=result.assignment.record.public_id)


def _preset_fields() -> dict:
    """ALL_CLEAR in the form's vocabulary (the severe-safety radio says yes/no)."""
    return {
        name: ("yes" if value else "no") if name == "severe_safety" else value
        for name, value in ALL_CLEAR.items()
    }


def _label_data(request):
    """The POSTed label; the "all clear" button fills the preset axes (the rationale is kept, and
    the labeling service still applies every rule, so the preset cannot skip a required one)."""
    if request.POST.get("preset") != "all_clear":
        return request.POST
    data = request.POST.copy()
    for name, value in _preset_fields().items():
        if isinstance(value, list):
            data.setlist(name, value)
        else:
            data[name] = value
    return data


def _position(project, assignment) -> QueuePosition | None:
    """The item's "5 of 16" in ``project`` (see goldset.selectors.positions)."""
    if assignment.is_calibration:
        return get_calibration_position(assignment=assignment)
    if assignment.completed_at is not None:
        return None
    waiting, more = count_waiting_items(
        project=project, annotator=assignment.annotator, cap=WAITING_CAP
    )
    done = count_labels_today(project=project, annotator=assignment.annotator)
    return QueuePosition.of(done=done, waiting=waiting, more=more, what="labels today")


def _render_item(request, assignment, form=None, *, status=200):
    record = assignment.record
    undoable = selectors.get_undoable_label(project=request.project, annotator=request.user)
    # Blind read models only: the page's context cannot reach the run behind the record.
    context = {
        "assignment": selectors.BlindAssignment.of(assignment),
        "label": selectors.BlindLabel.of(
            selectors.get_own_label(assignment), public_id=record.public_id
        ),
        "form": form or LabelForm(),
        "packet": selectors.get_item_packet(record, user=request.user),
        "undoable": undoable
        and selectors.BlindLabel.of(undoable, public_id=undoable.record.public_id),
        "all_clear_needs_rationale": all_clear_rationale_required(record.question),
        "all_clear": json.dumps(_preset_fields()),
        "position": _position(request.project, assignment),
        **task_panel(
            request,
            kind=DecisionKind.LABEL,
            object_id=assignment.pk,
            task=ANSWER_LABELING,
            domain_id=record.domain_id,
        ),
    }
    if wants_fragment(request, "label-item"):
        return render(request, "answers/item.html#label-item", context, status=status)
    if wants_fragment(request, "label-form"):
        return render(request, "answers/item.html#label-form", context, status=status)
    return render(request, "answers/item.html", context, status=status)


@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def item(request, public_id):
    assignment = selectors.get_assignment_for(
        project=request.project, annotator=request.user, public_id=public_id
    )
    form = LabelForm(_label_data(request) if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            timing = timing_from(
                request.POST,
                kind=DecisionKind.LABEL,
                object_id=assignment.pk,
                user_id=request.user.pk,
            )
            submit_label(assignment=assignment, **form.service_kwargs(), timing=timing)
        except LabelRuleViolation as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        except LabelingClosed as exc:
            form.add_error(None, str(exc))
        except SubmitBusy as exc:
            form.add_error(None, str(exc))
            return as_busy(_render_item(request, assignment, form), exc)
        else:
            messages.success(request, "Label saved.")
            return _after_label(request, assignment)
    if request.method == "GET":
        record_event(actor=request.user, verb="viewed", obj=assignment.record)
    return _render_item(request, assignment, form if request.method == "POST" else None)


def _next_item(request, message_if_none: str | None = None):
    """One motion per item: the response to a submit (or skip, or undo) is the next item itself —
    the ``#label-item`` fragment with its URL pushed for htmx, a redirect otherwise."""
    result = claim_next_item(project=request.project, annotator=request.user)
    if result.assignment is None:
        messages.info(request, message_if_none or result.message)
        target = redirect("answers:queue")
        return HttpResponseClientRedirect(target.url) if request.htmx else target
    public_id = result.assignment.record.public_id
    url = redirect("answers:item", public_id=public_id).url
    if request.htmx:
        # As the item's page reads it (record, question and domain in one statement).
        assignment = selectors.get_assignment_for(
            project=request.project, annotator=request.user, public_id=public_id
        )
        response = _render_item(request, assignment)
        return push_url(response, url)
    return redirect(url)


def _after_label(request, assignment):
    if not assignment.is_calibration:
        return _next_item(request)
    following = selectors.next_calibration_assignment(
        annotator=request.user, domain_id=assignment.record.question.domain_id
    )
    target = (
        redirect("answers:item", public_id=following.record.public_id)
        if following
        else redirect("answers:calibration")
    )
    return HttpResponseClientRedirect(target.url) if request.htmx else target


@require_POST
@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def skip(request, public_id):
    assignment = selectors.get_assignment_for(
        project=request.project, annotator=request.user, public_id=public_id
    )
    try:
        skip_item(assignment=assignment, reason=request.POST.get("reason", ""))
    except SkipRefused as exc:
        messages.error(request, str(exc))
        return _render_item(request, assignment, status=422)
    messages.info(request, "Item skipped; it went back to the pool.")
    return _next_item(request)


@require_POST
@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def undo(request):
    try:
        assignment = undo_last_label(project=request.project, annotator=request.user)
    except UndoRefused as exc:
        messages.error(request, str(exc))
        target = redirect("answers:queue")
        return HttpResponseClientRedirect(target.url) if request.htmx else target
    messages.info(request, "Your last label was withdrawn: change it and submit again.")
    url = redirect("answers:item", public_id=assignment.record.public_id).url
    refilled = LabelForm(initial=assignment.withdrawn)
    if request.htmx:
        return push_url(_render_item(request, assignment, refilled), url)
    return _render_item(request, assignment, refilled)


@role_required(Role.ANNOTATOR)
def calibration(request):
    rows = selectors.list_my_calibration(project=request.project, annotator=request.user)
    return render(request, "answers/calibration.html", {"rows": rows})


@require_POST
@role_required(Role.ANNOTATOR)
def calibration_start(request, domain):
    domain = get_object_or_404(Domain, project=request.project, slug=domain)
    try:
        assignments = start_calibration(
            project=request.project, annotator=request.user, domain=domain
        )
    except CalibrationError as exc:
        messages.error(request, str(exc))
        return redirect("answers:calibration")
    pending = [a for a in assignments if a.completed_at is None]
    if not pending:
        return redirect("answers:calibration")
    return redirect("answers:item", public_id=pending[0].record.public_id)
