from goldset.management.file_import import FileImportCommand
from goldset.services.answer_imports import import_answer_logs


class Command(FileImportCommand):
    help = (
        "Import JSONL answer logs (any runs and systems); every record is routed (all or nothing)."
    )

    def handle(self, *args, file, **options):
        self.run_import(file, import_answer_logs, actor=None)
