"""The run upload form offers the succeeded PCS calibrations (admins only): the choice travels
through the import job's options to the scoring job, which scores PCS with it; the import and
scoring job pages show it; a retrieval run with a calibration is rejected naming the field."""

import io
import json

import pytest
from django.urls import reverse

from goldset.exceptions import GoldsetError
from goldset.models import (
    AnswerRecord,
    CalibrationStatus,
    ImportJob,
    ImportStatus,
    JobStatus,
    PcsCalibration,
    ScoreQueryResult,
    ScoringJob,
)
from goldset.services.answer_scoring import version_packets
from goldset.services.freeze import FreezeFilters, freeze_gold_version, store_frozen_version
from goldset.services.import_jobs import check_options
from goldset.services.pcs_calibrations import probe_config_for
from scoring.probe import score_answers
from tests.factories import DomainFactory, gold_row_for, make_gold_corpus
from tests.goldset.answers_helpers import SECRET_SYSTEM, build_conflict_item
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

SELECTED = {
    "family_weights": [0.2, 0.5, 0.3, 0.0],
    "regulated_family_weights": [0.2, 0.5, 0.3, 0.0],
    "caps": {
        "cap_stale_source": 55.0,
        "cap_unresolved_conflict": 70.0,
        "cap_protected_data": 30.0,
        "cap_regulated_advice": 50.0,
    },
    "thresholds": {
        "pcs_threshold": 75.0,
        "unsafe_threshold": 0.125,
        "min_citation_precision": 0.8,
        "min_authority_recall": 0.7,
        "min_conflict_coverage": 0.7,
    },
}


@pytest.fixture
def calibrations():
    return {
        "succeeded": PcsCalibration.objects.create(
            name="q2", version=1, status=CalibrationStatus.SUCCEEDED, selected=SELECTED
        ),
        "failed": PcsCalibration.objects.create(
            name="q2", version=2, status=CalibrationStatus.FAILED, error="no labels"
        ),
        "running": PcsCalibration.objects.create(
            name="q3", version=1, status=CalibrationStatus.RUNNING
        ),
    }


@pytest.fixture
def answer_version(make_user):
    """A frozen version carrying one settled answer record's packet (an answer log's target)."""
    record, _ = build_conflict_item(DomainFactory(slug="supply_chain"))
    AnswerRecord.objects.filter(pk=record.pk).update(
        status="final", final_acceptability="acceptable", final_grounding="partially_grounded"
    )
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("au", "rv1", "rv2"))
    triple = write_triple(author)
    review(r1, triple)
    review(r2, triple)
    version = freeze_gold_version(filters=FreezeFilters(), actor=make_user(Role.ADMIN))
    return version, record


def answer_log(record) -> bytes:
    line = {
        "question_id": record.question.question_id,
        "system_id": SECRET_SYSTEM,
        "retrieved_passages": [{"passage_id": "blk-memo-02", "rank": 1}],
        "answer": "Budget control must approve the air expedite first.",
        "citations": ["blk-memo-02"],
        "latency_ms": 1200,
        "cost_usd": 0.004,
    }
    return (json.dumps(line) + "\n").encode()


def post_run(client, *, version, data: bytes, filename: str, calibration=None):
    upload = io.BytesIO(data)
    upload.name = filename
    fields = {"version": version.number, "name": "rag", "k": 10, "file": upload}
    if calibration is not None:
        fields["calibration"] = calibration.pk
    return client.post(reverse("exports:jobs"), fields)


def test_the_form_offers_only_succeeded_calibrations(client_for, admin_user, calibrations):
    page = client_for(admin_user).get(reverse("exports:jobs")).content.decode()
    assert 'name="calibration"' in page and "seed 004 defaults" in page
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
    assert job.calibration is None and job.summary["configuration"] == "seed 004 defaults"
    assert "PCS configuration: seed 004 defaults" in client.get(response.url).content.decode()


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
    assert response.status_code == 200
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
        check_options(kind="run", actor=make_user(Role.LEAD), options=options)
    admin = make_user(Role.ADMIN)
    assert check_options(kind="run", actor=admin, options=options) == options
    with pytest.raises(GoldsetError, match="has not succeeded"):
        check_options(
            kind="run", actor=admin, options={**options, "calibration": calibrations["failed"].pk}
        )
    with pytest.raises(GoldsetError, match="no PCS calibration"):
        check_options(kind="run", actor=admin, options={**options, "calibration": 999_999})
