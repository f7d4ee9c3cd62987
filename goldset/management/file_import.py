"""The shape every ``import_*`` command shares: stream a file through one all-or-nothing import
service (the same the upload pages' jobs use), print its summary as JSON, or exit with status 2
and every problem with its line and field (no traceback)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.imports.reader import PathSource

EXIT_REJECTED = 2


class FileImportCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def run_import(self, file: Path, service, **kwargs) -> None:
        try:
            source = PathSource(file)
        except OSError as exc:
            raise CommandError(f"{file}: cannot read ({exc})", returncode=EXIT_REJECTED) from exc
        if not file.is_file():
            raise CommandError(f"{file}: not a file", returncode=EXIT_REJECTED)
        try:
            summary = service(source=source, source_name=file.name, **kwargs)
        except ImportRejected as exc:
            raise CommandError(
                f"{file}: rejected, nothing imported:\n" + "\n".join(exc.errors),
                returncode=EXIT_REJECTED,
            ) from exc
        except GoldsetError as exc:
            raise CommandError(f"{file}: {exc}", returncode=EXIT_REJECTED) from exc
        self.stdout.write(json.dumps(summary.as_dict()))
