from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from goldset.management.file_import import EXIT_REJECTED, FileImportCommand
from goldset.management.project_option import add_project_argument, project_from
from goldset.services.triples import import_triples


class Command(FileImportCommand):
    help = (
        "Import gold triples from a gold-JSONL file (all or nothing); they enter review. The "
        "triples are authored by --actor unless an admin passes --on-behalf."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        add_project_argument(parser)
        parser.add_argument(
            "--actor", required=True, help="The importing user (author and audit actor)."
        )
        parser.add_argument(
            "--on-behalf",
            action="store_true",
            help="Admins only: keep each line's metadata.added_by as its author (audited).",
        )

    def handle(self, *args, file, actor, on_behalf, project, **options):
        target = project_from(project, returncode=EXIT_REJECTED)
        user = get_user_model().objects.filter(username=actor).first()
        if user is None:
            raise CommandError(f"--actor: unknown user {actor!r}", returncode=EXIT_REJECTED)
        self.run_import(file, import_triples, project=target, actor=user, on_behalf=on_behalf)
