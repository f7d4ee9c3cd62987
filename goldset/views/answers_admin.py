"""Admin pages for answer labeling: importing questions and answer logs, the systems and runs
(visible to admins only) and the adjudication export."""

import json

from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from goldset.forms.answers import JsonlUploadForm
from goldset.models import ImportKind
from goldset.selectors import answers as selectors
from goldset.services.probe_exports import adjudication_export_rows
from goldset.services.pseudonyms import export_scope
from goldset.views.imports import submit_upload, upload_data, upload_page
from workbench.roles import Role, role_required
from workbench.services.audit import record_event

PAGE_SIZE = 50
KINDS = {"questions": ImportKind.QUESTIONS, "answers": ImportKind.ANSWERS}


@role_required(Role.ADMIN)
def import_files(request):
    kind = request.POST.get("kind", "")
    form = JsonlUploadForm(*upload_data(request))
    context = {"form": form, "errors": [], "kind": kind}
    if request.method == "POST" and kind not in KINDS:
        context["errors"] = ["kind: choose questions or answers (the file's kind)."]
    elif request.method == "POST" and form.is_valid():
        return submit_upload(
            request, kind=KINDS[kind], options={}, template="answers/import.html", context=context
        )
    return upload_page(request, "answers/import.html", context)


@role_required(Role.ADMIN)
def runs(request):
    context = {
        "page": selectors.list_runs(
            project=request.project, cursor=request.GET.get("after"), size=PAGE_SIZE
        ),
        "by_status": selectors.count_records_by_status(project=request.project),
    }
    return render(request, "answers/runs.html", context)


@role_required(Role.ADMIN)
def export(request):
    return render(
        request,
        "answers/export.html",
        {"by_status": selectors.count_records_by_status(project=request.project)},
    )


@role_required(Role.ADMIN)
def export_download(request):
    record_event(actor=request.user, verb="adjudication_exported", object_type="export")
    rows = adjudication_export_rows(scope=export_scope())
    lines = (json.dumps(row, sort_keys=True) + "\n" for row in rows)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="adjudication-export-{stamp}.jsonl"'
    return response
