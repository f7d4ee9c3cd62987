"""Evaluators (admins), the evaluator report (leads: pseudonymised; admins: named), PCS
calibrations and release reports (admins)."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.vary import vary_on_headers

from goldset.exceptions import GoldsetError
from goldset.forms.answers import JsonlUploadForm
from goldset.forms.evaluators import CalibrationStartForm, EvaluatorForm, ReleaseReportForm
from goldset.models import ImportKind
from goldset.selectors import evaluators as selectors
from goldset.services.evaluators import compute_evaluator_report, create_evaluator
from goldset.services.pcs_calibrations import start_pcs_calibration
from goldset.services.project_settings import pcs_calibration_in_use
from goldset.services.release_reports import create_release_report
from goldset.views.htmx import wants_fragment
from goldset.views.imports import submit_upload, upload_data, upload_page
from goldset.views.status import form_status
from scoring import calibration as pcs_calibration
from scoring.stats import FAMILYWISE_ALPHA
from workbench.roles import Role, role_required

PAGE_SIZE = 25


@login_required
def evaluator_list(request):
    evaluators = selectors.list_evaluators_for(project=request.project, user=request.user)
    form = EvaluatorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            evaluator = create_evaluator(
                project=request.project, **form.cleaned_data, actor=request.user
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("evaluators:detail", pk=evaluator.pk)
    page = Paginator(evaluators, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "form": form}
    return render(request, "evaluators/list.html", context, status=form_status(request))


@login_required
def evaluator_detail(request, pk):
    """The evaluator and its imports; POST stores an outputs file as an import job (a worker
    validates and writes it) and goes to the job's page."""
    evaluator = selectors.get_evaluator_for(
        project=request.project, user=request.user, evaluator_id=pk
    )
    form = JsonlUploadForm(*upload_data(request))
    imports = selectors.list_evaluator_imports(evaluator=evaluator)[:50]
    context = {
        "evaluator": evaluator,
        "form": form,
        "errors": [],
        "imports": imports,
        "jobs": selectors.list_evaluator_import_jobs(evaluator=evaluator),
    }
    if request.method == "POST" and form.is_valid():
        return submit_upload(
            request,
            kind=ImportKind.EVALUATOR,
            options={"evaluator": evaluator.pk},
            template="evaluators/detail.html",
            context=context,
        )
    return upload_page(request, "evaluators/detail.html", context)


@role_required(Role.LEAD, Role.ADMIN)
def evaluator_report(request):
    if request.method == "POST":
        try:
            compute_evaluator_report(project=request.project, actor=request.user)
        except GoldsetError as exc:
            messages.error(request, str(exc))
        return redirect("evaluators:report")
    report = selectors.get_evaluator_report_for(project=request.project, user=request.user)
    return render(request, "evaluators/report.html", {"report": report})


@role_required(Role.LEAD, Role.ADMIN)
def evaluator_report_json(request):
    report = selectors.get_evaluator_report_for(project=request.project, user=request.user)
    payload = {k: v for k, v in (report or {}).items() if k != "snapshot"}
    if report:
        payload["computed_at"] = report["snapshot"].created_at.isoformat()
    response = HttpResponse(json.dumps(payload, indent=1), content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="evaluator-report.json"'
    return response


def _pcs_split() -> dict:
    """The PCS calibration split the pages describe: the scoring library's (seed 004 A.7)."""
    return {
        "fractions": [f"{f * 100:g} %" for f in pcs_calibration.FRACTIONS],
        "seed": pcs_calibration.SPLIT_SEED,
        "group_seed": pcs_calibration.GROUP_SEED,
    }


@role_required(Role.ADMIN)
def calibration_list(request):
    form = CalibrationStartForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            calibration = start_pcs_calibration(
                project=request.project, name=form.cleaned_data["name"], actor=request.user
            )
        except GoldsetError as exc:
            form.add_error("name", str(exc))
        else:
            return redirect("evaluators:calibration", pk=calibration.pk)
    page = Paginator(selectors.list_calibrations(project=request.project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "form": form, "split": _pcs_split()}
    return render(request, "evaluators/calibrations.html", context, status=form_status(request))


@role_required(Role.ADMIN)
@vary_on_headers("HX-Request")
def calibration_detail(request, pk):
    calibration = selectors.get_calibration(project=request.project, pk=pk)
    if wants_fragment(request, "calibration-progress"):
        response = render(
            request, "evaluators/calibration.html#calibration-progress", {"c": calibration}
        )
        if calibration.status in ("succeeded", "failed"):
            response["HX-Refresh"] = "true"
        return response
    return render(request, "evaluators/calibration.html", {"c": calibration, "split": _pcs_split()})


@role_required(Role.ADMIN)
def release_list(request):
    """The project's release reports and the form to compute one; a refused form (another
    project's version or calibration among them) answers 422 with its errors, nothing stored."""
    form = ReleaseReportForm(
        request.POST or None,
        project=request.project,
        initial={"calibration": pcs_calibration_in_use(project=request.project)},
    )
    if request.method == "POST" and form.is_valid():
        try:
            report = create_release_report(
                project=request.project,
                version=form.cleaned_data["version"],
                run_ids=form.cleaned_data["runs"],
                calibration=form.cleaned_data["calibration"],
                actor=request.user,
                pairwise_task=form.cleaned_data.get("pairwise_task"),
            )
        except GoldsetError as exc:
            field = getattr(exc, "field", None)  # a pairwise task on another gold version
            form.add_error(field if field in form.fields else None, str(exc))
        else:
            return redirect("evaluators:release", pk=report.pk)
    page = Paginator(selectors.list_release_reports(project=request.project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "form": form}
    return render(request, "evaluators/releases.html", context, status=form_status(request))


@role_required(Role.ADMIN)
def release_detail(request, pk):
    report = selectors.get_release_report(project=request.project, pk=pk)
    charts = selectors.release_report_charts(report=report)
    context = {
        "r": report,
        "data": report.report,
        "charts": charts,
        "familywise_alpha": FAMILYWISE_ALPHA,
    }
    return render(request, "evaluators/release.html", context)


@role_required(Role.ADMIN)
def release_download(request, pk, fmt):
    report = selectors.get_release_report(project=request.project, pk=pk)
    if fmt == "html":
        response = HttpResponse(report.html, content_type="text/html; charset=utf-8")
    else:
        response = HttpResponse(
            json.dumps(report.report, indent=1), content_type="application/json"
        )
    name = f"release-report-{report.pk}-v{report.version.number}.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
