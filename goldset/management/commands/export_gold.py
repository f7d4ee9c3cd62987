import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError
from goldset.management.project_option import add_project_argument, project_from
from goldset.management.version_option import VERSION_HELP, version_from
from goldset.models import ExportFormat
from goldset.services import exports


class Command(BaseCommand):
    help = (
        "Write one file of a project's frozen gold version (checksum verified first) to a file "
        "or stdout."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version REF`` names a gold version here, replacing Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("--version", dest="ref", required=True, help=VERSION_HELP)
        parser.add_argument("--format", dest="fmt", choices=ExportFormat.values, required=True)
        parser.add_argument("--redacted", action="store_true", help="the snippet-free variant")
        parser.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")

    def handle(self, *args, ref, fmt, redacted, output, project, **options):
        project = project_from(project)
        version = version_from(ref, project=project)
        stored = version.files.filter(format=fmt, redacted=redacted).first()
        if stored is None:
            raise CommandError(
                f"{version.label} has no {'redacted ' if redacted else ''}{fmt} file"
            )
        try:
            chunks = exports.verified_chunks(stored)
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        target = output.open("wb") if output else sys.stdout.buffer
        try:
            for chunk in chunks:
                target.write(chunk)
        finally:
            if output:
                target.close()
        self.stderr.write(f"{stored.filename}: {stored.size} bytes, sha256 {stored.sha256}")
