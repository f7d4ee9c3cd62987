"""The audit log for admins: filter by actor, object, verb and day range; keyset pages, newest
first; the filtered rows as a streamed CSV."""

import csv

from django.http import StreamingHttpResponse
from django.shortcuts import render

from goldset.forms.audit import AuditFilterForm
from goldset.selectors.audit import CSV_FIELDS, audit_page, detail_json, iter_audit_rows
from workbench.csv_safety import csv_safe_row
from workbench.roles import Role, is_installation_admin, role_required
from workbench.services.audit import record_event

PAGE_SIZE = 50


class _Echo:
    """A file-like whose ``write`` returns the line csv.writer hands it (to stream rows)."""

    def write(self, value):
        return value


def _with_installation(request) -> bool:
    """Installation-level events (sign-ins, projects, members, tokens valid everywhere) are for
    installation admins, on the unprefixed page (the default project's, beside them)."""
    return request.project_slug is None and is_installation_admin(request.user)


@role_required(Role.ADMIN)
def audit_log(request):
    """The project's events (its admins); invalid filters re-render the form with its errors
    and no rows (400)."""
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/log.html", {"form": form, "page": None}, status=400)
    installation = _with_installation(request)
    page = audit_page(
        filters=form.filters(),
        project=request.project,
        installation=installation,
        cursor=request.GET.get("after"),
        size=PAGE_SIZE,
    )
    query = request.GET.copy()
    query.pop("after", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "project": request.project,
        "installation": installation,
    }
    return render(request, "audit/log.html", context)


def _csv_line(row) -> list:
    created_at, actor, verb, object_type, object_id, request_id, detail = row
    cells = [
        created_at.isoformat(), actor or "", verb, object_type, object_id, request_id,
        detail_json(detail),
    ]  # fmt: skip
    return csv_safe_row(cells)


@role_required(Role.ADMIN)
def audit_csv(request):
    """Every event the filters match (not only one page), streamed as CSV; the download is
    itself audited with its filters. Invalid filters: 400."""
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/log.html", {"form": form, "page": None}, status=400)
    filters = form.filters()
    installation = _with_installation(request)
    record_event(
        actor=request.user,
        verb="audit_log_downloaded",
        object_type="workbench.auditevent",
        detail={"filters": filters.as_dict(), "installation": installation},
        project=request.project,
    )
    writer = csv.writer(_Echo())
    header = (writer.writerow(CSV_FIELDS),)
    lines = (
        writer.writerow(_csv_line(row))
        for row in iter_audit_rows(filters, project=request.project, installation=installation)
    )
    response = StreamingHttpResponse(
        (line for part in (header, lines) for line in part), content_type="text/csv"
    )
    response["Content-Disposition"] = 'attachment; filename="audit-log.csv"'
    return response
