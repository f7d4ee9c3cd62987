import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import ImportRejected
from goldset.services.corpus import import_corpus


class Command(BaseCommand):
    help = "Import a JSONL document manifest or an Unrag dataset JSON v1 file (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--domain",
            default=None,
            help="Unrag files: domain for documents whose metadata names none.",
        )

    def handle(self, *args, file: Path, domain, **options):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: cannot read ({exc})") from exc
        try:
            summary = import_corpus(
                text=text, actor=None, source_name=file.name, default_domain=domain
            )
        except ImportRejected as exc:
            raise CommandError(
                f"{file}: rejected, nothing imported:\n" + "\n".join(exc.errors)
            ) from exc
        self.stdout.write(json.dumps(summary.as_dict()))
