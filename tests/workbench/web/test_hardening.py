"""The LOW items of issue 11: NUL bytes, free-text caps, CSV cells, shell-quoted file names,
no-store, session idle/absolute timeouts, the lead who lost the adjudication race; and
``manage.py check --deploy`` stays clean."""

import csv
import io
import os
import secrets
import shlex
import subprocess
import sys
import time
import zipfile

import pytest
from django.urls import reverse

from goldset.exceptions import GoldsetError
from goldset.models import JobStatus, LabelAssignment
from goldset.services.adjudication import record_adjudication
from goldset.services.freeze import store_frozen_version
from goldset.services.job_downloads import bundle_zip, results_csv
from goldset.services.labeling import LabelRuleViolation, claim_next_item, submit_label
from goldset.services.scoring_jobs import create_scoring_job
from goldset.services.text_limits import TextTooLong, check_text_length
from tests.factories import DomainFactory, default_project, gold_row_for, make_gold_corpus
from tests.goldset.answers_helpers import BAD, GOOD, build_conflict_item
from workbench.csv_safety import csv_safe
from workbench.roles import Role

pytestmark = pytest.mark.django_db
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


# ---------------------------------------------------------------- NUL bytes


@pytest.mark.parametrize(
    "url",
    [
        "/corpus/?q=%00",
        "/corpus/?domain=a%00b",
        "/answers/items/abc%00def/",
        "/curation/blocks/?q=%00",
    ],
)
def test_nul_bytes_in_a_query_string_or_path_id_answer_400(client_for, annotator, url):
    assert client_for(annotator).get(url).status_code == 400


# ---------------------------------------------------------------- free-text caps


def test_free_text_is_capped_in_the_services(settings):
    settings.FREE_TEXT_MAX_CHARS = 20_000
    check_text_length("comment", "x" * 20_000)
    with pytest.raises(TextTooLong, match="20,001 characters; at most 20,000"):
        check_text_length("comment", "x" * 20_001)


def test_an_overlong_rationale_is_refused_over_http_and_nothing_stored(client_for, settings):
    settings.FREE_TEXT_MAX_CHARS = 50
    record, (one, _, _) = build_conflict_item(DomainFactory(slug="supply_chain"))
    claim_next_item(annotator=one, project=default_project())
    data = {**BAD, "severe_safety": "yes", "rationale": "r" * 51}
    data = {k: v for k, v in data.items() if v not in ("", [], None)}
    response = client_for(one).post(reverse("answers:item", args=[record.public_id]), data)
    assert response.status_code == 200 and "at most 50 are allowed" in response.content.decode()
    assert not record.labels.exists()


def test_an_overlong_adjudication_rationale_is_a_rule_violation(settings, make_user):
    record = _split_item()
    settings.FREE_TEXT_MAX_CHARS = 10
    with pytest.raises(LabelRuleViolation) as caught:
        record_adjudication(
            lead=make_user(Role.LEAD, username="lead-cap"),
            record=record,
            acceptability="acceptable",
            grounding="fully_grounded",
            rationale="y" * 11,
        )
    assert caught.value.field == "rationale"


# ---------------------------------------------------------------- CSV cells and the bundle


def test_csv_cells_that_start_a_formula_are_neutralised():
    assert [csv_safe(v) for v in ["=1+1", "+A1", "-2", "@SUM", "\tx", "ok", -2.5, 3]] == [
        "'=1+1",
        "'+A1",
        "'-2",
        "'@SUM",
        "'\tx",
        "ok",
        -2.5,
        3,
    ]


