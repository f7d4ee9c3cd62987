from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from goldset_client import gate
from goldset_client.cli import add_gate_arguments

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.management.project_option import add_project_argument, project_from
from goldset.services.gate import (
    gate_inputs,
    job_figures,
    resolve_version_ref,
    run_and_wait,
    score_for_gate,
)


class Command(BaseCommand):
    help = (
        "The release gate in this process (no HTTP), with the options of the client's "
        "'goldset gate': score --run against --version (a tag of the project such as "
        "release-2026q4, a number, v7, or latest), wait for the job, "
        "compare it with a baseline (--baseline JOB, or --baseline-system SYSTEM: that system's "
        "latest succeeded job on the version) by the compare page's paired tests (Wilcoxon / "
        "McNemar, Holm), evaluate --rules (one rule a line, e.g. 'ndcg@10 >= 0.60', "
        "'recall@10 not worse than baseline at alpha 0.05', 'unsafe_rate <= 0.02', "
        "'release_gate == pass') and write --markdown, --junit and --json. Prints the JSON "
        "report. Exit 0 when every rule passed, 1 when a rule failed, 2 for bad input."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version REF`` names a gold version here, replacing Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        add_project_argument(parser)
        add_gate_arguments(parser)
        parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait")

    def handle(self, *args, project, version, run, rules, baseline, baseline_system, **options):
        try:
            parsed = gate.load_gate_rules(
                rules, has_baseline=baseline is not None or bool(baseline_system)
            )
        except gate.RulesError as exc:
            raise CommandError(f"bad rules file\n{exc}", returncode=2) from exc
        project = project_from(project, returncode=2)
        try:
            gold = resolve_version_ref(project, version)
            job = score_for_gate(version=gold, run=Path(run), name=options["name"], k=options["k"])
            self.stderr.write(f"scoring job #{job.pk} on v{gold.number} ({job.kind})")
            job = run_and_wait(job=job, timeout=options["timeout"], progress=self._progress)
            inputs = gate_inputs(
                job=job, baseline_job=baseline, baseline_system=baseline_system or ""
            )
        except ImportRejected as exc:
            raise CommandError(
                "the run was rejected, nothing scored:\n" + "\n".join(exc.errors), returncode=2
            ) from exc
        except (OSError, GoldsetError) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        report = gate.evaluate(
            parsed,
            candidate=gate.Figures.from_rows(**job_figures(inputs.job)),
            baseline=gate.Figures.from_rows(**job_figures(inputs.baseline))
            if inputs.baseline is not None
            else None,
            comparison=inputs.comparison,
            version=version,
            baseline_problem=inputs.problem,
        )
        gate.write_outputs(
            report, markdown=options["markdown"], junit=options["junit"], json_path=options["json"]
        )
        self.stdout.write(gate.to_json(report), ending="")
        for line in gate.summary_lines(report):
            self.stderr.write(line)
        if report.exit_code != gate.EXIT_PASSED:
            raise CommandError(f"the gate {report.verdict}", returncode=report.exit_code)

    def _progress(self, job) -> None:
        self.stderr.write(f"scoring: {job.progress}% {job.stage or job.status}")
