"""Frozen gold versions (freeze, browse, diff, download) and scoring jobs (upload, progress,
results, compare, downloads). Versions: admins and leads; freezing and scoring: admins."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from goldset.exceptions import GoldsetError
from goldset.forms.exports import FreezeForm, RunUploadForm, TagDeleteForm, TagForm
from goldset.models import ImportKind
from goldset.rules.exports import SNIPPET_PERMISSION
from goldset.selectors import exports as selectors
from goldset.selectors import version_tags as tag_selectors
from goldset.services import exports as export_files
from goldset.services import job_downloads
from goldset.services.blinded_downloads import (
    ChecksumMismatch,
    NoSuchDownload,
    serve_version_file,
)
from goldset.services.freeze import NothingToFreeze, freeze_gold_version, preview_freeze
from goldset.services.project_settings import pcs_calibration_in_use
from goldset.services.scoring_jobs import (
    cancel_scoring_job,
    ci_description,
    ci_strata_sizes,
    job_liveness,
    reproduce_command,
    retry_scoring_job,
)
from goldset.services.version_tags import (
    TagRefused,
    delete_version_tag,
    resolve_version,
    set_version_tag,
)
from goldset.views.downloads import file_response
from goldset.views.htmx import wants_fragment
from goldset.views.imports import submit_upload, upload_data, upload_page
from workbench.roles import Role, role_required
from workbench.services.audit import record_event

PAGE_SIZE = 25
VIEWERS = (Role.ADMIN, Role.LEAD)


def _integrity_error(request, exc):
    return render(request, "exports/integrity_error.html", {"message": str(exc)}, status=500)


def _stream(content, *, filename, content_type):
    response = StreamingHttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@role_required(*VIEWERS)
def version_list(request):
    return _version_list(request)


def _version_list(request, *, tag_form=None, status=200):
    """The versions page: versions, tags and their latest changes; for admins the tag form
    (``tag_form`` bound and refused: its errors, with ``status`` 422)."""
    project = request.project
    page = Paginator(selectors.list_versions(project=project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    tags = list(tag_selectors.list_tags(project=project))
    tagged = tag_selectors.tags_by_version(project=project, tags=tags)
    for version in page:
        version.version_tags = tagged.get(version.pk, [])
    context = {
        "page": page,
        "tags": tags,
        "tag_history": tag_selectors.list_tag_history(project=project, limit=20),
        "tag_form": tag_form or TagForm(project=project),
    }
    return render(request, "exports/version_list.html", context, status=status)


@role_required(Role.ADMIN)
@vary_on_headers("HX-Request")
def version_freeze(request):
    form = FreezeForm(request.POST or None, project=request.project)
    preview, error = None, ""
    if request.method == "POST" and form.is_valid():
        try:
            if request.POST.get("action") == "freeze":
                version = freeze_gold_version(
                    project=request.project,
                    filters=form.filters(),
                    actor=request.user,
                    note=form.cleaned_data["note"],
                )
                messages.success(request, f"Froze gold version {version.label}.")
                return redirect("exports:version", number=version.number)
            preview = preview_freeze(project=request.project, filters=form.filters())
        except NothingToFreeze as exc:
            messages.info(request, str(exc))
            return redirect("exports:version", number=exc.latest.number)
        except GoldsetError as exc:
            error = str(exc)
    context = {"form": form, "preview": preview, "error": error}
    if wants_fragment(request, "freeze-preview"):
        # htmx swaps only 2xx answers into the preview (base.html's responseHandling); the
        # fragment lists the form's errors itself (the page shows them beside the fields)
        context["fragment"] = True
        return render(request, "exports/freeze.html#freeze-preview", context)
    refused = request.method == "POST" and (error or form.errors)
    return render(request, "exports/freeze.html", context, status=422 if refused else 200)


def _version(request, number: int | None, ref: str | None):
    """The version a page URL names: ``v7/`` (``number``), or a tag, ``latest`` or ``7``
    (``ref``), read by the one resolver; 404 for anything the project does not have."""
    return resolve_version(project=request.project, ref=number if ref is None else ref)


@role_required(*VIEWERS)
def version_detail(request, number=None, ref=None):
    """A version's page, by number (``v7/``) or by tag or ``latest`` (``release-2026q4/``:
    the version the tag names now)."""
    version = _version(request, number, ref)
    try:
        export_files.verify_rows(version)
    except export_files.ChecksumMismatch as exc:
        return _integrity_error(request, exc)
    record_event(actor=request.user, verb="gold_version_viewed", obj=version)
    context = {
        "version": version,
        "files": selectors.version_files_for(version=version, user=request.user),
        "full_snippets": request.user.has_perm(SNIPPET_PERMISSION),
        "revocations": selectors.revocations_for(version),
        "versions": selectors.list_job_versions(project=request.project),
        "tags": tag_selectors.list_tags(project=request.project).filter(version=version),
        "tag_form": TagForm(project=request.project, initial={"version": str(version.number)}),
    }
    return render(request, "exports/version_detail.html", context)


@require_POST
@role_required(Role.ADMIN)
def tag_set(request):
    """Create a tag or move it (the form of the versions and version pages); a refused name,
    version or note re-renders the versions page with the field's error (422)."""
    form = TagForm(request.POST, project=request.project)
    if form.is_valid():
        try:
            change = set_version_tag(
                project=request.project,
                actor=request.user,
                name=form.cleaned_data["name"],
                version=form.cleaned_data["version"],
                note=form.cleaned_data["note"],
            )
        except GoldsetError as exc:
            form.add_error(getattr(exc, "field", "") or None, str(exc))
        else:
            messages.success(request, _tag_message(change))
            return redirect("exports:version", number=change.tag.version.number)
    return _version_list(request, tag_form=form, status=422)


