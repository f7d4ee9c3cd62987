import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.models import Evaluator, EvaluatorKind
from goldset.services.evaluators import create_evaluator, import_evaluator_outputs


class Command(BaseCommand):
    help = (
        "Import an evaluator's outputs (JSONL: record_id, labels, score, unsafe_probability) "
        "all or nothing; --create registers the evaluator first. Exit 2 on bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--evaluator", required=True, help="evaluator name")
        parser.add_argument("--evaluator-version", dest="evaluator_version", required=True)
        parser.add_argument("--create", action="store_true", help="register it if missing")
        parser.add_argument("--kind", choices=EvaluatorKind.values, default="llm_judge")
        parser.add_argument("--model-id", default="")
        parser.add_argument("--prompt-hash", default="")

    def handle(self, *args, file, evaluator, evaluator_version, create, **options):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: cannot read ({exc})", returncode=2) from exc
        found = Evaluator.objects.filter(name=evaluator, version=evaluator_version).first()
        if found is None and not create:
            raise CommandError(
                f"no evaluator {evaluator} {evaluator_version} (use --create to register it)",
                returncode=2,
            )
        try:
            if found is None:
                found = create_evaluator(
                    name=evaluator,
                    version=evaluator_version,
                    kind=options["kind"],
                    model_id=options["model_id"],
                    prompt_hash=options["prompt_hash"],
                )
            batch = import_evaluator_outputs(evaluator=found, text=text, source_name=file.name)
        except ImportRejected as exc:
            raise CommandError(
                f"{file}: rejected, nothing imported:\n" + "\n".join(exc.errors), returncode=2
            ) from exc
        except GoldsetError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(
            json.dumps(
                {"evaluator": str(found), "records": batch.n_records, "sha256": batch.sha256}
            )
        )
