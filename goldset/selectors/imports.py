"""Reads of import jobs."""

from django.http import Http404

from goldset.models import ImportJob, ImportKind, PcsCalibration
from workbench.roles import Role, has_role


def get_import_job_for(*, project, user, pk: int) -> ImportJob:
    """The job of ``project`` if ``user`` may see it (admins: every job; others: their own),
    else Http404 (and for another project's job)."""
    job = ImportJob.objects.select_related("created_by").filter(project=project, pk=pk).first()
    if job is None or not (has_role(user, Role.ADMIN) or job.created_by_id == user.pk):
        raise Http404("No such import.")
    return job


def get_run_calibration(*, job: ImportJob) -> PcsCalibration | None:
    """The PCS calibration a run import asked for (its ``calibration`` option), or None for the
    seed's defaults (and for every other kind of import)."""
    pk = job.options.get("calibration") if job.kind == ImportKind.RUN else None
    return PcsCalibration.objects.filter(pk=pk).first() if pk else None
