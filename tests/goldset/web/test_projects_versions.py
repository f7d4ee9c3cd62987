"""Gold versions, scoring jobs, evaluators, PCS calibrations and release reports are one
project's (issue 27): version numbers count per project, a freeze reads only the project's gold
triples, a member of project A gets 404 for project B's objects (under ``/p/<a>/`` and
unprefixed), cross-project scoring and reports are refused, and the commands take
``--project``."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.models import (
    BlockVersion,
    CalibrationStatus,
    Domain,
    Evaluator,
    GoldVersion,
    ImportJob,
    JobStatus,
    PcsCalibration,
    Project,
    ReleaseReport,
    ScoringJob,
)
from goldset.selectors import exports as export_selectors
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import (
    FreezeFilters,
    NothingToFreeze,
    freeze_gold_version,
    latest_version,
    preview_freeze,
    store_frozen_version,
)
from goldset.services.import_jobs import check_options
from goldset.services.pcs_calibrations import start_pcs_calibration
from goldset.services.projects import grant_role
from goldset.services.pseudonyms import gold_version_scope
from goldset.services.release_reports import create_release_report
from goldset.services.scoring_jobs import create_scoring_job
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    UserFactory,
    default_project,
    gold_row_for,
)
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

SELECTED = {
    "family_weights": [0.3, 0.3, 0.2, 0.2],
    "regulated_family_weights": [0.3, 0.3, 0.2, 0.2],
    "caps": {},
    "thresholds": {},
}


def corpus_in(project: Project, n: int, *, prefix: str) -> list[BlockVersion]:
    """``n`` block versions of ``project``'s own corpus (its own domain and document)."""
    domain = Domain.objects.create(project=project, slug=f"{prefix}_domain", name=prefix)
    document = DocumentFactory(project=project, document_id=f"{prefix}-doc", domain=domain)
    return [
        BlockVersionFactory(
            block=BlockFactory(project=project, block_id=f"{prefix}-blk-{i}", document=document)
        )
        for i in range(n)
    ]


def freeze_rows(project, versions, actor, *, prefix: str):
    rows = [gold_row_for(bv, triple_id=f"{prefix}-Q{i}") for i, bv in enumerate(versions)]
    return store_frozen_version(project=project, rows=rows, actor=actor)


def member(project, role, username):
    """A person who holds ``role`` in ``project`` only (not an installation admin)."""
    user = UserFactory(username=username)
    grant_role(project=project, user=user, role=role)
    return user


@pytest.fixture
def projects():
    alpha = Project.objects.create(name="Alpha", slug="alpha")
    beta = Project.objects.create(name="Beta", slug="beta")
    return alpha, beta


@pytest.fixture
def world(projects):
    """Alpha with v1, Beta with v1 and v2, a succeeded scoring job, an evaluator, a succeeded
    calibration and a release report in Beta; an admin of Alpha (and of the default project,
    for the unprefixed URLs) who is no member of Beta."""
    alpha, beta = projects
    a_admin = member(alpha, Role.ADMIN, "alpha-admin")
    grant_role(project=default_project(), user=a_admin, role=Role.ADMIN)
    b_admin = member(beta, Role.ADMIN, "beta-admin")
    a_blocks = corpus_in(alpha, 3, prefix="a")
    b_blocks = corpus_in(beta, 3, prefix="b")
    a_v1 = freeze_rows(alpha, a_blocks, a_admin, prefix="a")
    b_v1 = freeze_rows(beta, b_blocks[:2], b_admin, prefix="b")
    b_v2 = freeze_rows(beta, b_blocks, b_admin, prefix="b")
    b_job = ScoringJob.objects.create(
        project=beta,
        version=b_v2,
        name="beta-run",
        kind="retrieval",
        run_format="trec",
        run_filename="beta.trec",
        run_sha256="0" * 64,
        run_size=1,
        status=JobStatus.SUCCEEDED,
    )
    b_evaluator = create_evaluator(
        project=beta, name="beta-secret-judge", version="1", kind="llm_judge"
    )
    b_calibration = PcsCalibration.objects.create(
        project=beta,
        name="beta-pcs",
        version=1,
        status=CalibrationStatus.SUCCEEDED,
        selected=SELECTED,
    )
    b_report = ReleaseReport.objects.create(
        project=beta, version=b_v2, run_ids=["beta-run"], report={}, html="<p>beta</p>"
    )
    return {
        "alpha": alpha,
        "beta": beta,
        "a_admin": a_admin,
        "b_admin": b_admin,
        "a_blocks": a_blocks,
        "b_blocks": b_blocks,
        "a_v1": a_v1,
        "b_v1": b_v1,
        "b_v2": b_v2,
        "b_job": b_job,
        "b_evaluator": b_evaluator,
        "b_calibration": b_calibration,
        "b_report": b_report,
    }


