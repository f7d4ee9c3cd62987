"""Admin pages for answer labeling: importing questions and answer logs, the systems and runs
(visible to admins only) and the adjudication export."""

import json

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from goldset.exceptions import ImportRejected
from goldset.forms.answers import JsonlUploadForm
from goldset.selectors import answers as selectors
from goldset.services.answer_imports import import_answer_logs, import_questions
from workbench.roles import Role, role_required
from workbench.services.audit import record_event

IMPORTERS = {"questions": import_questions, "answers": import_answer_logs}


@role_required(Role.ADMIN)
def import_files(request):
    kind = request.POST.get("kind", "")
    form = JsonlUploadForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and kind in IMPORTERS and form.is_valid():
        try:
            summary = IMPORTERS[kind](
                text=form.cleaned_data["file"],
                actor=request.user,
                source_name=request.FILES["file"].name,
            )
        except ImportRejected as exc:
            errors = exc.errors
        else:
            messages.success(request, f"Imported {request.FILES['file'].name}: {summary.as_dict()}")
            return redirect("answers:import")
    context = {"form": form, "errors": errors, "kind": kind}
    return render(request, "answers/import.html", context, status=200)


@role_required(Role.ADMIN)
def runs(request):
    context = {"runs": selectors.list_runs(), "by_status": selectors.count_records_by_status()}
    return render(request, "answers/runs.html", context)


@role_required(Role.ADMIN)
def export(request):
    return render(
        request, "answers/export.html", {"by_status": selectors.count_records_by_status()}
    )


@role_required(Role.ADMIN)
def export_download(request):
    record_event(actor=request.user, verb="adjudication_exported", object_type="export")
    lines = (json.dumps(row, sort_keys=True) + "\n" for row in selectors.iter_adjudication_export())
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="adjudication-export-{stamp}.jsonl"'
    return response
