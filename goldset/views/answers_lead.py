"""Adjudication-lead pages: the adjudication queue, adjudicating an item (labels shown as
Annotator 1/2/3, never the system), calibration sets and everyone's calibration status."""

from django.contrib import messages
from django.forms.utils import pretty_name
from django.shortcuts import redirect, render
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, push_url

from goldset.forms.answers import AdjudicationForm, ReferenceLabelForm
from goldset.forms.time_on_item import timing_from
from goldset.models import DecisionKind
from goldset.rules.calibration import check_set_ready, offer_for
from goldset.selectors import answers as selectors
from goldset.selectors.guidelines import ADJUDICATION
from goldset.selectors.positions import get_adjudication_position
from goldset.services.adjudication import AdjudicationRejected, record_adjudication
from goldset.services.calibration import CalibrationError, set_reference_label
from goldset.services.labeling import LabelRuleViolation, adjudication_prefill
from goldset.services.locking import SubmitBusy
from goldset.views.busy import as_busy
from goldset.views.guidelines import task_panel
from goldset.views.htmx import wants_fragment
from workbench.roles import role_required
from workbench.services.audit import record_event

PAGE_SIZE = 25
LEADS = tuple(selectors.ADJUDICATORS)  # the roles that adjudicate (one home: the selector)


@role_required(*LEADS)
@vary_on_headers("HX-Request")
def adjudication_queue(request):
    show_done = request.GET.get("show") == "all"
    page = selectors.list_adjudication_queue(
        user=request.user,
        project=request.project,
        include_done=show_done,
        cursor=request.GET.get("after"),
        size=PAGE_SIZE,
    )
    context = {
        "page": page,
        "show_done": show_done,
        "first_open": selectors.next_item_for_lead(user=request.user, project=request.project),
    }
    template = "answers/adjudication_queue.html"
    if wants_fragment(request, "adjudication-items"):
        template += "#adjudication-items"
    return render(request, template, context)


def _adjudication_context(request, record, form=None) -> dict:
    """The item with its labels; an unsubmitted form starts from the labels' majority."""
    labels = selectors.list_blind_labels(record, user=request.user)
    prefill = adjudication_prefill(labels)
    if form is None or not form.is_bound:
        form = AdjudicationForm(initial=prefill)
    return {
        "record": record,
        "packet": selectors.get_item_packet(record, user=request.user),
        "labels": labels,
        "adjudication": selectors.get_adjudication_of(record),
        "provenance": selectors.get_provenance_for_admin(user=request.user, record=record),
        "form": form,
        "prefilled": [] if form.is_bound else [pretty_name(name).lower() for name in prefill],
        "position": get_adjudication_position(
            project=request.project, lead=request.user, record=record
        ),
        **task_panel(
            request,
            kind=DecisionKind.ADJUDICATION,
            object_id=record.pk,
            task=ADJUDICATION,
            domain_slug=record.question.domain_slug,
        ),
    }


@role_required(*LEADS)
@vary_on_headers("HX-Request")
def adjudicate(request, public_id):
    record = selectors.access_record_for_adjudication(
        user=request.user, project=request.project, public_id=public_id
    )
    form = AdjudicationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            timing = timing_from(
                request.POST,
                kind=DecisionKind.ADJUDICATION,
                object_id=record.pk,
                user_id=request.user.pk,
            )
            record_adjudication(
                lead=request.user, record=record, **form.service_kwargs(), timing=timing
            )
        except LabelRuleViolation as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        except AdjudicationRejected as exc:
            form.add_error(None, str(exc))
        except SubmitBusy as exc:
            form.add_error(None, str(exc))
            return as_busy(_render_adjudication(request, record, form), exc)
        else:
            messages.success(request, f"Item {record.public_id} adjudicated.")
            return _next_adjudication(request)
    if request.method == "GET":
        record_event(
            actor=request.user,
            verb="viewed",
            object_type="goldset.answerrecord",
            object_id=record.pk,
        )
    return _render_adjudication(request, record, form)


def _render_adjudication(request, record, form):
    context = _adjudication_context(request, record, form)
    template = "answers/adjudicate.html"
    for name in ("adjudication-form", "adjudication-item"):
        if wants_fragment(request, name):
            template += f"#{name}"
    return render(request, template, context)


def _next_adjudication(request):
    """One motion per item: the response to a recorded adjudication is the next open item of
    the queue (its URL pushed); the queue page when none is left."""
    following = selectors.next_item_for_lead(user=request.user, project=request.project)
    if following is None or not wants_fragment(request, "adjudication-item"):
        target = (
            redirect("answers:adjudicate", public_id=following.public_id)
            if following
            else redirect("answers:adjudication_queue")
        )
        return HttpResponseClientRedirect(target.url) if request.htmx else target
    response = render(
        request,
        "answers/adjudicate.html#adjudication-item",
        _adjudication_context(
            request,
            selectors.access_record_for_adjudication(
                user=request.user, project=request.project, public_id=following.public_id
            ),
        ),
    )
    return push_url(response, redirect("answers:adjudicate", public_id=following.public_id).url)


@role_required(*LEADS)
def calibration_status(request):
    domains, page = selectors.get_calibration_status(
        project=request.project, cursor=request.GET.get("after"), size=PAGE_SIZE
    )
    sets = selectors.list_calibration_sets(project=request.project)
    context = {"domains": domains, "page": page, "sets": sets}
    return render(request, "answers/calibration_status.html", context)


@role_required(*LEADS)
def calibration_set(request, domain):
    calibration_set = selectors.get_calibration_set(project=request.project, domain_slug=domain)
    items = list(calibration_set.items.all())
    context = {
        "set": calibration_set,
        "readiness": check_set_ready(calibration_set, items),
        "offer": offer_for(calibration_set, items),
        "drafts": sum(1 for i in items if i.set_version is None),
    }
    return render(request, "answers/calibration_set.html", context)


@role_required(*LEADS)
def calibration_reference(request, domain, public_id):
    item = selectors.get_calibration_item(
        project=request.project, domain_slug=domain, public_id=public_id
    )
    initial = {
        "acceptability": item.reference_acceptability,
        "grounding": item.reference_grounding,
        "severe_safety": {True: "yes", False: "no"}.get(item.reference_severe_safety, ""),
    }
    form = ReferenceLabelForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            set_reference_label(
                project=request.project, lead=request.user, item=item, **form.service_kwargs()
            )
        except CalibrationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Reference label saved for {public_id}.")
            return redirect("answers:calibration_set", domain=domain)
    if request.method == "GET":
        record_event(actor=request.user, verb="viewed", obj=item.record)
    context = {
        "item": item,
        "packet": selectors.get_item_packet(item.record, user=request.user),
        "form": form,
    }
    return render(request, "answers/calibration_reference.html", context)