def trec_run(versions, *, prefix: str) -> bytes:
    lines = [f"{prefix}-Q{i} Q0 {bv.block.block_id} 1 2.0 s" for i, bv in enumerate(versions)]
    return ("\n".join(lines) + "\n").encode()


# ---------------------------------------------------------------- numbering and freezing


def test_freezing_in_each_project_numbers_its_versions_from_one(projects, admin_user):
    alpha, beta = projects
    a_blocks, b_blocks = corpus_in(alpha, 2, prefix="a"), corpus_in(beta, 3, prefix="b")
    a_v1 = freeze_rows(alpha, a_blocks[:1], admin_user, prefix="a")
    b_v1 = freeze_rows(beta, b_blocks, admin_user, prefix="b")
    a_v2 = freeze_rows(alpha, a_blocks, admin_user, prefix="a")
    assert (a_v1.number, b_v1.number, a_v2.number) == (1, 1, 2)
    assert (a_v1.project, b_v1.project, a_v2.project) == (alpha, beta, alpha)
    assert a_v2.parent == a_v1 and b_v1.parent is None
    assert a_v2.manifest["diff"]["against"] == 1 and a_v2.manifest["project"] == "alpha"
    assert latest_version(project=alpha) == a_v2 and latest_version(project=beta) == b_v1
    assert list(export_selectors.list_versions(project=beta)) == [b_v1]


def test_a_freeze_reads_only_its_projects_gold_triples(projects, team):
    alpha, _ = projects
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    assert preview_freeze(project=default_project(), filters=FreezeFilters()).count == 1
    assert preview_freeze(project=alpha, filters=FreezeFilters()).count == 0
    with pytest.raises(GoldsetError, match="no gold triples"):
        freeze_gold_version(project=alpha, filters=FreezeFilters(), actor=team["admin"])
    assert not GoldVersion.objects.filter(project=alpha).exists()
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    assert version.number == 1 and version.row_count == 1
    with pytest.raises(NothingToFreeze):
        freeze_gold_version(project=default_project(), filters=FreezeFilters(), actor=team["admin"])


def test_the_same_version_number_in_two_projects_has_its_own_pseudonym_scope(world):
    assert world["a_v1"].number == world["b_v1"].number == 1
    assert gold_version_scope(world["a_v1"]) != gold_version_scope(world["b_v1"])


# ---------------------------------------------------------------- pages: 404 for another project's


def b_urls(w) -> list[str]:
    """Every page and download of Beta's objects, by the numbers and ids Beta gave them."""
    job, ev, cal, rep = w["b_job"], w["b_evaluator"], w["b_calibration"], w["b_report"]
    return [
        reverse("exports:version", args=[2]),
        reverse("exports:download", args=[2, "gold_jsonl"]),
        reverse("exports:download", args=[2, "manifest"]),
        reverse("exports:diff") + "?a=1&b=2",
        reverse("exports:job", args=[job.pk]),
        reverse("exports:job_download", args=[job.pk, "csv"]),
        reverse("exports:job_download", args=[job.pk, "bundle"]),
        reverse("evaluators:detail", args=[ev.pk]),
        reverse("evaluators:calibration", args=[cal.pk]),
        reverse("evaluators:release", args=[rep.pk]),
        reverse("evaluators:release_html", args=[rep.pk]),
        reverse("evaluators:release_json", args=[rep.pk]),
    ]


