"""Reads for evaluators, the evaluator report, PCS calibrations and release reports.

Evaluator identity (name, version, model id, prompt hash) is reachable by admins only; for anyone
else the identity pages do not exist (404). Leads read the evaluator report with evaluators named
by an opaque label (Evaluator A, B, … in registration order)."""

from string import ascii_uppercase

from django.db.models import Count
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.safestring import mark_safe

from goldset.models import (
    Evaluator,
    EvaluatorReportSnapshot,
    ImportJob,
    ImportKind,
    PcsCalibration,
    ReleaseReport,
)
from scoring.report import bar_chart_svg
from workbench.roles import Role, has_role


def _admin_only(user) -> None:
    if not has_role(user, Role.ADMIN):
        raise Http404("No such page.")


def list_evaluators_for(*, user):
    """Evaluators with their output counts (admins; 404 for anyone else)."""
    _admin_only(user)
    return Evaluator.objects.annotate(n_outputs=Count("outputs")).order_by("name", "version")


def get_evaluator_for(*, project, user, evaluator_id: int) -> Evaluator:
    _admin_only(user)
    return get_object_or_404(Evaluator, project=project, pk=evaluator_id)


def list_evaluator_imports(*, evaluator: Evaluator):
    return evaluator.imports.select_related("imported_by").order_by("-imported_at", "-id")


def list_evaluator_import_jobs(*, evaluator: Evaluator, limit: int = 10) -> list[ImportJob]:
    """The latest import jobs of this evaluator's output files (queued, running or ended)."""
    return list(
        ImportJob.objects.filter(kind=ImportKind.EVALUATOR, options__evaluator=evaluator.pk)
        .select_related("created_by")
        .order_by("-created_at", "-id")[:limit]
    )


def pseudonym(index: int) -> str:
    letters = ascii_uppercase
    name = letters[index % 26] + (str(index // 26) if index >= 26 else "")
    return f"Evaluator {name}"


def evaluator_names(*, user) -> dict[str, str]:
    """``evaluator:<id>`` → the name this user may see (identity for admins, a pseudonym else)."""
    rows = Evaluator.objects.order_by("pk").values_list("pk", "name", "version")
    admin = has_role(user, Role.ADMIN)
    return {
        f"evaluator:{pk}": (f"{name} {version}" if admin else pseudonym(i))
        for i, (pk, name, version) in enumerate(rows)
    }


def get_evaluator_report_for(*, user) -> dict | None:
    """The latest evaluator report with names resolved for ``user`` (None when none exists)."""
    snapshot = EvaluatorReportSnapshot.objects.select_related("created_by").first()
    if snapshot is None:
        return None
    names = evaluator_names(user=user)
    report = snapshot.report

    def name(key: str) -> str:
        return names.get(key, key)

    rows = []
    for row in report["rows"]:
        rows.append({**row, "display": name(row["name"])})
    weeks = [{**w, "display": name(w["evaluator"])} for w in report["weeks"]]
    alerts = [{**w, "display": name(w["evaluator"])} for w in report["alerts"]]
    comparisons = [
        {**c, "display": name(c["name"]), "against_display": name(c["against"])}
        for c in report["comparisons"]
    ]
    return {
        "snapshot": snapshot,
        "rows": rows,
        "human_alpha": report["human_alpha"],
        "comparisons": comparisons,
        "weeks": weeks,
        "alerts": alerts,
        "settings": report["settings"],
        "n_items": report["n_items"],
    }


def list_calibrations():
    return PcsCalibration.objects.select_related("created_by").order_by("-created_at", "-id")


def get_calibration(*, pk: int) -> PcsCalibration:
    return get_object_or_404(PcsCalibration, pk=pk)


def get_calibration_by_label(label: str) -> PcsCalibration | None:
    """The calibration a command names as ``NAME:VERSION`` (e.g. ``q2:1``), or None."""
    name, _, version = label.partition(":")
    if not version.isdigit():
        return None
    return PcsCalibration.objects.filter(name=name, version=int(version)).first()


def list_release_reports():
    return ReleaseReport.objects.select_related("version", "calibration", "created_by").defer(
        "report", "html"
    )


def get_release_report(*, pk: int) -> ReleaseReport:
    return get_object_or_404(
        ReleaseReport.objects.select_related("version", "calibration", "created_by"), pk=pk
    )


def release_report_charts(*, report: ReleaseReport) -> dict:
    """Inline SVG charts for the release report page (labels are escaped by the renderer)."""
    data = report.report
    pcs = bar_chart_svg(
        "Mean PCS with 95 % CI",
        [
            (s["system_id"], s["pcs"]["value"] or 0.0, s["pcs"]["low"], s["pcs"]["high"])
            for s in data["systems"]
        ],
        maximum=100.0,
    )
    failures = bar_chart_svg(
        "Share of unacceptable answers by primary failure",
        [(c.replace("_", " "), v, None, None) for c, v in data["failures"].items()],
        maximum=1.0,
    )
    return {"pcs": mark_safe(pcs), "failures": mark_safe(failures)}
