"""The release gate in-process (``manage.py gate``, DESIGN.md §17): score a run against a
named gold version and gather what the rules read (the job's figures, the baseline job, their
comparison by the compare page's paired tests), in the shapes the API answers, so the command
evaluates them with the client's evaluator (``goldset_client.gate``, the one rules module both
gates use) and ``manage.py gate`` and ``goldset gate`` give the same verdict on the same jobs.
This module does not import the client: the web app needs only :func:`resolve_version_ref`.

The scoring job is created by the service the API's run upload uses (``create_scoring_job``)
and committed, then run in this process (``run_scoring_job`` claims it unless a worker already
did; then this waits for that worker). Nothing else is written: the gate's verdict is the
caller's output (Markdown, JUnit XML, JSON)."""

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from goldset.exceptions import GoldsetError
from goldset.imports.reader import PathSource
from goldset.imports.runs import checked_run_file
from goldset.models import GoldVersion, JobStatus, ScoringJob
from goldset.selectors.exports import (
    Comparison,
    NotComparable,
    compare_jobs,
    latest_job_of_system,
    release_gate,
)
from goldset.services import version_tags
from goldset.services.scoring_jobs import create_scoring_job, run_scoring_job

LATEST = "latest"
POLL_SECONDS = 0.5
# The job page's "worker" of a job the gate scored itself. No heartbeat, as for any task run
# inside its caller: should a reconciler hand the job to a worker meanwhile, this attempt stops
# writing (its claim is gone) and the gate waits for the worker's result.
IN_PROCESS = "manage.py gate"


REF_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # a number, v7, a tag, latest


class UnknownVersion(GoldsetError):
    """A version reference that names no frozen gold version of the project."""


class BadVersionRef(UnknownVersion):
    """A version reference that is not one at all (not a number, vN or latest)."""


class GateTimeout(GoldsetError):
    """The scoring job did not finish in the time the gate was given."""


def resolve_version_ref(project, ref) -> GoldVersion:
    """The project's frozen gold version named by ``ref``: a number (``7``), ``v7``, a tag of
    the project or ``latest``, as :func:`goldset.services.version_tags.resolve_version` reads
    it (the one reader of version references). :class:`BadVersionRef` for text that cannot
    name a version, :class:`UnknownVersion` for a reference that names none (a number not
    frozen, an unknown tag, nothing frozen yet); the gate, the API's job filter and the CLIs
    call it."""
    text = str(ref).strip()
    if not REF_SHAPE.fullmatch(text):
        raise BadVersionRef(f"a version is a number (7), v7, a tag or 'latest', not {text[:80]!r}")
    try:
        return version_tags.resolve_version(project=project, ref=text)
    except version_tags.UnknownVersion as exc:
        raise UnknownVersion(f"{exc} in {project.slug}") from None


@dataclass
class GateInputs:
    """What a gate's rules read: the finished job, its baseline (None, with ``problem`` saying
    why, when there is none) and their comparison (the API's ``jobs/compare/`` shape)."""

    job: ScoringJob
    baseline: ScoringJob | None
    comparison: dict | None
    problem: str = ""


def score_for_gate(
    *, version: GoldVersion, run: Path, name: str, k: int = 10, actor=None
) -> ScoringJob:
    """Validate and store the run and create its scoring job (committed; the same file again
    on the same version reuses its job), by the service the API's run upload uses. Raises
    ImportRejected (every problem with its line; nothing stored) or GoldsetError."""
    with checked_run_file(PathSource(run)) as path, transaction.atomic():
        return create_scoring_job(
            version=version, name=name or run.name, path=path, filename=run.name, actor=actor, k=k
        )


def run_and_wait(
    *,
    job: ScoringJob,
    timeout: float = 1800.0,
    progress: Callable[[ScoringJob], None] | None = None,
    stop: threading.Event | None = None,
) -> ScoringJob:
    """Run the queued job in this process (a job a worker holds is waited for instead) and
    return it finished; :class:`GateTimeout` after ``timeout`` seconds. Between looks at the
    job it waits on ``stop`` (a caller sets it to end the wait at once), not on the clock."""
    stop = stop or threading.Event()
    deadline = time.monotonic() + timeout
    current = run_scoring_job(job_id=job.pk, worker=IN_PROCESS)
    while True:
        if progress is not None:
            progress(current)
        if current.finished:
            return current
        if time.monotonic() >= deadline:
            raise GateTimeout(f"scoring job #{job.pk} did not finish within {timeout:.0f} s")
        if stop.wait(POLL_SECONDS):
            raise GateTimeout(f"the wait for scoring job #{job.pk} was stopped")
        current = run_scoring_job(job_id=job.pk, worker=IN_PROCESS)  # its worker was lost