@pytest.mark.parametrize("prefix", ["/p/alpha", ""])
def test_a_member_of_alpha_gets_404_for_every_page_of_betas_objects(client_for, world, prefix):
    client = client_for(world["a_admin"])
    for url in b_urls(world):
        assert client.get(prefix + url).status_code == 404, prefix + url
    for action in ("exports:retry", "exports:cancel"):
        post = client.post(prefix + reverse(action, args=[world["b_job"].pk]))
        assert post.status_code == 404, action
    other = ScoringJob.objects.get(pk=world["b_job"].pk)
    other.pk = None
    other.save()
    compare = client.get(
        prefix + reverse("exports:compare") + f"?jobs={world['b_job'].pk}&jobs={other.pk}"
    )
    assert compare.status_code == 400  # Beta's jobs are unknown here
    assert "beta-run" not in compare.content.decode()


def test_betas_pages_under_betas_prefix_are_404_for_alpha_and_200_for_beta(client_for, world):
    alpha_client, beta_client = client_for(world["a_admin"]), client_for(world["b_admin"])
    for url in b_urls(world):
        assert alpha_client.get("/p/beta" + url).status_code == 404, url
    urls = b_urls(world)
    # (the job, calibration and release report pages need computed results: bare rows here)
    for url in urls[:4] + urls[7:8] + urls[10:]:
        assert beta_client.get("/p/beta" + url).status_code == 200, url


def test_list_pages_show_only_the_projects_own_objects(client_for, world):
    client = client_for(world["a_admin"])
    pages = [
        reverse("exports:versions"),
        reverse("exports:jobs"),
        reverse("evaluators:list"),
        reverse("evaluators:calibrations"),
        reverse("evaluators:releases"),
    ]
    for url in pages:
        response = client.get("/p/alpha" + url)
        assert response.status_code == 200, url
        text = response.content.decode()
        for canary in ("beta-run", "beta-secret-judge", "beta-pcs", "b-Q"):
            assert canary not in text, (url, canary)
    versions = client.get("/p/alpha" + reverse("exports:versions")).content.decode()
    assert "/p/alpha/versions/v1/" in versions and "/p/alpha/versions/v2/" not in versions


def test_alpha_reads_its_own_version_under_its_prefix(client_for, world):
    client = client_for(world["a_admin"])
    page = client.get("/p/alpha" + reverse("exports:version", args=[1]))
    assert page.status_code == 200 and page.context["version"] == world["a_v1"]
    download = client.get("/p/alpha" + reverse("exports:download", args=[1, "gold_jsonl"]))
    assert download.status_code == 200
    body = b"".join(download.streaming_content).decode()
    assert "a-Q0" in body and "b-Q0" not in body


def test_each_role_of_alpha_on_the_version_pages(client_for, world):
    alpha = world["alpha"]
    cases = {
        Role.ANNOTATOR: {"versions": 403, "jobs": 403, "evaluators": 404},
        Role.LEAD: {"versions": 200, "jobs": 403, "evaluators": 404},
        Role.ADMIN: {"versions": 200, "jobs": 200, "evaluators": 200},
    }
    for role, expected in cases.items():
        client = client_for(member(alpha, role, f"alpha-{role.value}"))
        got = {
            "versions": client.get("/p/alpha" + reverse("exports:versions")).status_code,
            "jobs": client.get("/p/alpha" + reverse("exports:jobs")).status_code,
            "evaluators": client.get("/p/alpha" + reverse("evaluators:list")).status_code,
        }
        assert got == expected, role
        # Beta's version is 404 whatever the role in Alpha.
        assert client.get("/p/beta" + reverse("exports:version", args=[1])).status_code == 404


# ---------------------------------------------------------------- cross-project refusals


