import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import ImportRejected
from goldset.services.answer_imports import import_answer_logs


class Command(BaseCommand):
    help = (
        "Import JSONL answer logs (any runs and systems); every record is routed (all or nothing)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: cannot read ({exc})") from exc
        try:
            summary = import_answer_logs(text=text, actor=None, source_name=file.name)
        except ImportRejected as exc:
            raise CommandError(
                f"{file}: rejected, nothing imported:\n" + "\n".join(exc.errors)
            ) from exc
        self.stdout.write(json.dumps(summary.as_dict()))
