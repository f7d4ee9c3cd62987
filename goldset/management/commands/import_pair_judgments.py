from django.core.management.base import CommandError

from goldset.management.file_import import EXIT_REJECTED, FileImportCommand
from goldset.management.project_option import add_project_argument, project_from
from goldset.models import PairwiseTask
from goldset.services.pairwise_imports import import_pair_judgments


class Command(FileImportCommand):
    help = (
        "Import pairwise judgments into a task (JSONL: pair, reviewer, preference, strength, "
        "rationale, left), streaming, all or nothing. Exit 2 on bad input, naming line and field."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        add_project_argument(parser)
        parser.add_argument("--task", required=True, help="the pairwise task's name")

    def handle(self, *args, file, task, project, **options):
        project = project_from(project, returncode=EXIT_REJECTED)
        found = PairwiseTask.objects.filter(project=project, name=task).first()
        if found is None:
            raise CommandError(f"no pairwise task named {task!r}", returncode=EXIT_REJECTED)
        self.run_import(file, import_pair_judgments, task=found, actor=None)
