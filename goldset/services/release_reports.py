"""Release reports (seed 004 Tables 5, 6, 8, 9 and the release decision) for chosen runs on one
frozen gold version. ``scoring.report`` computes; this module gathers the version's frozen PROBE
packets (checksum verified), the runs' answer records and their settled labels, and stores the
JSON and the self-contained HTML that was reviewed."""

from django.conf import settings
from django.db import transaction
from django.template.loader import render_to_string

from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.models import (
    AnswerRecord,
    ExportFormat,
    GoldVersion,
    PairwiseTask,
    PcsCalibration,
    ReleaseReport,
)
from goldset.selectors.pairwise import release_analysis_data
from goldset.services.answer_scoring import version_packets
from goldset.services.evaluators import FINAL_STATUSES, answer_entry, gold_label
from goldset.services.pcs_calibrations import probe_config_for
from goldset.services.project_settings import settings_in_force, settings_in_force_text
from scoring.pairwise import agreement_with_decision
from scoring.report import release_report, render_html
from workbench.services.audit import record_event

ARTIFACT_FILES = (
    ("Document manifest", ExportFormat.MANIFEST),
    ("Question file", ExportFormat.PROBE_QUESTIONS),
    ("Evidence packet", ExportFormat.PROBE_PACKETS),
    ("Adjudication export", ExportFormat.ADJUDICATION),
    ("Pairwise gold", ExportFormat.PAIRWISE_GOLD),
)


# The project's protocol numbers a release report records (``settings_in_force``): the PCS
# calibration in use when none is chosen, and how many labels settle an answer record (the
# settled labels its Table 8 compares with).
REPORT_SETTINGS = ("PCS_CALIBRATION", "GOLD_LABELS_PER_ITEM", "TRIAGE_LABELS_PER_ITEM")


class PairwiseVersionMismatch(GoldsetError):
    """The pairwise task compares another gold version's questions than the report's: refused
    (a report's figures are all on one version). ``field`` names the input at fault."""

    field = "pairwise_task"


def check_pairwise_version(task: PairwiseTask, version: GoldVersion) -> None:
    """Refuse a pairwise task whose gold version is not ``version`` (PairwiseVersionMismatch).
    A task that names no gold version is accepted; its section says so
    (:func:`pairwise_section`)."""
    if task.gold_version_id is None or task.gold_version_id == version.pk:
        return
    raise PairwiseVersionMismatch(
        f"pairwise task {task.name!r} compares the questions of gold version "
        f"v{task.gold_version.number}, but this report is on v{version.number}: choose a "
        f"pairwise task on v{version.number} (or none)"
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
    pairwise_task: PairwiseTask | None = None,
) -> ReleaseReport:
    """Compute and store ``project``'s release report for its runs ``run_ids`` (answers-area
    runs) on its ``version``.

    The version and the calibration must be the project's (:class:`CrossProjectReference`
    otherwise: a report cannot name another project's version or calibration); run ids are the
    project's. Every answer's question must be in the version's PROBE packets (GoldsetError
    otherwise). Scored with the calibration's configuration when one is chosen, else the seed's
    defaults. The report records the project's settings in force (``REPORT_SETTINGS``: the JSON's
    ``settings_in_force``, a line of the HTML's header).

    With ``pairwise_task`` (the project's), the report gains a pairwise section beside Table 5
    (:func:`pairwise_section`): the task's ranking, win rates with CIs, agreement and position
    bias, and whether they agree with the PCS decision. A task on another gold version than
    ``version`` is refused (:func:`check_pairwise_version`); a task that names none is taken,
    and its section states that its pairs are not tied to the report's version.
    """
    if pairwise_task is not None and pairwise_task.project_id != project.pk:
        raise CrossProjectReference(
            "a release report compares a pairwise task of its own project only"
        )
    if version.project_id != project.pk:
        raise CrossProjectReference(
            f"gold version v{version.number} belongs to another project; a release report "
            "names a version of its own project"
        )
    if pairwise_task is not None:
        check_pairwise_version(pairwise_task, version)
    if not run_ids:
        raise GoldsetError("choose at least one run")
    config = probe_config_for(calibration, project=project)
    records = list(
        AnswerRecord.objects.filter(project=project, is_calibration=False, run__run_id__in=run_ids)
        .select_related("question__domain", "run__system", "adjudication")
        .prefetch_related("retrieved", "unmatched_passages", "citations", "labels")
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
    in_force = settings_in_force(project=project, names=REPORT_SETTINGS)
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
            "settings in force": settings_in_force_text(in_force),
        },
        artifacts={
            **_artifacts(version),
            "Answer log": f"{len(answers)} answer records of {len(set(run_ids))} run(s)",
            "RAG configuration": ", ".join(sorted({r.run.system.system_id for r in records})),
        },
    )
    title = f"Release report — gold version v{version.number}"
    data = result.to_dict()
    data["settings_in_force"] = in_force
    html = render_html(result, title=title)
    if pairwise_task is not None:
        data["pairwise"] = pairwise_section(pairwise_task, systems=data["systems"], version=version)
        section = render_to_string(
            "evaluators/_release_pairwise.html", {"pairwise": data["pairwise"]}
        )
        html = html.replace("</body>", section + "</body>", 1)
    report = ReleaseReport.objects.create(
        project=project,
        version=version,
        run_ids=sorted(set(run_ids)),
        calibration=calibration,
        report=data,
        html=html,
        created_by=actor,
    )
    record_event(
        actor=actor,
        verb="release_report_created",
        obj=report,
        detail={
            "version": version.number,
            "runs": report.run_ids,
            "pairwise_task": pairwise_task.pk if pairwise_task else None,
        },
    )
    return report


def _version_note(task: PairwiseTask, version: GoldVersion | None) -> str:
    if task.gold_version_id is None:
        held = f", which {version.label} may not all hold" if version is not None else ""
        return (
            "The pairwise task names no gold version: its pairs are drawn from the runs' shared "
            f"questions{held}."
        )
    return f"The pairwise task compares the questions of gold version {task.gold_version.label}."


def pairwise_section(
    task: PairwiseTask, *, systems: list[dict], version: GoldVersion | None = None
) -> dict:
    """The release report's pairwise section: the task's analysis (systems by id, as Table 5),
    its gold version (and a note when it names none) and the decision rule's pairwise clause
    (``scoring.pairwise.agreement_with_decision``) against Table 5's decisions."""
    analysis = release_analysis_data(task)
    versioned = {
        "gold_version": task.gold_version.label if task.gold_version_id else None,
        "version_note": _version_note(task, version),
    }
    if analysis is None:
        return {
            "task": task.name,
            **versioned,
            "analysis": None,
            "agrees": None,
            "statement": "The pairwise task has no judgments yet: nothing to compare.",
            "conflicts": [],
        }
    verdict = agreement_with_decision(
        {row["system"]: row["strength"] for row in analysis["ranking"]},
        {s["system_id"]: bool(s["release"]) for s in systems},
        {s["system_id"]: (s.get("pcs") or {}).get("value") for s in systems},
    )
    return {
        "task": task.name,
        **versioned,
        "analysis": analysis,
        "agrees": verdict.agrees,
        "statement": verdict.statement,
        "compared": verdict.compared,
        "conflicts": [list(c) for c in verdict.conflicts],
    }
