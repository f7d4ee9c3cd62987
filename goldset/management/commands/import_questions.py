from goldset.management.file_import import EXIT_REJECTED, FileImportCommand
from goldset.management.project_option import add_project_argument, project_from
from goldset.services.answer_imports import import_questions


class Command(FileImportCommand):
    help = "Import a JSONL question file with gold evidence packets (all or nothing)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        add_project_argument(parser)

    def handle(self, *args, file, project, **options):
        project = project_from(project, returncode=EXIT_REJECTED)
        self.run_import(file, import_questions, actor=None, project=project)
