import json

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError
from goldset.management.project_option import add_project_argument, project_from
from goldset.services.pcs_calibrations import start_pcs_calibration


class Command(BaseCommand):
    help = (
        "Queue a PCS calibration (A.7 grid, A.8 objective) as a new version of NAME; a worker "
        "runs it (in the embedded default, in-process). Prints its id, version and status."
    )

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("--name", default="pcs")

    def handle(self, *args, name, project, **options):
        project = project_from(project, returncode=2)
        try:
            calibration = start_pcs_calibration(project=project, name=name)
        except GoldsetError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        calibration.refresh_from_db()
        self.stdout.write(
            json.dumps(
                {
                    "id": calibration.pk,
                    "calibration": calibration.label,
                    "status": calibration.status,
                    "selected": calibration.selected,
                }
            )
        )
