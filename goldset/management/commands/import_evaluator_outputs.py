from django.core.management.base import CommandError
from django.db import transaction

from goldset.exceptions import GoldsetError
from goldset.management.file_import import EXIT_REJECTED, FileImportCommand
from goldset.management.project_option import add_project_argument, project_from
from goldset.models import Evaluator, EvaluatorKind
from goldset.services.evaluators import create_evaluator, import_evaluator_outputs


class Command(FileImportCommand):
    help = (
        "Import an evaluator's outputs (JSONL: record_id, labels, score, unsafe_probability), "
        "streaming, all or nothing; --create registers the evaluator first. Exit 2 on bad input, "
        "naming line and field."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        add_project_argument(parser)
        parser.add_argument("--evaluator", required=True, help="evaluator name")
        parser.add_argument("--evaluator-version", dest="evaluator_version", required=True)
        parser.add_argument("--create", action="store_true", help="register it if missing")
        parser.add_argument("--kind", choices=EvaluatorKind.values, default="llm_judge")
        parser.add_argument("--model-id", default="")
        parser.add_argument("--prompt-hash", default="")

    def handle(self, *args, file, evaluator, evaluator_version, create, project, **options):
        project = project_from(project, returncode=EXIT_REJECTED)
        found = Evaluator.objects.filter(
            project=project, name=evaluator, version=evaluator_version
        ).first()
        if found is None and not create:
            raise CommandError(
                f"no evaluator {evaluator} {evaluator_version} (use --create to register it)",
                returncode=EXIT_REJECTED,
            )
        # One transaction: an evaluator registered by --create is not kept when its file is
        # rejected (nothing from a rejected file is stored).
        with transaction.atomic():
            if found is None:
                try:
                    found = create_evaluator(
                        project=project,
                        name=evaluator,
                        version=evaluator_version,
                        kind=options["kind"],
                        model_id=options["model_id"],
                        prompt_hash=options["prompt_hash"],
                    )
                except GoldsetError as exc:
                    raise CommandError(str(exc), returncode=EXIT_REJECTED) from exc
            self.run_import(file, import_evaluator_outputs, evaluator=found, actor=None)
