import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError
from goldset.management.project_option import add_project_argument, project_from
from goldset.management.version_option import VERSION_HELP, version_from
from goldset.models import PairwiseTask
from goldset.selectors.evaluators import get_calibration_by_label
from goldset.services.release_reports import create_release_report


class Command(BaseCommand):
    help = (
        "Write the release report (Tables 5, 6, 8, 9, decisions, paired tests) for runs on a "
        "frozen gold version: JSON on stdout, --html FILE for the self-contained page."
    )

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("--gold-version", dest="ref", required=True, help=VERSION_HELP)
        parser.add_argument("--run", action="append", dest="runs", required=True)
        parser.add_argument("--calibration", help="NAME:VERSION of a succeeded PCS calibration")
        parser.add_argument("--html", type=Path)
        parser.add_argument("--resamples", type=int)
        parser.add_argument(
            "--pairwise-task",
            dest="pairwise_task",
            help="name of a pairwise task to set beside Table 5",
        )

    def handle(
        self, *args, ref, runs, calibration, html, resamples, project, pairwise_task, **options
    ):
        project = project_from(project, returncode=2)
        version = version_from(ref, project=project, returncode=2)
        chosen = None
        if calibration:
            chosen = get_calibration_by_label(calibration, project=project)
            if chosen is None:
                raise CommandError(f"no calibration {calibration} (NAME:VERSION)", returncode=2)
        task = None
        if pairwise_task:
            task = PairwiseTask.objects.filter(project=project, name=pairwise_task).first()
            if task is None:
                raise CommandError(f"no pairwise task named {pairwise_task!r}", returncode=2)
        try:
            report = create_release_report(
                project=project,
                version=version,
                run_ids=runs,
                calibration=chosen,
                resamples=resamples,
                pairwise_task=task,
            )
        except GoldsetError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        if html:
            html.write_text(report.html, encoding="utf-8")
        self.stdout.write(json.dumps({"id": report.pk, **report.report}))
