from goldset.management.file_import import FileImportCommand
from goldset.services.answer_imports import import_questions


class Command(FileImportCommand):
    help = "Import a JSONL question file with gold evidence packets (all or nothing)."

    def handle(self, *args, file, **options):
        self.run_import(file, import_questions, actor=None)
