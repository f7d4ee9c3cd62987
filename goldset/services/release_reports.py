"""Release reports (seed 004 Tables 5, 6, 8, 9 and the release decision) for chosen runs on one
frozen gold version. ``scoring.report`` computes; this module gathers the version's frozen PROBE
packets (checksum verified), the runs' answer records and their settled labels, and stores the
JSON and the self-contained HTML that was reviewed."""

from django.conf import settings
from django.db import transaction

from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.models import AnswerRecord, ExportFormat, GoldVersion, PcsCalibration, ReleaseReport
from goldset.services.answer_scoring import version_packets
from goldset.services.evaluators import FINAL_STATUSES, answer_entry, gold_label
from goldset.services.pcs_calibrations import probe_config_for
from scoring.report import release_report, render_html
from workbench.services.audit import record_event

ARTIFACT_FILES = (
    ("Document manifest", ExportFormat.MANIFEST),
    ("Question file", ExportFormat.PROBE_QUESTIONS),
    ("Evidence packet", ExportFormat.PROBE_PACKETS),
    ("Adjudication export", ExportFormat.ADJUDICATION),
)


def _artifacts(version: GoldVersion) -> dict[str, str]:
    """Table 9 artifacts the frozen version records, with their checksums."""
    files = {f.format: f for f in version.files.filter(redacted=False)}
    return {
        name: f"v{version.number} {files[fmt].get_format_display()} sha256 {files[fmt].sha256}"
        for name, fmt in ARTIFACT_FILES
        if fmt in files
    }


@transaction.atomic
def create_release_report(
    *,
    project,
    version: GoldVersion,
    run_ids: list[str],
    calibration: PcsCalibration | None = None,
    actor=None,
    resamples: int | None = None,
) -> ReleaseReport:
    """Compute and store ``project``'s release report for its runs ``run_ids`` (answers-area
    runs) on its ``version``.

    The version and the calibration must be the project's (:class:`CrossProjectReference`
    otherwise: a report cannot name another project's version or calibration); run ids are the
    project's. Every answer's question must be in the version's PROBE packets (GoldsetError
    otherwise). Scored with the calibration's configuration when one is chosen, else the seed's
    defaults.
    """
    if version.project_id != project.pk:
        raise CrossProjectReference(
            f"gold version v{version.number} belongs to another project; a release report "
            "names a version of its own project"
        )
    if not run_ids:
        raise GoldsetError("choose at least one run")
    config = probe_config_for(calibration, project=project)
    records = list(
        AnswerRecord.objects.filter(project=project, is_calibration=False, run__run_id__in=run_ids)
        .select_related("question__domain", "run__system", "adjudication")
        .prefetch_related("retrieved", "citations", "labels")
        .order_by("pk")
    )
    if not records:
        raise GoldsetError("the chosen runs have no answer records")
    if not version.files.filter(format=ExportFormat.PROBE_PACKETS, redacted=False).exists():
        raise GoldsetError(f"gold version v{version.number} has no PROBE evidence packets")
    packets = version_packets(version)
    known = {p["question_id"] for p in packets}
    missing = sorted({r.question.question_id for r in records} - known)
    if missing:
        raise GoldsetError(
            f"{len(missing)} question(s) are not in gold version v{version.number}: "
            + ", ".join(missing[:5])
        )
    answers = [answer_entry(r) for r in records]
    labels = [
        gold_label(r) for r in records if r.status in FINAL_STATUSES and r.final_acceptability
    ]
    result = release_report(
        packets,
        answers,
        labels,
        config=config,
        calibrated=calibration is not None,
        resamples=resamples or settings.GOLDSET_EVALUATOR_RESAMPLES,
        meta={
            "gold version": f"v{version.number}",
            "runs": ", ".join(sorted(set(run_ids))),
            "configuration": calibration.label if calibration else "PROBE defaults",
            "answer records": len(answers),
            "settled labels": len(labels),
        },
        artifacts={
            **_artifacts(version),
            "Answer log": f"{len(answers)} answer records of {len(set(run_ids))} run(s)",
            "RAG configuration": ", ".join(sorted({r.run.system.system_id for r in records})),
        },
    )
    title = f"Release report — gold version v{version.number}"
    report = ReleaseReport.objects.create(
        project=project,
        version=version,
        run_ids=sorted(set(run_ids)),
        calibration=calibration,
        report=result.to_dict(),
        html=render_html(result, title=title),
        created_by=actor,
    )
    record_event(
        actor=actor,
        verb="release_report_created",
        obj=report,
        detail={"version": version.number, "runs": report.run_ids},
    )
    return report
