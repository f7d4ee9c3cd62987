import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from goldset.management.project_option import add_project_argument, project_from
from goldset.services.probe_exports import adjudication_export_rows
from goldset.services.pseudonyms import export_scope
from workbench.services.audit import record_event


class Command(BaseCommand):
    help = (
        "Write a project's adjudication export (one JSON line per finished item) to a file or "
        "stdout."
    )

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument(
            "--output", "-o", type=Path, default=None, help="File (default stdout)."
        )

    def handle(self, *args, output: Path | None, project: str, **options):
        project = project_from(project)
        out = output.open("w", encoding="utf-8") if output else sys.stdout
        count = 0
        try:
            for row in adjudication_export_rows(project=project, scope=export_scope()):
                out.write(json.dumps(row, sort_keys=True) + "\n")
                count += 1
        finally:
            if output:
                out.close()
        record_event(
            actor=None,
            verb="adjudication_exported",
            object_type="export",
            detail={"items": count},
            project=project,
        )
        if output:
            self.stdout.write(f"{count} items written to {output}")
