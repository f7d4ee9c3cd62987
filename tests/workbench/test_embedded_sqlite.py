"""The embedded default on a real SQLite file (not :memory:), in its own process with the
installation's settings (``tests/workbench/embedded_scenario.py``): WAL and the busy timeout are
in force; labels submitted from two threads at the same moments, with the background runner
writing agreement figures beside them, all succeed (no "database is locked"); and a label
submit's response is back while the agreement recompute it asked for has not run yet — it runs
afterwards, in the background runner."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _environment(var_dir: Path) -> dict:
    """The embedded default: no DATABASE_URL and no REDIS_URL; the test client's host allowed
    and plain HTTP; recomputes due at once (no debounce window) so the order is what is tested."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONHASHSEED")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        SECRET_KEY="embedded-scenario-secret-key",
        WORKBENCH_VAR_DIR=str(var_dir),
        DJANGO_SETTINGS_MODULE="workbench.settings",
        ALLOWED_HOSTS="testserver",
        SECURE_SSL_REDIRECT="false",
        AGREEMENT_DEBOUNCE_SECONDS="0",
        LOG_LEVEL="WARNING",
    )
    return env


def _run(args, env, *, timeout):
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """A migrated embedded database file, made once for the module and copied per test."""
    var_dir = tmp_path_factory.mktemp("embedded-template")
    result = _run(["manage.py", "migrate", "-v0"], _environment(var_dir), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return var_dir / "db.sqlite3"


@pytest.fixture(scope="module")
def scenario(migrated, tmp_path_factory) -> dict:
    var_dir = tmp_path_factory.mktemp("embedded")
    shutil.copy(migrated, var_dir / "db.sqlite3")
    result = _run(["-m", "tests.workbench.embedded_scenario"], _environment(var_dir), timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    [line] = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    seen = json.loads(line.removeprefix("RESULT "))
    seen["stderr"] = result.stderr
    seen["var_dir"] = str(var_dir)
    return seen


def test_the_embedded_default_is_a_sqlite_file_in_wal_mode_with_a_busy_timeout(scenario):
    assert scenario["vendor"] == "sqlite"
    assert scenario["database"] == str(Path(scenario["var_dir"]) / "db.sqlite3")
    assert Path(scenario["database"]).stat().st_size > 0  # a file, not :memory:
    assert scenario["journal_mode"] == "wal"
    assert scenario["busy_timeout_ms"] == 20000
    assert scenario["eager"] and scenario["background"]


def test_labels_submitted_from_two_threads_all_succeed(scenario):
    overlap = scenario["overlap"]
    assert overlap["errors"] == []
    assert "database is locked" not in scenario["stderr"]
    # every record labelled by both annotators: each submit answered with the next item
    assert overlap["labels"] == 2 * overlap["records"] == len(overlap["statuses"])
    assert set(overlap["statuses"]) == {302}
    # the recomputes ran in the background runner and ended
    assert overlap["runner_completed"] >= 1 and overlap["open_messages"] == 0
    assert overlap["snapshots"] > 0


def test_a_label_submit_returns_before_the_agreement_recompute_runs(scenario):
    at_response = scenario["order"]["at_response"]
    assert at_response["status"] == 302 and at_response["label_stored"]
    # the recompute was asked for and waits behind the runner's current task: not run yet
    assert at_response["request_exists"]
    assert not at_response["request_started"] and not at_response["request_done"]
    assert at_response["dirty_marks"] > 0 and at_response["runner_pending"] >= 2
    after = scenario["order"]["after_runner"]
    assert after["request_done"] and after["dirty_marks"] == 0
