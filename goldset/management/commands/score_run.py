import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from goldset.exceptions import GoldsetError
from goldset.models import GoldVersion, ScoringJob
from goldset.services.scoring_jobs import RunRejected, create_scoring_job, recover_orphaned_jobs
from workbench.celery import app


class Command(BaseCommand):
    help = (
        "Upload a run (TREC, JSONL or answer log) to score against a frozen version; the job "
        "runs on a worker (or in-process in the embedded default). --recover re-queues jobs "
        "of workers that no longer answer."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version N`` names a gold version here, replacing Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, nargs="?")
        parser.add_argument("--version", dest="number", type=int)
        parser.add_argument("--name", default="")
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--resamples", type=int, default=None)
        parser.add_argument("--recover", action="store_true")

    def handle(self, *args, file, number, name, k, resamples, recover, **options):
        if recover:
            alive = {name for reply in app.control.ping(timeout=1.0) for name in reply}
            self.stdout.write(json.dumps({"requeued": recover_orphaned_jobs(alive_workers=alive)}))
            return
        if file is None or number is None:
            raise CommandError("give a run file and --version N (or --recover)")
        version = GoldVersion.objects.filter(number=number, sealed=True).first()
        if version is None:
            raise CommandError(f"there is no frozen gold version v{number}")
        try:
            with transaction.atomic():
                job = create_scoring_job(
                    version=version,
                    name=name or file.name,
                    data=file.read_bytes(),
                    filename=file.name,
                    actor=None,
                    k=k,
                    resamples=resamples,
                )
        except RunRejected as exc:
            raise CommandError("rejected, no job created:\n" + "\n".join(exc.errors)) from exc
        except (OSError, GoldsetError) as exc:
            raise CommandError(str(exc)) from exc
        job = ScoringJob.objects.get(pk=job.pk)
        self.stdout.write(json.dumps({"job": job.pk, "status": job.status, "summary": job.summary}))
