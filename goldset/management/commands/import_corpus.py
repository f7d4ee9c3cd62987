from goldset.management.file_import import EXIT_REJECTED, FileImportCommand
from goldset.management.project_option import add_project_argument, project_from
from goldset.services.corpus import import_corpus


class Command(FileImportCommand):
    help = "Import a JSONL document manifest or an Unrag dataset JSON v1 file (all or nothing)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        add_project_argument(parser)
        parser.add_argument(
            "--domain",
            default=None,
            help="Unrag files: domain for documents whose metadata names none.",
        )

    def handle(self, *args, file, domain, project, **options):
        self.run_import(
            file,
            import_corpus,
            project=project_from(project, returncode=EXIT_REJECTED),
            actor=None,
            default_domain=domain,
        )
