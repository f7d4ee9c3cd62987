import csv
import io
import json

from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from goldset.selectors.agreement import (
    AGREEMENT_SETTINGS,
    CSV_FIELDS,
    confusion_rows,
    get_dashboard,
    iter_snapshot_rows,
    list_agreement_alerts,
    workload_rows,
)
from goldset.selectors.alert_groups import group_alerts
from goldset.selectors.disagreements import link_alerts, list_disagreements
from goldset.selectors.time_on_item import (
    get_time_on_item_summary,
    list_fast_decisions,
    time_on_item_rows,
)
from goldset.services.agreement import schedule_agreement_recompute
from goldset.services.project_settings import settings_in_force
from goldset.views.htmx import wants_fragment
from workbench.csv_safety import csv_safe_row
from workbench.roles import Role, role_required


@role_required(Role.LEAD, Role.ADMIN)
@vary_on_headers("HX-Request")
def agreement_dashboard(request):
    q = request.GET
    partial = wants_fragment(request, "confusion")
    project = request.project
    context = get_dashboard(
        project=project,
        protocol=q.get("protocol", ""),
        axis=q.get("axis", ""),
        first=q.get("a", ""),
        second=q.get("b", ""),
        partial=partial,
    )
    if not partial:
        context["alerts"] = link_alerts(context["alerts"])
        context["alert_groups"] = group_alerts(context["alerts"])
        context["time_on_item"] = get_time_on_item_summary(project=project)
        context["time_on_item_stale"] = any(r.stale for r in context["time_on_item"])
    template = "quality/agreement.html#confusion" if partial else "quality/agreement.html"
    return render(request, template, context)


FAST_PAGE_SIZE = 50


@role_required(Role.LEAD, Role.ADMIN)
def fast_decisions(request):
    """Labels, reviews and adjudications decided faster than their tier's threshold."""
    page = list_fast_decisions(
        project=request.project, cursor=request.GET.get("after"), size=FAST_PAGE_SIZE
    )
    return render(request, "quality/fast_decisions.html", {"page": page})


@require_POST
@role_required(Role.LEAD, Role.ADMIN)
def recompute(request):
    schedule_agreement_recompute(project_id=request.project.pk, now=True)
    messages.success(
        request,
        "A recompute is queued: the figures update as soon as a worker runs it (reload in a "
        "moment); until then the dashboard marks them as stale.",
    )
    return redirect("quality:agreement")


@role_required(Role.LEAD, Role.ADMIN)
def alerts(request):
    alerts = link_alerts(list_agreement_alerts(project=request.project))
    return render(
        request,
        "quality/alerts.html",
        {"alerts": alerts, "alert_groups": group_alerts(alerts), "open_groups": True},
    )


@role_required(Role.LEAD, Role.ADMIN)
def disagreements(request):
    """The gold items behind an alert: where a pair (``a``, ``b``), one annotator (``a``) or the
    annotators of a task type gave different values on ``axis``; each item links to its page."""
    q = request.GET
    found = list_disagreements(
        project=request.project,
        protocol=q.get("protocol", ""),
        axis=q.get("axis", ""),
        first=q.get("a", ""),
        second=q.get("b", ""),
        task_type=q.get("task_type", ""),
        page=q.get("page") or 1,
    )
    return render(request, "quality/disagreements.html", {"d": found, "page": found.page})


class _Echo:
    def write(self, value):
        return value


@role_required(Role.LEAD, Role.ADMIN)
def agreement_download(request, fmt):
    """The stored figures (``CSV_FIELDS``), each row followed by the project's settings in force
    that shape them (``AGREEMENT_SETTINGS``, one column each)."""
    filters = {k: v for k in ("protocol", "axis", "metric", "tier") if (v := request.GET.get(k))}
    in_force = settings_in_force(project=request.project, names=AGREEMENT_SETTINGS)
    settings = tuple(in_force[name]["value"] for name in AGREEMENT_SETTINGS)
    header = [*CSV_FIELDS, *AGREEMENT_SETTINGS]
    rows = [row + settings for row in iter_snapshot_rows(project=request.project, **filters)]
    if fmt == "json":
        body = json.dumps([dict(zip(header, row, strict=True)) for row in rows], indent=1)
        response = HttpResponse(body, content_type="application/json")
    else:
        writer = csv.writer(_Echo())
        lines = (writer.writerow(csv_safe_row(r)) for r in [header, *rows])
        response = StreamingHttpResponse(lines, content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="agreement.{fmt}"'
    return response


@role_required(Role.LEAD, Role.ADMIN)
def table_download(request, name, fmt):
    """The confusion matrix (``protocol``, ``axis``, ``a``, ``b``), the workload table or the
    time-on-item table as CSV/JSON."""
    q = request.GET
    if name == "time":
        header, rows = time_on_item_rows(project=request.project)
    else:
        header, rows = (
            confusion_rows(
                project=request.project,
                protocol=q.get("protocol", ""),
                axis=q.get("axis", ""),
                first=q.get("a", ""),
                second=q.get("b", ""),
            )
            if name == "confusion"
            else workload_rows(project=request.project)
        )
    if fmt == "json":
        response = HttpResponse(
            json.dumps([dict(zip(header, r, strict=True)) for r in rows], indent=1),
            content_type="application/json",
        )
    else:
        buffer = io.StringIO()
        csv.writer(buffer).writerows(csv_safe_row(r) for r in [header, *rows])
        response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
