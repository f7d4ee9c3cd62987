"""Exports print the settings in force (issue 27): a frozen version's manifest, a release report
and the agreement downloads record the protocol numbers of *their* project — its own values
where it set them, the installation's (the ``settings`` of the installation, never the
environment read again) elsewhere — and a manifest that gains them still verifies."""

import csv
import io
import json

import pytest
from django.core.management import call_command

from goldset.models import CalibrationStatus, ExportFormat, PcsCalibration
from goldset.services import exports
from goldset.services.agreement import ratings_frame, spot_check_frame, store_agreement_snapshots
from goldset.services.freeze import MANIFEST_SETTINGS
from goldset.services.project_settings import update_project_settings
from goldset.services.release_reports import create_release_report
from tests.factories import default_project
from tests.goldset.services.test_agreement import make_ratings
from tests.goldset.services.test_scoring_jobs_answers import frozen  # noqa: F401
from tests.goldset.web.test_projects_versions import (
    SELECTED,
    corpus_in,
    freeze_rows,
    member,
    projects,  # noqa: F401
)
from workbench.roles import Role

pytestmark = pytest.mark.django_db

# Project A's own values: every one differs from the installation default.
A_SETTINGS = {
    "KAPPA_GATE": "0.85",
    "AGREEMENT_ALPHA_TARGET": "0.9",
    "CURATION_SPOT_CHECK_RATE": "0.25",
    "ANSWER_SPOT_CHECK_RATE": "0.3",
    "ANSWER_SPOT_CHECK_SEED": "4242",
    "AUDIT_SAMPLE_RATE": "0.2",
    "AUDIT_SAMPLE_SEED": "77",
    "QUEUE_SHUFFLE_SEED": "1234",
    "GOLD_LABELS_PER_ITEM": "2",
    "TRIAGE_REVIEWS_PER_TRIPLE": "2",
    "LABELING_COST_GOLD": "1.5",
    "FAST_DECISION_SECONDS_TRIAGE": "7",
}
A_VALUES = {
    "KAPPA_GATE": 0.85,
    "AGREEMENT_ALPHA_TARGET": 0.9,
    "CURATION_SPOT_CHECK_RATE": 0.25,
    "ANSWER_SPOT_CHECK_RATE": 0.3,
    "ANSWER_SPOT_CHECK_SEED": 4242,
    "AUDIT_SAMPLE_RATE": 0.2,
    "AUDIT_SAMPLE_SEED": 77,
    "QUEUE_SHUFFLE_SEED": 1234,
    "GOLD_LABELS_PER_ITEM": 2,
    "TRIAGE_REVIEWS_PER_TRIPLE": 2,
    "LABELING_COST_GOLD": 1.5,
    "FAST_DECISION_SECONDS_TRIAGE": 7.0,
}
DEFAULTS = {
    "KAPPA_GATE": 0.70,
    "AGREEMENT_ALPHA_TARGET": 0.75,
    "CURATION_SPOT_CHECK_RATE": 0.10,
    "AUDIT_SAMPLE_RATE": 0.05,
    "AUDIT_SAMPLE_SEED": 9314,
    "QUEUE_SHUFFLE_SEED": 6601,
    "GOLD_LABELS_PER_ITEM": 3,
    "TRIAGE_REVIEWS_PER_TRIPLE": 1,
    "LABELING_COST_GOLD": 0.40,
    "FAST_DECISION_SECONDS_TRIAGE": 2.0,
}


def _succeeded_calibration(project, name="pcs-in-use"):
    return PcsCalibration.objects.create(
        project=project,
        name=name,
        version=1,
        status=CalibrationStatus.SUCCEEDED,
        selected=SELECTED,
    )


