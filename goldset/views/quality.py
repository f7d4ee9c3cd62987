import csv
import json

from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from goldset.selectors.agreement import (
    CSV_FIELDS,
    PROTOCOL_LABELS,
    get_agreement_view,
    list_agreement_alerts,
    list_snapshots,
)
from workbench.roles import Role, role_required


@role_required(Role.LEAD, Role.ADMIN)
def agreement_dashboard(request):
    view = get_agreement_view(
        protocol=request.GET.get("protocol", ""), axis=request.GET.get("axis", "")
    )
    context = {"v": view, "alerts": list_agreement_alerts(), "protocol_labels": PROTOCOL_LABELS}
    return render(request, "quality/agreement.html", context)


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
