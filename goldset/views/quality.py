import csv
import json

from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from goldset.charts import BarChart
from goldset.selectors.agreement import (
    ANNOTATOR_METRICS,
    CSV_FIELDS,
    PROTOCOL_LABELS,
    confusion_matrix,
    get_agreement_view,
    get_workload,
    list_agreement_alerts,
    list_annotator_figures,
    list_snapshots,
)
from goldset.services.agreement import schedule_agreement_recompute
from workbench.roles import Role, role_required


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@role_required(Role.LEAD, Role.ADMIN)
@vary_on_headers("HX-Request")
def agreement_dashboard(request):
    q = request.GET
    view = get_agreement_view(protocol=q.get("protocol", ""), axis=q.get("axis", ""))
    first, second = _int(q.get("a")), _int(q.get("b"))
    confusion = (
        confusion_matrix(protocol=view.protocol, axis=view.axis, first=first, second=second)
        if first and second
        else None
    )
    context = {
        "v": view,
        "confusion": confusion,
        "a": first,
        "b": second,
        "protocol_labels": PROTOCOL_LABELS,
    }
    if request.htmx and request.htmx.target == "confusion" and not request.htmx.boosted:
        return render(request, "quality/agreement.html#confusion", context)
    annotators = list_annotator_figures()
    workload = get_workload()
    bars = {
        metric: BarChart(
            label,
            [
                (f"{r.username} ({r.protocol[0]})", r.figures[metric][0])
                for r in annotators
                if metric in r.figures
            ],
            x_max=max([r.figures[metric][0] for r in annotators if metric in r.figures] + [1]),
            percent=metric != "volume",
        )
        for metric, label in ANNOTATOR_METRICS.items()
        if metric != "severe_rate_gap"
    }
    pair_choices = sorted(
        {(r.user_id, r.username) for r in annotators if r.protocol == view.protocol},
        key=lambda c: c[1],
    )
    context |= {
        "alerts": list_agreement_alerts(),
        "annotators": annotators,
        "pair_choices": pair_choices,
        "annotator_metrics": ANNOTATOR_METRICS,
        "bars": bars,
        "workload": workload,
    }
    return render(request, "quality/agreement.html", context)


@require_POST
@role_required(Role.LEAD, Role.ADMIN)
def recompute(request):
    schedule_agreement_recompute(now=True)
    messages.success(request, "Agreement figures are being recomputed; reload in a moment.")
    return redirect("quality:agreement")


@role_required(Role.LEAD, Role.ADMIN)
def alerts(request):
    return render(request, "quality/alerts.html", {"alerts": list_agreement_alerts()})


class _Echo:
    def write(self, value):
        return value


@role_required(Role.LEAD, Role.ADMIN)
def agreement_download(request, fmt):
    filters = {k: v for k in ("protocol", "axis", "metric", "tier") if (v := request.GET.get(k))}
    rows = list_snapshots(**filters).values_list(*CSV_FIELDS)
    if fmt == "json":
        body = json.dumps(
            [dict(zip(CSV_FIELDS, row, strict=True)) for row in rows.iterator()], indent=1
        )
        response = HttpResponse(body, content_type="application/json")
    else:
        writer = csv.writer(_Echo())
        lines = (writer.writerow(r) for r in [CSV_FIELDS, *rows.iterator()])
        response = StreamingHttpResponse(lines, content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="agreement.{fmt}"'
    return response