def _tag_message(change) -> str:
    tag, label = change.tag, change.tag.version.label
    if change.created:
        return f"Tag {tag.name} created on {label}."
    if not change.changed:
        return f"Tag {tag.name} already points at {label}; nothing changed."
    return f"Tag {tag.name} moved from {change.previous.label} to {label}."


@require_POST
@role_required(Role.ADMIN)
def tag_delete(request, name):
    """Delete a tag (its history stays); 404 for an unknown tag, 422 for a note too long."""
    form = TagDeleteForm(request.POST)
    if not form.is_valid():
        tag_form = TagForm(project=request.project)
        tag_form.add_error(None, f"note: {form.errors['note'][0]}")
        return _version_list(request, tag_form=tag_form, status=422)
    try:
        delete_version_tag(
            project=request.project, actor=request.user, name=name, note=form.cleaned_data["note"]
        )
    except TagRefused as exc:
        raise PermissionDenied(str(exc)) from exc
    messages.success(request, f"Tag {name} deleted.")
    return redirect("exports:versions")


@role_required(*VIEWERS)
def version_download(request, fmt, number=None, ref=None):
    """The stored file, reduced to the fields the user's role is declared to get for this format
    (``workbench.access.VERSION_FILE_FIELDS``): one path with the API
    (:func:`serve_version_file`); 404 when there is no such file for them, the integrity page
    (500) when the stored bytes fail their checksum. The version by number, tag or ``latest``
    (a tag read once: the file is that of one version)."""
    version = _version(request, number, ref)
    try:
        download = serve_version_file(user=request.user, version=version, fmt=fmt, via="page")
    except ChecksumMismatch as exc:
        return _integrity_error(request, exc)
    except NoSuchDownload as exc:
        raise Http404(str(exc)) from exc
    return file_response(download)


@role_required(*VIEWERS)
def version_diff(request):
    """Two versions' differences; ``a`` and ``b`` are numbers, tags or ``latest`` (404 for a
    reference the project does not have)."""
    a = resolve_version(project=request.project, ref=request.GET.get("a", ""))
    b = resolve_version(project=request.project, ref=request.GET.get("b", ""))
    try:
        before = export_files.verified_row_checksums(a)
        after = export_files.verified_row_checksums(b)
        diff = selectors.diff_versions(a=a, b=b, before=before, after=after)
    except export_files.ChecksumMismatch as exc:
        return _integrity_error(request, exc)
    context = {"diff": diff, "versions": selectors.list_job_versions(project=request.project)}
    return render(request, "exports/version_diff.html", context)