def find_baseline(
    *, job: ScoringJob, baseline_job: int | None = None, baseline_system: str = ""
) -> tuple[ScoringJob | None, str]:
    """The baseline of ``job``: the job named (of the project, succeeded, on the same version)
    or the system's latest succeeded job on that version other than ``job``; with the reason
    when there is none."""
    if baseline_job is not None:
        found = (
            ScoringJob.objects.filter(project_id=job.project_id, pk=baseline_job)
            .select_related("version")
            .first()
        )
        if found is None:
            return None, f"there is no scoring job #{baseline_job} in this project"
        if found.status != JobStatus.SUCCEEDED:
            return None, f"baseline job #{found.pk} is {found.status}, not succeeded"
        if found.version_id != job.version_id:
            return None, (
                f"baseline job #{found.pk} was scored on v{found.version.number}, the run on "
                f"v{job.version.number}: a paired test needs the same gold version"
            )
        return found, ""
    if baseline_system:
        found = latest_job_of_system(
            project=job.project, version=job.version, system_id=baseline_system, exclude=job
        )
        if found is None:
            return None, (
                f"system {baseline_system!r} has no other succeeded scoring job on "
                f"v{job.version.number} to compare with"
            )
        return found, ""
    return None, ""


def job_figures(job: ScoringJob) -> dict:
    """A succeeded job's figures as the rules read them (``goldset_client.gate.Figures``'s
    ``from_rows`` arguments): its aggregates and release gate, as the API's job detail has them."""
    return {
        "job_id": job.pk,
        "name": job.name,
        "version": job.version.number,
        "kind": job.kind,
        "rows": list(job.aggregates.values("stratum", "metric", "value")),
        "release_gate": release_gate(job),
    }


def comparison_data(comparison: Comparison) -> dict:
    """A comparison in the API's shape (``jobs/compare/``), which the evaluator reads."""
    return {
        "jobs": [
            {"id": j.pk, "name": j.name, "version": j.version.number} for j in comparison.jobs
        ],
        "metrics": list(comparison.metrics),
        "n_queries": comparison.n_queries,
        "wilcoxon_method": comparison.wilcoxon_method,
        "alpha": comparison.alpha,
        "pairs": [
            {
                "a": p.a.pk,
                "b": p.b.pk,
                "metric": p.metric,
                "mean_a": p.mean_a,
                "mean_b": p.mean_b,
                "test": p.test,
                "statistic": p.statistic,
                "pvalue": p.pvalue,
                "method": p.method,
                "adjusted": p.adjusted,
                "reject": p.reject,
                "wins": p.wins,
                "losses": p.losses,
                "ties": p.ties,
                "n": p.n,
                "reason": p.reason,
            }
            for p in comparison.pairs
        ],
    }


def gate_inputs(
    *, job: ScoringJob, baseline_job: int | None = None, baseline_system: str = ""
) -> GateInputs:
    """The finished ``job``, its baseline and their comparison (the compare page's paired tests
    on the queries both answered). A job that did not succeed is a GoldsetError (the message is
    the job's error); a baseline that cannot be compared is ``problem``."""
    if job.status != JobStatus.SUCCEEDED:
        raise GoldsetError(f"scoring job #{job.pk} {job.status}: {job.error or 'no figures'}")
    baseline, problem = find_baseline(
        job=job, baseline_job=baseline_job, baseline_system=baseline_system
    )
    comparison = None
    if baseline is not None and baseline.pk != job.pk:
        try:
            comparison = comparison_data(compare_jobs(jobs=sorted([baseline, job], key=_pk)))
        except NotComparable as exc:
            problem = str(exc)
    return GateInputs(job=job, baseline=baseline, comparison=comparison, problem=problem)


def _pk(job: ScoringJob) -> int:
    return job.pk
