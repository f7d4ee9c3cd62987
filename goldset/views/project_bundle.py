"""The project bundle download (DESIGN.md §15, "Copy and move"): a project's admins download its
whole state as the bundle ``manage.py import_project`` reads
(:mod:`goldset.services.project_bundle`)."""

import tempfile

from django.http import FileResponse
from django.utils import timezone

from goldset.services.project_bundle import export_bundle
from workbench.roles import Role, role_required


@role_required(Role.ADMIN)
def download(request):
    """Written to a temporary file first (the archive's members are spooled one table at a
    time), then streamed; the file is gone once the response is closed."""
    project = request.project
    spool = tempfile.TemporaryFile(prefix="goldset-bundle-")
    export_bundle(project=project, out=spool, by=request.user)
    spool.seek(0)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return FileResponse(
        spool,
        as_attachment=True,
        filename=f"{project.slug}-{stamp}.tar.gz",
        content_type="application/gzip",
    )
