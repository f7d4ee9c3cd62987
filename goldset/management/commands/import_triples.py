import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import ImportRejected
from goldset.services.triples import import_triples


class Command(BaseCommand):
    help = "Import gold triples from a gold-JSONL file (all or nothing); they enter review."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--actor", default=None, help="Username recorded in the audit log.")

    def handle(self, *args, file: Path, actor, **options):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: cannot read ({exc})") from exc
        user = None
        if actor:
            user = get_user_model().objects.filter(username=actor).first()
            if user is None:
                raise CommandError(f"--actor: unknown user {actor!r}")
        try:
            summary = import_triples(text=text, actor=user, source_name=file.name)
        except ImportRejected as exc:
            raise CommandError(
                f"{file}: rejected, nothing imported:\n" + "\n".join(exc.errors)
            ) from exc
        self.stdout.write(json.dumps(summary.as_dict()))
