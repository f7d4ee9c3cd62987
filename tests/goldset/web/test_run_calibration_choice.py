"""The run upload form offers the succeeded PCS calibrations (admins only): the choice travels
through the import job's options to the scoring job, which scores PCS with it; the import and
scoring job pages show it; a retrieval run with a calibration is rejected naming the field."""

import io
import json

import pytest
from django.urls import reverse

from goldset.exceptions import GoldsetError
from goldset.models import (
    ImportJob,
    ImportStatus,
    JobStatus,
    ScoreQueryResult,
    ScoringJob,
)
from goldset.services.answer_scoring import version_packets
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import check_options
from goldset.services.pcs_calibrations import probe_config_for
from scoring.probe import score_answers
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.goldset.run_calibration_support import (
    answer_log,
    make_answer_version,
    make_calibrations,
)
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def calibrations():
    return make_calibrations()


@pytest.fixture
def answer_version(make_user):
    return make_answer_version(make_user)


def post_run(client, *, version, data: bytes, filename: str, calibration=None):
    upload = io.BytesIO(data)
    upload.name = filename
    fields = {"version": version.number, "name": "rag", "k": 10, "file": upload}
    if calibration is not None:
        fields["calibration"] = calibration.pk
    return client.post(reverse("exports:jobs"), fields)


def test_the_form_offers_only_succeeded_calibrations(client_for, admin_user, calibrations):
    page = client_for(admin_user).get(reverse("exports:jobs")).content.decode()
    assert 'name="calibration"' in page and "PROBE defaults" in page
    assert f'value="{calibrations["succeeded"].pk}">q2 v1<' in page
    assert f'value="{calibrations["failed"].pk}"' not in page
    assert f'value="{calibrations["running"].pk}"' not in page


def test_an_answer_log_uploaded_with_a_calibration_is_scored_with_it(
    client_for, admin_user, calibrations, answer_version, django_capture_on_commit_callbacks
):
    version, record = answer_version
    calibration = calibrations["succeeded"]
    client = client_for(admin_user)
    log = answer_log(record)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_run(
            client, version=version, data=log, filename="answers.jsonl", calibration=calibration
        )
    imported = ImportJob.objects.get()
    assert response.status_code == 302 and response.url == reverse(
        "imports:job", args=[imported.pk]
    )
    assert imported.status == ImportStatus.SUCCEEDED, imported.message
    assert imported.options["calibration"] == calibration.pk
    assert imported.summary["calibration"] == "q2 v1"
    job = ScoringJob.objects.get(pk=imported.summary["scoring_job"])
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.calibration == calibration and job.summary["configuration"] == "q2 v1"
    # the stored PCS is the calibrated one, not the default
    packets = version_packets(version)
    labels = job.summary["label_records"]
    calibrated = score_answers(
        packets, [json.loads(log)], labels=labels, config=probe_config_for(calibration)
    )
    default = score_answers(packets, [json.loads(log)], labels=labels)
    stored = ScoreQueryResult.objects.get(job=job).metrics["final_pcs"]
    assert stored == calibrated.answers[0].final_pcs
    assert calibrated.answers[0].raw_pcs != default.answers[0].raw_pcs
    # both job pages say which configuration was used
    import_page = client.get(response.url).content.decode()
    assert "PCS configuration: q2 v1" in import_page
    job_page = client.get(reverse("exports:job", args=[job.pk])).content.decode()
    assert "PCS configuration: q2 v1" in job_page


def test_without_a_choice_the_defaults_score_and_the_pages_say_so(
    client_for, admin_user, calibrations, answer_version, django_capture_on_commit_callbacks
):
    version, record = answer_version
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_run(client, version=version, data=answer_log(record), filename="a.jsonl")
    imported = ImportJob.objects.get()
    assert "calibration" not in imported.options
    job = ScoringJob.objects.get()
    assert job.calibration is None and job.summary["configuration"] == "PROBE defaults"
    assert "PCS configuration: PROBE defaults" in client.get(response.url).content.decode()


def test_a_retrieval_run_with_a_calibration_is_rejected_naming_the_field(
    client_for, admin_user, calibrations, django_capture_on_commit_callbacks
):
    blocks = make_gold_corpus(2)
    version = store_frozen_version(
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)],
        actor=admin_user,
    )
    run = "".join(f"Q-{i} Q0 {bv.block.block_id} 1 2.0 s\n" for i, bv in enumerate(blocks))
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_run(
            client,
            version=version,
            data=run.encode(),
            filename="run.trec",
            calibration=calibrations["succeeded"],
        )
    page = client.get(response.url)
    body = page.content.decode()
    assert page.status_code == 422
    assert "calibration: a PCS calibration applies to answer logs only" in body
    assert ImportJob.objects.get().status == ImportStatus.REJECTED
    assert not ScoringJob.objects.exists()


def test_a_calibration_that_has_not_succeeded_is_refused_by_the_form(
    client_for, admin_user, calibrations, answer_version
):
    version, record = answer_version
    response = post_run(
        client_for(admin_user),
        version=version,
        data=answer_log(record),
        filename="a.jsonl",
        calibration=calibrations["failed"],
    )
    assert response.status_code == 422  # a refused upload form (issue 24)
    assert "Select a valid choice" in response.content.decode()
    assert not ImportJob.objects.exists() and not ScoringJob.objects.exists()


@pytest.mark.parametrize(
    ("role", "status"), [("anonymous", 302), ("annotator", 403), ("lead", 403), ("admin", 200)]
)
def test_only_admins_reach_the_upload_form(role, status, make_user, client, client_for):
    c = client if role == "anonymous" else client_for(make_user(getattr(Role, role.upper())))
    assert c.get(reverse("exports:jobs")).status_code == status


def test_the_service_allows_only_admins_and_only_succeeded_calibrations(
    make_user, calibrations, answer_version
):
    version, _ = answer_version
    options = {"version": version.number, "calibration": calibrations["succeeded"].pk}
    with pytest.raises(GoldsetError, match="Only an admin"):
        check_options(
            project=default_project(), kind="run", actor=make_user(Role.LEAD), options=options
        )
    admin = make_user(Role.ADMIN)
    assert (
        check_options(project=default_project(), kind="run", actor=admin, options=options)
        == options
    )
    with pytest.raises(GoldsetError, match="has not succeeded"):
        check_options(
            project=default_project(),
            kind="run",
            actor=admin,
            options={**options, "calibration": calibrations["failed"].pk},
        )
    with pytest.raises(GoldsetError, match="no PCS calibration"):
        check_options(
            project=default_project(),
            kind="run",
            actor=admin,
            options={**options, "calibration": 999_999},
        )