def test_a_versions_manifest_records_its_projects_settings_in_force(projects, settings):  # noqa: F811
    alpha, beta = projects
    admin_a, admin_b = member(alpha, Role.ADMIN, "adm-a"), member(beta, Role.ADMIN, "adm-b")
    calibration = _succeeded_calibration(alpha)
    update_project_settings(
        project=alpha,
        changes={**A_SETTINGS, "PCS_CALIBRATION": str(calibration.pk)},
        by=admin_a,
    )
    settings.KAPPA_GATE = 0.65  # the installation's default, changed: B follows it
    a_version = freeze_rows(alpha, corpus_in(alpha, 2, prefix="a"), admin_a, prefix="a")
    b_version = freeze_rows(beta, corpus_in(beta, 2, prefix="b"), admin_b, prefix="b")

    a_in_force = a_version.manifest["settings_in_force"]
    assert list(a_in_force) == list(MANIFEST_SETTINGS)
    for name, value in A_VALUES.items():
        assert a_in_force[name] == {"value": value, "source": "project"}, name
    assert a_in_force["PCS_CALIBRATION"] == {
        "value": calibration.pk,
        "source": "project",
        "calibration": "pcs-in-use v1",
    }
    assert a_in_force["GOLD_REVIEWS_PER_TRIPLE"] == {"value": 2, "source": "installation"}

    b_in_force = b_version.manifest["settings_in_force"]
    assert b_in_force["KAPPA_GATE"] == {"value": 0.65, "source": "installation"}
    for name, value in DEFAULTS.items():
        if name != "KAPPA_GATE":
            assert b_in_force[name] == {"value": value, "source": "installation"}, name
    assert b_in_force["PCS_CALIBRATION"] == {
        "value": 0,
        "source": "installation",
        "calibration": "PROBE defaults",
    }
    assert {entry["source"] for entry in b_in_force.values()} == {"installation"}

    # The manifest file holds the same record and still verifies, as do the rows.
    for version in (a_version, b_version):
        stored = version.files.get(format=ExportFormat.MANIFEST, redacted=False)
        assert stored.sha256 == version.manifest_sha256
        assert json.loads(exports.read_verified_bytes(stored)) == version.manifest
        exports.verify_rows(version)
        assert version.manifest["project"] == version.project.slug  # earlier fields unchanged
        assert version.manifest["agreement"] == {} and version.manifest["seeds"] == {}


def test_export_gold_prints_the_manifest_of_the_named_project(projects, tmp_path):  # noqa: F811
    alpha, beta = projects
    admin_a = member(alpha, Role.ADMIN, "adm-a")
    update_project_settings(project=alpha, changes={"AUDIT_SAMPLE_RATE": "0.2"}, by=admin_a)
    freeze_rows(alpha, corpus_in(alpha, 1, prefix="a"), admin_a, prefix="a")
    freeze_rows(beta, corpus_in(beta, 1, prefix="b"), admin_a, prefix="b")
    rates = {}
    for project in (alpha, beta):
        out = tmp_path / f"{project.slug}.json"
        call_command(
            "export_gold", "--project", project.slug, "--version", "1", "--format", "manifest",
            "-o", out,
        )  # fmt: skip
        rates[project.slug] = json.loads(out.read_text())["settings_in_force"]["AUDIT_SAMPLE_RATE"]
    assert rates == {
        "alpha": {"value": 0.2, "source": "project"},
        "beta": {"value": 0.05, "source": "installation"},
    }


def test_a_release_report_records_the_settings_in_force_of_its_project(frozen, settings):  # noqa: F811
    settings.GOLDSET_EVALUATOR_RESAMPLES = 50
    version, record, admin = frozen
    project = default_project()
    calibration = _succeeded_calibration(project)
    update_project_settings(
        project=project,
        changes={"PCS_CALIBRATION": str(calibration.pk), "GOLD_LABELS_PER_ITEM": "2"},
        by=admin,
    )
    report = create_release_report(
        project=project, version=version, run_ids=[record.run.run_id], actor=admin
    )
    assert report.report["settings_in_force"] == {
        "PCS_CALIBRATION": {
            "value": calibration.pk,
            "source": "project",
            "calibration": "pcs-in-use v1",
        },
        "GOLD_LABELS_PER_ITEM": {"value": 2, "source": "project"},
        "TRIAGE_LABELS_PER_ITEM": {"value": 1, "source": "installation"},
    }
    assert (
        "settings in force: PCS_CALIBRATION pcs-in-use v1 (project), GOLD_LABELS_PER_ITEM 2 "
        "(project), TRIAGE_LABELS_PER_ITEM 1 (installation)"
    ) in report.html

    # Back at the defaults, the next report says so.
    update_project_settings(
        project=project, changes={"PCS_CALIBRATION": None, "GOLD_LABELS_PER_ITEM": None}, by=admin
    )
    again = create_release_report(
        project=project, version=version, run_ids=[record.run.run_id], actor=admin
    )
    assert again.report["settings_in_force"]["PCS_CALIBRATION"] == {
        "value": 0,
        "source": "installation",
        "calibration": "PROBE defaults",
    }
    assert again.report["settings_in_force"]["GOLD_LABELS_PER_ITEM"]["value"] == 3