def test_a_run_of_alpha_cannot_be_scored_against_a_version_or_calibration_of_beta(world):
    alpha_calibration = PcsCalibration.objects.create(
        project=world["alpha"],
        name="alpha-pcs",
        version=1,
        status=CalibrationStatus.SUCCEEDED,
        selected=SELECTED,
    )
    with pytest.raises(CrossProjectReference, match="another project"):
        create_scoring_job(
            version=world["b_v2"],
            name="mixed",
            filename="answers.jsonl",
            actor=world["a_admin"],
            data=b'{"question_id": "b-Q0", "answer": "x"}\n',
            calibration=alpha_calibration,
        )
    # An import into Alpha names versions and calibrations by Alpha's numbers and ids only.
    with pytest.raises(GoldsetError, match="v2 is not frozen"):
        check_options(
            kind="run", actor=world["a_admin"], options={"version": 2}, project=world["alpha"]
        )
    with pytest.raises(GoldsetError, match="no PCS calibration"):
        check_options(
            kind="run",
            actor=world["a_admin"],
            options={"version": 1, "calibration": world["b_calibration"].pk},
            project=world["alpha"],
        )
    assert not ScoringJob.objects.filter(project=world["alpha"]).exists()


def test_a_job_is_created_in_the_version_project(world):
    job = create_scoring_job(
        version=world["b_v1"],
        name="beta-bm25",
        filename="beta.trec",
        actor=world["b_admin"],
        data=trec_run(world["b_blocks"][:2], prefix="b"),
    )
    assert job.project == world["beta"]


def test_alphas_job_form_offers_only_alphas_versions_and_refuses_betas(client_for, world):
    client = client_for(world["a_admin"])
    url = "/p/alpha" + reverse("exports:jobs")
    page = client.get(url)
    versions = [value for value, _ in page.context["form"].fields["version"].choices]
    calibrations = page.context["form"].fields["calibration"].queryset
    assert versions == [str(world["a_v1"].number)] and not calibrations.exists()
    run = io.BytesIO(trec_run(world["b_blocks"], prefix="b"))
    run.name = "beta.trec"
    refused = client.post(url, {"version": 2, "name": "sneaky", "k": 10, "file": run})
    assert refused.status_code == 422
    assert "version" in refused.context["form"].errors
    assert not ScoringJob.objects.filter(name="sneaky").exists()


def test_an_upload_on_betas_page_scores_in_beta(
    client_for, world, django_capture_on_commit_callbacks
):
    client = client_for(world["b_admin"])
    run = io.BytesIO(trec_run(world["b_blocks"][:2], prefix="b"))
    run.name = "beta-upload.trec"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/p/beta" + reverse("exports:jobs"),
            {"version": 1, "name": "beta-up", "k": 10, "file": run},
        )
    assert response.status_code == 302
    assert ImportJob.objects.get(filename="beta-upload.trec").project == world["beta"]
    job = ScoringJob.objects.get(name="beta-up")
    assert job.project == world["beta"] and job.version == world["b_v1"]


def test_a_release_report_cannot_name_another_projects_version_or_calibration(world):
    with pytest.raises(CrossProjectReference, match="another project"):
        create_release_report(project=world["alpha"], version=world["b_v2"], run_ids=["beta-run"])
    with pytest.raises(CrossProjectReference, match="another project"):
        create_release_report(
            project=world["alpha"],
            version=world["a_v1"],
            run_ids=["any"],
            calibration=world["b_calibration"],
        )


def test_the_release_form_refuses_betas_calibration_and_version(client_for, world):
    client = client_for(world["a_admin"])
    response = client.post(
        "/p/alpha" + reverse("evaluators:releases"),
        {"version": 2, "runs": ["beta-run"], "calibration": world["b_calibration"].pk},
    )
    assert response.status_code == 422
    errors = response.context["form"].errors
    assert "version" in errors and "calibration" in errors
    assert not ReleaseReport.objects.filter(project=world["alpha"]).exists()


