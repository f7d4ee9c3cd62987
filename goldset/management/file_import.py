"""The shape every ``import_*`` command shares: read a UTF-8 file, call one all-or-nothing import
service, print its summary as JSON, or fail with every line-numbered problem."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import ImportRejected


class FileImportCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def run_import(self, file: Path, service, **kwargs) -> None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: cannot read ({exc})") from exc
        try:
            summary = service(text=text, source_name=file.name, **kwargs)
        except ImportRejected as exc:
            raise CommandError(
                f"{file}: rejected, nothing imported:\n" + "\n".join(exc.errors)
            ) from exc
        self.stdout.write(json.dumps(summary.as_dict()))
