"""Annotator pages for blinded answer labeling: the queue, the label form, calibration.

Items are addressed by their opaque ``public_id``; nothing here loads or renders the system, run
or model of a record."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from goldset.forms.answers import LabelForm
from goldset.models import Domain
from goldset.selectors import answers as selectors
from goldset.services.calibration import CalibrationError, start_calibration
from goldset.services.labeling import (
    LabelingClosed,
    LabelRuleViolation,
    claim_next_item,
    submit_label,
)
from workbench.roles import Role, role_required
from workbench.services.audit import record_event


def _wants(request, target: str) -> bool:
    return bool(request.htmx) and not request.htmx.boosted and request.htmx.target == target


@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def queue(request):
    overview = selectors.get_queue_overview(annotator=request.user)
    done = selectors.list_my_done_assignments(annotator=request.user)[:20]
    context = {"overview": overview, "done": done}
    template = (
        "answers/queue.html#queue-summary"
        if _wants(request, "queue-summary")
        else "answers/queue.html"
    )
    return render(request, template, context)


@require_POST
@role_required(Role.ANNOTATOR)
def claim(request):
    result = claim_next_item(annotator=request.user)
    if result.assignment is None:
        messages.info(request, result.message)
        return redirect("answers:queue")
    return redirect("answers:item", public_id=result.assignment.record.public_id)


@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def item(request, public_id):
    assignment = selectors.get_assignment_for(annotator=request.user, public_id=public_id)
    label = selectors.get_own_label(assignment)
    form = LabelForm(request.POST or None)
    if request.method == "POST" and label is None and form.is_valid():
        try:
            submit_label(assignment=assignment, **form.service_kwargs())
        except LabelRuleViolation as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        except LabelingClosed as exc:
            form.add_error(None, str(exc))
        else:
            return _after_label(request, assignment)
    if request.method == "GET":
        record_event(actor=request.user, verb="viewed", obj=assignment.record)
    context = {
        "assignment": assignment,
        "label": label,
        "form": form,
        "packet": selectors.get_item_packet(assignment.record),
    }
    template = (
        "answers/item.html#label-form" if _wants(request, "label-form") else "answers/item.html"
    )
    return render(request, template, context)


def _after_label(request, assignment):
    messages.success(request, "Label saved.")
    if assignment.is_calibration:
        following = selectors.next_calibration_assignment(
            annotator=request.user, domain_id=assignment.record.question.domain_id
        )
        target = (
            redirect("answers:item", public_id=following.record.public_id)
            if following
            else redirect("answers:calibration")
        )
    else:
        target = redirect("answers:queue")
    return HttpResponseClientRedirect(target.url) if request.htmx else target


@role_required(Role.ANNOTATOR)
def calibration(request):
    rows = selectors.list_my_calibration(annotator=request.user)
    return render(request, "answers/calibration.html", {"rows": rows})


@require_POST
@role_required(Role.ANNOTATOR)
def calibration_start(request, domain):
    domain = get_object_or_404(Domain, slug=domain)
    try:
        assignments = start_calibration(annotator=request.user, domain=domain)
    except CalibrationError as exc:
        messages.error(request, str(exc))
        return redirect("answers:calibration")
    pending = [a for a in assignments if a.completed_at is None]
    if not pending:
        return redirect("answers:calibration")
    return redirect("answers:item", public_id=pending[0].record.public_id)