def test_evaluator_names_and_calibration_versions_count_per_project(world):
    twin = create_evaluator(
        project=world["alpha"], name="beta-secret-judge", version="1", kind="llm_judge"
    )
    assert twin.project == world["alpha"]
    with pytest.raises(GoldsetError, match="already exists"):
        create_evaluator(
            project=world["beta"], name="beta-secret-judge", version="1", kind="metric"
        )
    first = start_pcs_calibration(project=world["alpha"], name="beta-pcs")
    assert (first.project, first.version) == (world["alpha"], 1)
    assert Evaluator.objects.filter(name="beta-secret-judge").count() == 2


def test_alpha_cannot_import_outputs_for_betas_evaluator(world):
    with pytest.raises(GoldsetError, match="no evaluator"):
        check_options(
            kind="evaluator",
            actor=world["a_admin"],
            options={"evaluator": world["b_evaluator"].pk},
            project=world["alpha"],
        )


# ---------------------------------------------------------------- commands take --project


def test_commands_work_in_the_project_named_by_project(world, tmp_path, capsys):
    out = tmp_path / "gold.jsonl"
    call_command(
        "export_gold", "--project", "beta", "--version", "2", "--format", "gold_jsonl", "-o", out
    )
    text = out.read_text()
    assert "b-Q2" in text and "a-Q0" not in text
    with pytest.raises(CommandError, match="no frozen gold version v2 in alpha"):
        call_command("export_gold", "--project", "alpha", "--version", "2", "--format", "manifest")
    with pytest.raises(CommandError, match="[Nn]o project 'gamma'"):
        call_command("export_gold", "--project", "gamma", "--version", "1", "--format", "manifest")
    with pytest.raises(CommandError, match="no gold triples"):
        call_command("freeze_gold", "--project", "alpha")
    capsys.readouterr()
    call_command("calibrate_pcs", "--project", "beta", "--name", "cmd")
    assert PcsCalibration.objects.get(name="cmd").project == world["beta"]
    run = tmp_path / "beta.trec"
    run.write_bytes(trec_run(world["b_blocks"][:2], prefix="b"))
    capsys.readouterr()
    call_command("score_run", str(run), "--project", "beta", "--version", "1", "--name", "cmd")
    job = ScoringJob.objects.get(pk=json.loads(capsys.readouterr().out)["job"])
    assert job.project == world["beta"] and job.version == world["b_v1"]
    with pytest.raises(CommandError, match="v2 in alpha"):
        call_command("score_run", str(run), "--project", "alpha", "--version", "2")
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("")
    with pytest.raises(CommandError, match="no evaluator beta-secret-judge 1"):
        call_command(
            "import_evaluator_outputs",
            str(outputs),
            "--project",
            "alpha",
            "--evaluator",
            "beta-secret-judge",
            "--evaluator-version",
            "1",
        )
    with pytest.raises(CommandError, match="no frozen gold version v2 in alpha"):
        call_command("release_report", "--project", "alpha", "--gold-version", "2", "--run", "x")


def test_commands_default_to_the_default_project(world, tmp_path):
    out = tmp_path / "adjudication.jsonl"
    call_command("export_adjudication", "-o", out)
    assert out.read_text() == ""
    with pytest.raises(CommandError, match="no frozen gold version v1 in default"):
        call_command("export_gold", "--version", "1", "--format", "manifest")


# ---------------------------------------------------------------- the API reads through the same selectors


@pytest.mark.parametrize("prefix", ["/api/v1/projects/alpha", "/api/v1"])
def test_the_api_answers_404_for_betas_versions_and_jobs(client_for, world, prefix):
    client = client_for(world["a_admin"])
    job = world["b_job"].pk
    for path in (
        "/versions/2/",
        "/versions/2/download/gold_jsonl/",
        "/versions/diff/?a=1&b=2",
        f"/jobs/{job}/",
        f"/jobs/{job}/queries/",
    ):
        assert client.get(prefix + path).status_code == 404, prefix + path
    listed = client.get(prefix + "/jobs/").json()
    assert all(row["id"] != job for row in listed["results"])
    own = client.get("/api/v1/projects/beta/versions/2/")
    assert own.status_code == 404  # not a member of Beta