def _store_figures(project):
    rows = [r for i, w in enumerate(("2026-W45", "2026-W46")) for r in make_ratings(seed=i, n_items=12, week=w)]  # fmt: skip
    store_agreement_snapshots(
        project=project, ratings=ratings_frame(rows), spot_checks=spot_check_frame([]), n_resamples=20
    )  # fmt: skip


def test_the_agreement_downloads_carry_each_projects_thresholds(projects, client_for):  # noqa: F811
    alpha, beta = projects
    lead_a, lead_b = member(alpha, Role.LEAD, "lead-a"), member(beta, Role.LEAD, "lead-b")
    admin_a = member(alpha, Role.ADMIN, "adm-a")
    update_project_settings(
        project=alpha,
        changes={"AGREEMENT_ALPHA_TARGET": "0.9", "KAPPA_GATE": "0.8", "LABELING_COST_GOLD": "1.5"},
        by=admin_a,
    )
    for project in (alpha, beta):
        _store_figures(project)

    def download(user, project, fmt):
        response = client_for(user).get(f"/p/{project.slug}/quality/agreement.{fmt}")
        assert response.status_code == 200
        if fmt == "json":
            return response.json()
        return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))

    a_rows, b_rows = download(lead_a, alpha, "csv"), download(lead_b, beta, "csv")
    assert a_rows and b_rows
    assert {(r["AGREEMENT_ALPHA_TARGET"], r["KAPPA_GATE"]) for r in a_rows} == {("0.9", "0.8")}
    assert {(r["AGREEMENT_ALPHA_TARGET"], r["KAPPA_GATE"]) for r in b_rows} == {("0.75", "0.7")}
    assert {r["AGREEMENT_BOOTSTRAP_SEED"] for r in a_rows + b_rows} == {"8821"}
    a_json = download(lead_a, alpha, "json")
    assert {(r["AGREEMENT_ALPHA_TARGET"], r["AGREEMENT_MIN_ITEMS"]) for r in a_json} == {(0.9, 10)}
    assert all(r["metric"] and "value" in r for r in a_json)  # the figures' columns are still there

    def cost_rows(user, project):
        response = client_for(user).get(f"/p/{project.slug}/quality/workload.json")
        return {
            r["what"]: r["value"] for r in response.json() if r["figure"] == "cost_per_case_usd"
        }

    assert cost_rows(lead_a, alpha) == {"LABELING_COST_GOLD": 1.5, "LABELING_COST_TRIAGE": 0.16}
    assert cost_rows(lead_b, beta) == {"LABELING_COST_GOLD": 0.4, "LABELING_COST_TRIAGE": 0.16}


def test_the_agreement_report_command_prints_the_projects_settings(projects, capsys):  # noqa: F811
    alpha, beta = projects
    admin_a = member(alpha, Role.ADMIN, "adm-a")
    update_project_settings(project=alpha, changes={"KAPPA_GATE": "0.8"}, by=admin_a)
    _store_figures(alpha)
    call_command("agreement_report", "--project", "alpha")
    assert json.loads(capsys.readouterr().out)["settings_in_force"]["KAPPA_GATE"] == {
        "value": 0.8,
        "source": "project",
    }
    call_command("agreement_report", "--project", "beta", "--format", "csv")
    assert list(csv.DictReader(io.StringIO(capsys.readouterr().out))) == []  # B has no figures
    call_command("agreement_report", "--project", "alpha", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {r["KAPPA_GATE"] for r in rows} == {"0.8"}
