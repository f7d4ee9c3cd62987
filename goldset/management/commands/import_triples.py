from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from goldset.management.file_import import FileImportCommand
from goldset.services.triples import import_triples


class Command(FileImportCommand):
    help = "Import gold triples from a gold-JSONL file (all or nothing); they enter review."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--actor", default=None, help="Username recorded in the audit log.")

    def handle(self, *args, file, actor, **options):
        user = None
        if actor:
            user = get_user_model().objects.filter(username=actor).first()
            if user is None:
                raise CommandError(f"--actor: unknown user {actor!r}")
        self.run_import(file, import_triples, actor=user)