@pytest.fixture
def hostile_job(admin_user, django_capture_on_commit_callbacks):
    blocks = make_gold_corpus(4)
    ids = ["=HYPERLINK(1)", "+Q1", "-Q2", "@Q3"]
    version = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=t) for t, bv in zip(ids, blocks, strict=True)],
        actor=admin_user,
    )
    run = "".join(
        f"{t} Q0 {bv.block.block_id} 1 1.0 s\n" for t, bv in zip(ids, blocks, strict=True)
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = create_scoring_job(
            version=version,
            name="hostile",
            data=run.encode(),
            filename="run; rm -rf ~ $(id).trec",
            actor=admin_user,
        )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error if hasattr(job, "error") else job.status
    return job


def test_the_results_csv_writes_no_formula(hostile_job):
    rows = list(csv.reader(io.StringIO(b"".join(results_csv(hostile_job)).decode())))
    first_cells = sorted(r[0] for r in rows[1:])
    assert first_cells == ["'+Q1", "'-Q2", "'=HYPERLINK(1)", "'@Q3"]


def test_the_bundle_readme_shell_quotes_the_run_file_name(hostile_job):
    bundle = zipfile.ZipFile(io.BytesIO(b"".join(bundle_zip(hostile_job))))
    readme = bundle.read("README.txt").decode()
    command = next(line.strip() for line in readme.splitlines() if "python -m scoring" in line)
    argv = shlex.split(command)
    assert argv[argv.index("--run") + 1] == "run; rm -rf ~ $(id).trec"


# ---------------------------------------------------------------- responses and sessions


def test_authenticated_responses_are_no_store_anonymous_login_is_not_cached(
    client, client_for, lead
):
    response = client_for(lead).get(reverse("curation:dashboard"))
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    assert "no-store" in client.get(reverse("login"))["Cache-Control"]


def test_an_idle_session_ends_after_the_idle_timeout(client_for, annotator, settings):
    settings.SESSION_IDLE_TIMEOUT_SECONDS = 1
    c = client_for(annotator)
    assert c.get(reverse("home")).status_code == 200
    session = c.session
    session["_wb_last_seen"] = int(time.time()) - 5
    session.save()
    response = c.get(reverse("home"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_an_active_session_still_ends_at_the_absolute_lifetime(client_for, annotator, settings):
    settings.SESSION_ABSOLUTE_TIMEOUT_SECONDS = 3600
    c = client_for(annotator)
    assert c.get(reverse("home")).status_code == 200
    session = c.session
    session["_wb_started_at"] = int(time.time()) - 3601
    session["_wb_last_seen"] = int(time.time())
    session.save()
    assert c.get(reverse("home")).status_code == 302


def test_an_active_session_writes_its_last_seen_time_at_most_once_per_interval(
    client_for, annotator, settings
):
    settings.SESSION_SEEN_WRITE_SECONDS = 60
    c = client_for(annotator)
    assert c.get(reverse("home")).status_code == 200
    fresh = int(time.time()) - 10
    session = c.session
    session["_wb_last_seen"] = fresh
    session.save()
    assert c.get(reverse("home")).status_code == 200
    assert c.session["_wb_last_seen"] == fresh  # ten seconds old: not written again
    session = c.session
    session["_wb_last_seen"] = int(time.time()) - 61
    session.save()
    before = int(time.time())
    assert c.get(reverse("home")).status_code == 200
    assert c.session["_wb_last_seen"] >= before  # over a minute old: written


def test_session_defaults_are_30_minutes_idle_and_12_hours_absolute():
    from django.conf import settings

    assert settings.SESSION_IDLE_TIMEOUT_SECONDS == 1800
    assert settings.SESSION_ABSOLUTE_TIMEOUT_SECONDS == 12 * 3600
    assert settings.SESSION_COOKIE_AGE == 12 * 3600


def test_the_last_seen_write_interval_is_a_minute_outside_tests():
    code = "from workbench import settings; print(settings.SESSION_SEEN_WRITE_SECONDS)"
    env = {k: v for k, v in os.environ.items() if k != "SESSION_SEEN_WRITE_SECONDS"}
    env.setdefault("SECRET_KEY", "x")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "60", out.stderr


# ---------------------------------------------------------------- the adjudication race


def _split_item():
    record, annotators = build_conflict_item(DomainFactory(slug="federal_it"))
    for i, annotator in enumerate(annotators):
        claim_next_item(annotator=annotator, project=default_project())
        fields = (
            {**GOOD, "rationale": "Handles the conflict."}
            if i
            else {**BAD, "severe_safety": True, "rationale": "Unsafe."}
        )
        submit_label(assignment=LabelAssignment.objects.get(annotator=annotator), **fields)
    record.refresh_from_db()
    return record


def test_the_lead_who_lost_the_race_is_told_it_is_already_adjudicated(client_for, make_user):
    record = _split_item()
    winner, loser = make_user(Role.LEAD, username="lead-w"), make_user(Role.LEAD, username="lead-l")
    url = reverse("answers:adjudicate", args=[record.public_id])
    loser_client = client_for(loser)
    assert loser_client.get(url).status_code == 200  # both opened the item
    record_adjudication(
        lead=winner,
        record=record,
        acceptability="unacceptable",
        grounding="misgrounded",
        primary_failure="stale_source_acceptance",
        rationale="Winner.",
    )
    data = {
        "acceptability": "acceptable",
        "grounding": "fully_grounded",
        "severe_safety": "no",
        "rationale": "Loser.",
    }
    for extra in ({}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "adjudication-form"}):
        response = loser_client.post(url, data, **extra)
        body = response.content.decode()
        assert response.status_code == 200
        assert "This item has already been adjudicated." in body and "Winner." in body
    assert record.adjudication.lead == winner


def test_goldset_errors_stay_catchable():
    assert issubclass(TextTooLong, GoldsetError)


# ---------------------------------------------------------------- deploy checks


def test_manage_py_check_deploy_is_clean():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
    }
    env.pop("DATABASE_URL", None)
    # the session's browser fixture sets it for Playwright's event loop; a deployment never does
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env["WORKBENCH_VAR_DIR"] = os.path.join(ROOT, "var", "check-deploy")
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
