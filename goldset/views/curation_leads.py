"""Leads' pages: the curation dashboard, needs-re-review, working slices, spot-checks, the
quality tracker and the bulk triple import."""

import datetime as dt
from decimal import Decimal

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from goldset.conf import curation_setting
from goldset.exceptions import GoldsetError
from goldset.forms.curation import (
    ConfirmReasonForm,
    NoteForm,
    SliceDrawForm,
    SpotCheckDrawForm,
    TripleImportForm,
)
from goldset.models import ImportKind
from goldset.selectors import curation as selectors
from goldset.services import resolution
from goldset.services.quality import current_quarter, draw_working_slice
from goldset.services.reviews import current_iso_week, draw_spot_checks
from goldset.views.curation_authoring import confirm_page
from goldset.views.imports import submit_upload, upload_data, upload_page
from workbench.roles import Role, role_required

LEADS = (Role.LEAD, Role.ADMIN)
PAGE_SIZE = 25


@role_required(*LEADS)
def dashboard(request):
    project = request.project
    rates = selectors.list_author_flag_rates(project=project)
    counts = selectors.triple_counts(project=project)  # one read of the counters for both
    context = {
        **selectors.dashboard_counts(counts, project=project),
        "balance": selectors.source_balance(counts, project=project),
        "review_skips": selectors.count_review_skips_by_reviewer(project=project),
        "drift_limit": curation_setting("SOURCE_DRIFT_POINTS", project=project),
        "rates": rates,
        "alerts": [r for r in rates if r.calibration_needed],
        "quality": selectors.recent_quality_entries(10, project=project),
        "rereview": list(selectors.list_needs_rereview(project=project)[:10]),
        "slice": selectors.list_working_slices(project=project).first(),
        "draws": list(selectors.list_spot_check_draws(project=project)[:5]),
    }
    return render(request, "curation/dashboard.html", context)


@role_required(*LEADS)
def rereview(request):
    page = selectors.page_needs_rereview(
        project=request.project, cursor=request.GET.get("after"), size=PAGE_SIZE
    )
    return render(request, "curation/rereview.html", {"page": page, "note_form": NoteForm()})


def _lead_action(request, pk, action, done: str):
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    try:
        action(triple=triple, actor=request.user)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{triple.external_id} {done}.")
    back = "curation:dashboard" if request.POST.get("next") == "dashboard" else "curation:rereview"
    return redirect(back)


@require_POST
@role_required(*LEADS)
def repin(request, pk):
    return _lead_action(
        request,
        pk,
        resolution.repin_triple,
        "is re-pinned to the newest block version and re-enters review",
    )


@require_POST
@role_required(*LEADS)
def retire(request, pk):
    """Retire asks first (like drop): a reason, then the confirmed POST retires."""
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    form = ConfirmReasonForm(request.POST)
    back_name = (
        "curation:dashboard" if request.POST.get("next") == "dashboard" else "curation:rereview"
    )
    if form.is_valid() and form.cleaned_data["confirm"]:
        try:
            resolution.retire_triple(
                triple=triple, actor=request.user, note=form.cleaned_data["note"]
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{triple.external_id} is retired.")
            return redirect(back_name)
    return confirm_page(
        request,
        form,
        triple=triple,
        action=reverse("curation:retire", args=[triple.pk]),
        verb="Retire",
        explain="A retired triple leaves the gold set for good; it cannot be reinstated.",
        back=reverse(back_name),
        extra={"next": request.POST.get("next", "")},
    )


@role_required(*LEADS)
def slices(request):
    form = SliceDrawForm(request.POST or None, initial={"quarter": current_quarter()})
    if request.method == "POST" and form.is_valid():
        try:
            drawn = draw_working_slice(
                project=request.project, actor=request.user, **form.cleaned_data
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Working slice {drawn.quarter}: {len(drawn.triple_ids)} triples, seed {drawn.seed}.",
            )
            return redirect("curation:slice", quarter=drawn.quarter)
    return render(
        request,
        "curation/slices.html",
        {"form": form, "slices": selectors.list_working_slices(project=request.project)},
    )


@role_required(*LEADS)
def slice_detail(request, quarter):
    working_slice = selectors.get_working_slice(project=request.project, quarter=quarter)
    triples = selectors.list_slice_triples(working_slice=working_slice)
    page = Paginator(triples, 60).get_page(request.GET.get("page"))
    return render(request, "curation/slice_detail.html", {"slice": working_slice, "page": page})


def _previous_week() -> str:
    year, week = current_iso_week()
    monday = dt.date.fromisocalendar(year, week, 1) - dt.timedelta(days=7)
    y, w, _ = monday.isocalendar()
    return f"{y}-W{w:02d}"


@role_required(*LEADS)
def spot_checks(request):
    form = SpotCheckDrawForm(request.POST or None, initial={"week": _previous_week()})
    if request.method == "POST" and form.is_valid():
        (year, week), seed = form.cleaned_data["week"], form.cleaned_data["seed"]
        try:
            draw = draw_spot_checks(
                project=request.project, iso_year=year, iso_week=week, seed=seed, actor=request.user
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Spot-check {draw.week}: {len(draw.selected_revision_ids)} of "
                f"{len(draw.eligible_revision_ids)} TRIAGE revisions, seed {draw.seed}.",
            )
            return redirect("curation:spot_checks")
    rate = Decimal(str(curation_setting("SPOT_CHECK_RATE", project=request.project)))
    context = {
        "form": form,
        "draws": selectors.list_spot_check_draws(project=request.project),
        "rate": f"{float(rate * 100):g} %",  # the project's rate in force
    }
    return render(request, "curation/spot_checks.html", context)


@role_required(*LEADS)
def quality(request):
    page = Paginator(selectors.list_quality_entries(project=request.project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(request, "curation/quality.html", {"page": page})


@role_required(*LEADS)
def import_page(request):
    form = TripleImportForm(*upload_data(request))
    if request.method == "POST" and form.is_valid():
        return submit_upload(
            request,
            kind=ImportKind.TRIPLES,
            options={"on_behalf": form.cleaned_data["on_behalf"]},
            template="curation/import.html",
            context={"form": form},
        )
    return upload_page(request, "curation/import.html", {"form": form, "errors": []})
