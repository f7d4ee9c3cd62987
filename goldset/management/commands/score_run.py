import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.imports.reader import PathSource
from goldset.imports.runs import checked_run_file
from goldset.management.project_option import add_project_argument, project_from
from goldset.management.version_option import VERSION_HELP, version_from
from goldset.models import ScoringJob
from goldset.rules.measures import BadMeasures, check_measures
from goldset.selectors.evaluators import get_calibration_by_label
from goldset.services.jobs import reconcile
from goldset.services.scoring_jobs import ci_description, create_scoring_job, reproduce_command


class Command(BaseCommand):
    help = (
        "Upload a run (TREC, JSONL or answer log) to score against a frozen version; the job "
        "runs on a worker (or in-process in the embedded default). Prints the job as JSON, with "
        "'ci' (intervals: stratified bootstrap within the triples' domain x task_type strata) "
        "and 'reproduce' (the python -m scoring command that recomputes the figures and "
        "intervals on the job's reproducibility bundle, --strata strata.csv included). "
        "--recover runs one reconciler pass: lost jobs are requeued and pending work is published."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version REF`` names a gold version here, replacing Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("file", type=Path, nargs="?")
        parser.add_argument("--version", dest="ref", help=VERSION_HELP)
        parser.add_argument("--name", default="")
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument(
            "--metrics",
            default="",
            help="comma-separated measures (scoring.retrieval names: map,ndcg@20,P_5,…); "
            "default: the six defaults at --k",
        )
        parser.add_argument("--resamples", type=int, default=None)
        parser.add_argument(
            "--calibration", help="NAME:VERSION of a succeeded PCS calibration (answer logs)"
        )
        parser.add_argument("--recover", action="store_true")

    def handle(
        self,
        *args,
        file,
        ref,
        name,
        k,
        metrics,
        resamples,
        calibration,
        recover,
        project,
        **options,
    ):
        if recover:
            self.stdout.write(json.dumps(reconcile(), default=str))
            return
        if file is None or ref is None:
            raise CommandError("give a run file and --version N, a tag or latest (or --recover)")
        project = project_from(project, returncode=2)
        version = version_from(ref, project=project)
        chosen = get_calibration_by_label(calibration, project=project) if calibration else None
        if calibration and chosen is None:
            raise CommandError(f"no calibration {calibration} (NAME:VERSION)", returncode=2)
        try:
            # No --metrics: the job's defaults (retrieval), or PROBE for an answer log.
            measures = check_measures(metrics, k=k) if metrics else None
        except BadMeasures as exc:
            raise CommandError(f"--metrics: {exc}", returncode=2) from exc
        try:
            with checked_run_file(PathSource(file)) as path, transaction.atomic():
                job = create_scoring_job(
                    version=version,
                    name=name or file.name,
                    path=path,
                    filename=file.name,
                    actor=None,
                    k=k,
                    resamples=resamples,
                    calibration=chosen,
                    metrics=measures,
                )
        except ImportRejected as exc:
            raise CommandError(
                "rejected, no job created:\n" + "\n".join(exc.errors), returncode=2
            ) from exc
        except (OSError, GoldsetError) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        reused = job.reused
        job = ScoringJob.objects.get(pk=job.pk)
        out = {
            "job": job.pk,
            "status": job.status,
            "summary": job.summary,
            "ci": ci_description(job),
            "reproduce": reproduce_command(job),
        }
        if reused:
            out["message"] = (
                f"this run (sha256 {job.run_sha256}) was already uploaded: job {job.pk}"
            )
        self.stdout.write(json.dumps(out))
