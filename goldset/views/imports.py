"""Import jobs: the shared submit step of every upload page, and the job page (progress bar by
htmx polling, then the summary or every problem with its line and field)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from goldset.exceptions import GoldsetError
from goldset.models import ImportStatus
from goldset.selectors.imports import get_import_job_for, get_run_calibration
from goldset.services.import_jobs import (
    UploadRejected,
    cancel_import_job,
    import_liveness,
    retry_import_job,
    submit_import,
)
from goldset.views.htmx import wants_fragment
from workbench.access import entry_for
from workbench.roles import ALL_ROLES, Role, role_required, roles_of
from workbench.services.audit import record_event


def submit_upload(request, *, kind: str, options: dict, template: str, context: dict):
    """Store the upload and go to its job page; 422 with the reason when the file is refused
    before (size, encoding) or, in the embedded default, by the import itself."""
    try:
        submission = submit_import(
            project=request.project,
            kind=kind,
            upload=request.FILES["file"],
            actor=request.user,
            options=options,
        )
    except (UploadRejected, GoldsetError) as exc:
        return render(request, template, {**context, "errors": [str(exc)]}, status=422)
    job = submission.job
    job.refresh_from_db()
    if job.status == ImportStatus.REJECTED:
        errors = [_problem_text(p) for p in job.errors] or [job.message]
        return render(request, template, {**context, "errors": errors, "job": job}, status=422)
    (messages.success if submission.created else messages.info)(request, submission.message)
    return redirect("imports:job", pk=job.pk)


def upload_data(request) -> tuple:
    """A form's data and files: bound on every POST, even an empty one (``request.POST or
    None`` leaves a POST without fields unbound, so a missing file showed no error)."""
    return (request.POST, request.FILES) if request.method == "POST" else (None, None)


def upload_page(request, template: str, context: dict):
    """An upload page: 200 for a GET, 422 for a POST whose form was refused (no file, a bad
    field), so every upload page answers a refused submission alike."""
    status = 422 if request.method == "POST" else 200
    return render(request, template, context, status=status)


def _problem_text(problem: dict) -> str:
    parts = [f"line {problem['line']}"] if problem.get("line") is not None else []
    if problem.get("field"):
        parts.append(problem["field"])
    text = problem["message"] + (
        f" (expected {problem['expected']})" if problem.get("expected") else ""
    )
    return ": ".join([*parts, text])


def _job_context(request, job, *, errors=()) -> dict:
    live = import_liveness(job)
    may_act = bool(roles_of(request.user) & entry_for("imports:cancel").roles)
    return {
        "job": job,
        "problems": [_problem_text(p) for p in job.errors],
        "heartbeat_age": live.heartbeat_age,
        "stale_seconds": live.stale_seconds,
        "stuck": live.stuck,
        "can_cancel": may_act and live.can_cancel,
        "can_retry": may_act and live.can_retry,
        "file_gone": live.file_gone,
        "action_errors": list(errors),
    }


@role_required(*ALL_ROLES)
@vary_on_headers("HX-Request")
def import_job(request, pk):
    job = get_import_job_for(project=request.project, user=request.user, pk=pk)
    context = _job_context(request, job)
    if wants_fragment(request, "import-progress"):
        return render(request, "imports/job.html#import-progress", context)
    context["calibration"] = get_run_calibration(job=job)
    record_event(actor=request.user, verb="import_viewed", obj=job)
    status = 422 if job.status == ImportStatus.REJECTED else 200
    return render(request, "imports/job.html", context, status=status)


def _act(request, pk, service, done: str):
    """Cancel or retry through the service; the job's progress card again for htmx (the error
    shown in it), else back to the job page with a message."""
    job = get_import_job_for(project=request.project, user=request.user, pk=pk)
    errors = []
    try:
        job = service(job=job, actor=request.user)
    except GoldsetError as exc:
        errors.append(str(exc))
    if wants_fragment(request, "import-progress"):
        context = _job_context(request, job, errors=errors)
        return render(request, "imports/job.html#import-progress", context)
    if errors:
        messages.error(request, errors[0])
    else:
        messages.info(request, done.format(pk=job.pk))
    return redirect("imports:job", pk=job.pk)


@require_POST
@role_required(Role.LEAD, Role.ADMIN)
@vary_on_headers("HX-Request")
def import_cancel(request, pk):
    return _act(request, pk, cancel_import_job, "Import #{pk} is cancelled; nothing was imported.")


@require_POST
@role_required(Role.LEAD, Role.ADMIN)
@vary_on_headers("HX-Request")
def import_retry(request, pk):
    return _act(request, pk, retry_import_job, "Import #{pk} is queued again.")
