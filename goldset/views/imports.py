"""Import jobs: the shared submit step of every upload page, and the job page (progress bar by
htmx polling, then the summary or every problem with its line and field)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.vary import vary_on_headers

from goldset.exceptions import GoldsetError
from goldset.models import ImportStatus
from goldset.selectors.imports import get_import_job_for, get_run_calibration
from goldset.services.import_jobs import UploadRejected, submit_import
from goldset.services.scoring_jobs import heartbeat_age, stale_seconds
from workbench.roles import ALL_ROLES, role_required
from workbench.services.audit import record_event


def submit_upload(request, *, kind: str, options: dict, template: str, context: dict):
    """Store the upload and go to its job page; 422 with the reason when the file is refused
    before (size, encoding) or, in the embedded default, by the import itself."""
    try:
        submission = submit_import(
            kind=kind, upload=request.FILES["file"], actor=request.user, options=options
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


def _problem_text(problem: dict) -> str:
    parts = [f"line {problem['line']}"] if problem.get("line") is not None else []
    if problem.get("field"):
        parts.append(problem["field"])
    text = problem["message"] + (
        f" (expected {problem['expected']})" if problem.get("expected") else ""
    )
    return ": ".join([*parts, text])


@role_required(*ALL_ROLES)
@vary_on_headers("HX-Request")
def import_job(request, pk):
    job = get_import_job_for(user=request.user, pk=pk)
    age = heartbeat_age(job)
    context = {
        "job": job,
        "problems": [_problem_text(p) for p in job.errors],
        "heartbeat_age": age,
        "stale_seconds": stale_seconds(),
        "stuck": job.status == ImportStatus.RUNNING and (age is None or age > stale_seconds()),
    }
    if request.htmx and request.htmx.target == "import-progress":
        return render(request, "imports/job.html#import-progress", context)
    context["calibration"] = get_run_calibration(job=job)
    record_event(actor=request.user, verb="import_viewed", obj=job)
    status = 422 if job.status == ImportStatus.REJECTED else 200
    return render(request, "imports/job.html", context, status=status)