@role_required(Role.ADMIN)
def job_list(request):
    form = RunUploadForm(
        *upload_data(request),
        project=request.project,
        initial={"calibration": pcs_calibration_in_use(project=request.project)},
    )
    page = Paginator(selectors.list_jobs(project=request.project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    if request.method == "POST" and form.is_valid():
        return submit_upload(
            request,
            kind=ImportKind.RUN,
            options={
                "version": form.cleaned_data["version"].number,
                "name": form.cleaned_data["name"],
                "k": form.cleaned_data["k"],
                "calibration": getattr(form.cleaned_data["calibration"], "pk", None),
                "metrics": form.cleaned_data["metrics"] or None,
            },
            template="exports/job_list.html",
            context={"form": form, "page": page},
        )
    return upload_page(request, "exports/job_list.html", {"form": form, "errors": [], "page": page})


@role_required(Role.ADMIN)
@vary_on_headers("HX-Request")
def job_detail(request, pk):
    job = selectors.get_job(project=request.project, pk=pk)
    live = job_liveness(job)
    if wants_fragment(request, "job-progress"):
        response = render(
            request, "exports/job_detail.html#job-progress", {"job": job, "live": live}
        )
        if job.finished:
            response["HX-Refresh"] = "true"  # load the results below the finished bar
        return response
    record_event(actor=request.user, verb="scoring_job_viewed", obj=job)
    results = selectors.job_results(job=job) if job.status == "succeeded" else None
    others = selectors.list_jobs(project=request.project).filter(
        version=job.version, kind=job.kind, status="succeeded"
    )
    context = {
        "job": job,
        "live": live,
        "results": results,
        "others": others.exclude(pk=job.pk)[:20],
        "ci": ci_description(job),
        "ci_strata": ci_strata_sizes(job),
        "reproduce": reproduce_command(job),
    }
    return render(request, "exports/job_detail.html", context)


@require_POST
@role_required(Role.ADMIN)
def job_retry(request, pk):
    job = selectors.get_job(project=request.project, pk=pk)
    try:
        retry_scoring_job(job=job, actor=request.user)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    return redirect("exports:job", pk=job.pk)


@require_POST
@role_required(Role.ADMIN)
def job_cancel(request, pk):
    job = selectors.get_job(project=request.project, pk=pk)
    try:
        cancel_scoring_job(job=job, actor=request.user)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Job #{job.pk} is cancelled; you can retry it.")
    return redirect("exports:job", pk=job.pk)


DOWNLOADS = {
    "csv": (job_downloads.results_csv, "text/csv", "results.csv"),
    "json": (job_downloads.results_json, "application/json", "results.json"),
    "bundle": (job_downloads.bundle_zip, "application/zip", "reproducibility-bundle.zip"),
}


@role_required(Role.ADMIN)
def job_download(request, pk, fmt):
    job = selectors.get_job(project=request.project, pk=pk)
    if fmt not in DOWNLOADS or job.status != "succeeded":
        raise Http404("no such download")
    render_fn, content_type, suffix = DOWNLOADS[fmt]
    record_event(actor=request.user, verb="scoring_job_downloaded", obj=job, detail={"format": fmt})
    try:
        content = render_fn(job)
        first = next(content)
    except export_files.ChecksumMismatch as exc:
        return _integrity_error(request, exc)
    return _stream(
        _chain(first, content), filename=f"job-{job.pk}-{suffix}", content_type=content_type
    )


@role_required(Role.ADMIN)
def job_compare(request):
    """Paired comparison of the ticked runs; an invalid choice answers 400 with the reason on
    this page (and a link back to the runs), never a bare 404."""
    ids = [i for i in (_int(v) for v in request.GET.getlist("jobs")) if i is not None]
    method = request.GET.get("method") or "auto"
    if len(set(ids)) < 2:
        error = "Choose two runs scored against the same gold version to compare."
        return render(request, "exports/compare.html", {"error": error}, status=400)
    try:
        jobs = selectors.list_comparable_jobs(project=request.project, job_ids=ids)
    except Http404:
        error = (
            "Only finished scoring jobs can be compared: one of those chosen is unknown or has "
            "not succeeded."
        )
        return render(request, "exports/compare.html", {"error": error}, status=400)
    try:
        comparison = selectors.compare_jobs(jobs=jobs, wilcoxon_method=method)
    except selectors.NotComparable as exc:
        return render(request, "exports/compare.html", {"error": str(exc)}, status=400)
    return render(request, "exports/compare.html", {"comparison": comparison})


def _chain(first, rest):
    yield first
    yield from rest


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
