"""Issue 24: ``score_run`` and the job page say how the intervals are stratified and print the
exact ``python -m scoring`` command; run on the bundle's files, that command gives the job's
figures and CIs."""

import html
import io
import json
import re
import shlex
import subprocess
import sys
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from goldset.models import JobStatus, ScoreAggregate, ScoringJob
from goldset.services.job_downloads import bundle_zip
from tests.goldset.services.test_scoring_job_measures import trec_run, version  # noqa: F401

pytestmark = pytest.mark.django_db


def _run_command(command, where):
    args = shlex.split(command)
    assert args[:3] == ["python", "-m", "scoring"]
    done = subprocess.run(
        [sys.executable, *args[1:]], cwd=where, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_score_run_and_job_page_print_the_command_that_reproduces_the_cis(
    version,  # noqa: F811
    admin_user,
    client,
    tmp_path,
    django_capture_on_commit_callbacks,
):
    run = tmp_path / "bm25.trec"
    run.write_bytes(trec_run(version, shift=3, skip={"Q-002"}))
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("score_run", str(run), "--version", "1", "--resamples", "500", stdout=out)
    printed = json.loads(out.getvalue())
    job = ScoringJob.objects.get(pk=printed["job"])
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert "--strata strata.csv" in printed["reproduce"]
    assert "--resamples 500 --seed 8821" in printed["reproduce"]
    assert "resampled within domain × task type strata" in printed["ci"]

    client.force_login(admin_user)
    page = client.get(reverse("exports:job", args=[job.pk])).content.decode()
    shown = html.unescape(re.search(r'<code id="job-reproduce">(.*?)</code>', page).group(1))
    assert shown == printed["reproduce"]
    ci_text = html.unescape(re.search(r'<dd id="job-ci">(.*?)</dd>', page, re.S).group(1))
    n_strata = len(job.summary["ci_strata"]["sizes"])
    assert f"within domain × task type strata: {n_strata} strata" in ci_text
    assert n_strata > 1  # the stratification matters: several strata

    bundle = zipfile.ZipFile(io.BytesIO(b"".join(bundle_zip(job))))
    bundle.extractall(tmp_path / "bundle")
    expected = _run_command(shown, tmp_path / "bundle")
    stored = {a.metric: a for a in ScoreAggregate.objects.filter(job=job, stratum="all")}
    assert {m: [a.ci_low, a.ci_high] for m, a in stored.items()} == expected["ci"]
    assert {m: a.value for m, a in stored.items()} == expected["aggregate"]
    # Without --strata the same command gives other intervals: the strata are what reproduces.
    unstratified = _run_command(shown.replace(" --strata strata.csv", ""), tmp_path / "bundle")
    assert unstratified["ci"] != expected["ci"]
