"""Evaluator, evaluator-report, PCS-calibration and release-report pages: every role, blinding,
imports, htmx progress and constant query counts."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import (
    EvaluatorOutput,
    GoldVersion,
    PcsCalibration,
    ReleaseReport,
    default_project_id,
)
from goldset.services.evaluators import (
    compute_evaluator_report,
    create_evaluator,
    import_evaluator_outputs,
)
from goldset.services.version_tags import set_version_tag
from scoring.report import release_report, render_html
from tests.factories import default_project
from tests.goldset.evaluators_helpers import build_gold_tier, copying_outputs, lenient_outputs
from tests.scoring.unit.test_report import _benchmark

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(settings, annotator, lead, admin_user):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 200
    records = build_gold_tier(12)
    secret = create_evaluator(
        project=default_project(),
        name="secret-judge-xyz",
        version="7",
        kind="llm_judge",
        model_id="secret-model-9000",
    )
    other = create_evaluator(
        project=default_project(), name="other-judge", version="1", kind="heuristic"
    )
    import_evaluator_outputs(
        evaluator=secret, source=copying_outputs(records), source_name="s.jsonl"
    )
    import_evaluator_outputs(
        evaluator=other, source=lenient_outputs(records), source_name="o.jsonl"
    )
    compute_evaluator_report(project=default_project())
    calibration = PcsCalibration.objects.create(
        project_id=default_project_id(), name="pcs", version=1
    )
    version = GoldVersion.objects.create(project_id=default_project_id(), number=1)
    questions, answers, labels = _benchmark(6)
    data = release_report(questions, answers, labels, resamples=100)
    report = ReleaseReport.objects.create(
        project_id=version.project_id,
        version=version,
        run_ids=["r1"],
        report=data.to_dict(),
        html=render_html(data),
    )
    return {
        "records": records,
        "secret": secret,
        "calibration": calibration,
        "report": report,
        "users": {"annotator": annotator, "lead": lead, "admin": admin_user},
    }


def _urls(w):
    return {
        "list": reverse("evaluators:list"),
        "detail": reverse("evaluators:detail", args=[w["secret"].pk]),
        "report": reverse("evaluators:report"),
        "report_json": reverse("evaluators:report_json"),
        "calibrations": reverse("evaluators:calibrations"),
        "calibration": reverse("evaluators:calibration", args=[w["calibration"].pk]),
        "releases": reverse("evaluators:releases"),
        "release": reverse("evaluators:release", args=[w["report"].pk]),
        "release_html": reverse("evaluators:release_html", args=[w["report"].pk]),
        "release_json": reverse("evaluators:release_json", args=[w["report"].pk]),
    }


# expected status per role; identity pages are 404 for everyone but admins (hidden like systems)
EXPECTED = {
    "list": {"annotator": 404, "lead": 404, "admin": 200},
    "detail": {"annotator": 404, "lead": 404, "admin": 200},
    "report": {"annotator": 403, "lead": 200, "admin": 200},
    "report_json": {"annotator": 403, "lead": 200, "admin": 200},
    "calibrations": {"annotator": 403, "lead": 403, "admin": 200},
    "calibration": {"annotator": 403, "lead": 403, "admin": 200},
    "releases": {"annotator": 403, "lead": 403, "admin": 200},
    "release": {"annotator": 403, "lead": 403, "admin": 200},
    "release_html": {"annotator": 403, "lead": 403, "admin": 200},
    "release_json": {"annotator": 403, "lead": 403, "admin": 200},
}


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_every_role_on_every_page(world, client, client_for, page):
    url = _urls(world)[page]
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]
    for role, status in EXPECTED[page].items():
        assert client_for(world["users"][role]).get(url).status_code == status, role


def test_lead_sees_the_report_with_evaluators_pseudonymised(world, client_for):
    page = client_for(world["users"]["lead"]).get(reverse("evaluators:report"))
    html = page.content.decode()
    assert "Evaluator A" in html and "Evaluator B" in html
    for secret in ("secret-judge-xyz", "other-judge", "secret-model-9000"):
        assert secret not in html
    assert "trusted" in html and "CI lower bound" in html
    data = client_for(world["users"]["lead"]).get(reverse("evaluators:report_json")).content
    assert b"secret-judge" not in data and b"Evaluator A" in data


def test_admin_sees_evaluator_names_in_the_report(world, client_for):
    html = client_for(world["users"]["admin"]).get(reverse("evaluators:report")).content.decode()
    assert "secret-judge-xyz 7" in html and "Evaluator A" not in html


def test_lead_recomputes_the_report(world, client_for):
    c = client_for(world["users"]["lead"])
    response = c.post(reverse("evaluators:report"))
    assert response.status_code == 302
    assert c.get(reverse("evaluators:report")).context["report"]["n_items"] == 12


def test_admin_imports_outputs_on_the_page_as_a_job_all_or_nothing(
    world, client_for, django_capture_on_commit_callbacks
):
    c = client_for(world["users"]["admin"])
    url = reverse("evaluators:detail", args=[world["secret"].pk])
    before = EvaluatorOutput.objects.count()
    bad = SimpleUploadedFile("bad.jsonl", b'{"record_id": "nope", "score": 2}\n')
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(url, {"file": bad})
    assert response.status_code == 302  # to the job's page: the worker rejected it
    page = c.get(response.url)
    html = page.content.decode()
    assert page.status_code == 422 and "nothing was imported" in html
    assert "line 1: score: got 2 (expected a number between 0 and 1)" in html
    assert EvaluatorOutput.objects.count() == before
    good_line = json.dumps({"record_id": world["records"][0].public_id, "score": 0.3})
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(url, {"file": SimpleUploadedFile("g.jsonl", good_line.encode())})
    assert response.status_code == 302
    assert c.get(response.url).status_code == 200
    assert (
        EvaluatorOutput.objects.get(evaluator=world["secret"], record=world["records"][0]).score
        == 0.3
    )


def test_admin_registers_an_evaluator_and_a_duplicate_rerenders_with_the_error(world, client_for):
    c = client_for(world["users"]["admin"])
    data = {"name": "new-judge", "version": "1", "kind": "metric"}
    assert c.post(reverse("evaluators:list"), data).status_code == 302
    again = c.post(reverse("evaluators:list"), data)
    assert again.status_code == 422 and "already exists" in again.content.decode()


def test_calibration_progress_partial_for_htmx(world, client_for):
    c = client_for(world["users"]["admin"])
    url = reverse("evaluators:calibration", args=[world["calibration"].pk])
    partial = c.get(url, headers={"HX-Request": "true", "HX-Target": "calibration-progress"})
    body = partial.content.decode()
    assert body.lstrip().startswith('<section id="calibration-progress"')
    assert 'hx-trigger="every 1s"' in body and "<html" not in body
    full = c.get(url).content.decode()
    assert "<html" in full and 'id="calibration-progress"' in full


def test_admin_starts_a_calibration_from_the_page(world, client_for):
    c = client_for(world["users"]["admin"])
    response = c.post(reverse("evaluators:calibrations"), {"name": "pcs"})
    created = PcsCalibration.objects.get(name="pcs", version=2)
    assert response.status_code == 302 and response["Location"].endswith(f"/{created.pk}/")


def test_release_report_page_and_downloads(world, client_for):
    c = client_for(world["users"]["admin"])
    pk = world["report"].pk
    page = c.get(reverse("evaluators:release", args=[pk])).content.decode()
    assert page.count("<svg") == 2 and "Table 5" in page and "McNemar" in page
    html = c.get(reverse("evaluators:release_html", args=[pk]))
    assert "attachment" in html["Content-Disposition"]
    assert html.content.decode().startswith("<!DOCTYPE html>")
    data = json.loads(c.get(reverse("evaluators:release_json", args=[pk])).content)
    assert {s["system_id"] for s in data["systems"]} == {"good", "bad"}


@pytest.mark.parametrize("n", [2, 30])
def test_list_pages_query_count_is_constant(world, client_for, django_assert_max_num_queries, n):
    for i in range(n):
        create_evaluator(project=default_project(), name=f"judge-{i}", version="1", kind="metric")
        PcsCalibration.objects.create(project_id=default_project_id(), name=f"c{i}", version=1)
        ReleaseReport.objects.create(
            project_id=world["report"].version.project_id,
            version=world["report"].version,
            run_ids=[],
            report=world["report"].report,
            html="",
        )
    c = client_for(world["users"]["admin"])
    for name in ("evaluators:list", "evaluators:calibrations", "evaluators:releases"):
        with django_assert_max_num_queries(10):
            assert c.get(reverse(name)).status_code == 200
    lead = client_for(world["users"]["lead"])
    with django_assert_max_num_queries(8):
        assert lead.get(reverse("evaluators:report")).status_code == 200


def test_the_release_report_form_takes_a_tag_as_it_takes_a_number(world, client_for):
    c = client_for(world["users"]["admin"])
    version = world["report"].version
    GoldVersion.objects.filter(pk=version.pk).update(sealed=True)
    set_version_tag(project=default_project(), actor=world["users"]["admin"], name="rc",
                    version=GoldVersion.objects.get(pk=version.pk))  # fmt: skip
    assert "rc → v1" in c.get(reverse("evaluators:releases")).content.decode()
    run = world["records"][0].run.run_id
    response = c.post(reverse("evaluators:releases"), {"version": "rc", "runs": [run]})
    # the tag named v1, which reached the service (whose rule refuses it: no PROBE packets)
    assert "gold version v1 has no PROBE evidence packets" in response.content.decode()
    unknown = c.post(reverse("evaluators:releases"), {"version": "nope", "runs": [run]})
    assert "no gold version is tagged &#x27;nope&#x27;" in unknown.content.decode()
    assert ReleaseReport.objects.count() == 1


def test_a_version_without_probe_packets_rerenders_the_form_with_the_reason(world, client_for):
    c = client_for(world["users"]["admin"])
    GoldVersion.objects.filter(pk=world["report"].version_id).update(sealed=True)
    run = world["records"][0].run.run_id
    response = c.post(reverse("evaluators:releases"), {"version": "1", "runs": [run]})
    assert response.status_code == 422  # refused: the form again, with the reason
    assert "gold version v1 has no PROBE evidence packets" in response.content.decode()
    assert ReleaseReport.objects.count() == 1
