"""The commands docker-compose.yml runs, started here as plain processes (no Docker engine in CI):
from a `.env` copied from `.env.example` with compose's own overrides, web (gunicorn), the three workers
and beat come up, and the web and beat healthchecks pass over plain HTTP."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.db import connection

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _app_env(tmp_path, redis_url):
    """The environment compose gives the app containers, pointed at this machine's services."""
    db = connection.settings_dict
    env_file = tmp_path / ".env"
    shutil.copy(ROOT / ".env.example", env_file)
    compose_env = dict(COMPOSE["services"]["web"]["environment"])
    compose_env.update(
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        REDIS_URL=redis_url,
        SECRET_KEY_FILE=str(tmp_path / "secrets" / "secret_key"),
        WORKBENCH_VAR_DIR=str(tmp_path / "var"),
        RECONCILE_INTERVAL_SECONDS="2",
    )
    return {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "WORKBENCH_ENV_FILE": str(env_file),
        **compose_env,
    }


def _command(service):
    command = COMPOSE["services"][service]["command"]
    return command if isinstance(command, list) else shlex.split(command)


def _wait_for_health(port, deadline_seconds):
    deadline = time.monotonic() + deadline_seconds
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/health/?format=json", timeout=5
            ) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            last = exc.code
        except OSError as exc:
            last = repr(exc)
        time.sleep(0.5)
    raise AssertionError(f"/health/ did not pass within {deadline_seconds}s (last: {last})")


def _stop(proc):
    """Stops the process group (``sh -c`` and the gunicorn it started), as compose would."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)


def test_compose_uses_the_same_variables_as_ci():
    ci = (ROOT / ".ci" / "run").read_text()
    app_env = COMPOSE["services"]["web"]["environment"]
    for name in ("DATABASE_URL", "REDIS_URL"):
        assert name in app_env
        assert f"export {name}=" in ci
    for service in ("web", "worker", "reconciler", "webhooks", "beat", "db", "redis"):
        assert COMPOSE["services"][service]["restart"] == "unless-stopped"
        assert "healthcheck" in COMPOSE["services"][service]
    assert COMPOSE["services"]["web"]["env_file"] == ".env"


@pytest.mark.postgres
@pytest.mark.worker
def test_compose_commands_start_and_pass_their_healthchecks(
    transactional_db, postgres, redis_url, tmp_path
):
    env = _app_env(tmp_path, redis_url)
    web_port = free_port()  # not a fixed one: other test processes run alongside
    web = _command("web")
    assert web[:2] == ["sh", "-c"]
    # This machine's port, and one small worker (two cores are shared by the whole team).
    web_command = re.sub(r"--workers \d+", "--workers 1", web[2])
    web_command = re.sub(r"--threads \d+", "--threads 2", web_command)
    web_command = web_command.replace("0.0.0.0:8000", f"127.0.0.1:{web_port}")
    # The three workers (one per queue), each under this test's own host name.
    workers = [
        [
            part.replace("%h", f"teammode-{os.getpid()}") if "%h" in part else part
            for part in _command(service)
        ]
        for service in ("worker", "reconciler", "webhooks")
    ]
    beat = [
        part if part != "/tmp/celerybeat-schedule" else str(tmp_path / "beat-schedule")
        for part in _command("beat")
    ]
    procs = []
    try:
        for args in (["sh", "-c", web_command], *workers, beat):
            procs.append(
                subprocess.Popen(
                    args,
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        assert _wait_for_health(web_port, 180) == 200
        # The compose healthchecks themselves, as written (the web one on this test's port).
        web_check = COMPOSE["services"]["web"]["healthcheck"]["test"][1:]
        web_check = [part.replace("127.0.0.1:8000", f"127.0.0.1:{web_port}") for part in web_check]
        assert subprocess.run(web_check, cwd=ROOT, env=env, timeout=60).returncode == 0
        beat_check = COMPOSE["services"]["beat"]["healthcheck"]["test"][1:]
        assert subprocess.run(beat_check, cwd=ROOT, env=env, timeout=60).returncode == 0
        for service in ("worker", "reconciler", "webhooks"):  # each pings its own node
            kind, check = COMPOSE["services"][service]["healthcheck"]["test"]
            assert kind == "CMD-SHELL"
            node_env = {
                **env,
                "HOSTNAME": f"teammode-{os.getpid()}",
                "WORKER_NODE": COMPOSE["services"][service]["environment"]["WORKER_NODE"],
            }
            ran = subprocess.run(["sh", "-c", check.replace("$$", "$")], cwd=ROOT, env=node_env)
            assert ran.returncode == 0, f"the {service} healthcheck failed"
        # Pages other than /health/ still go to HTTPS with the example's settings.
        request = urllib.request.Request(f"http://127.0.0.1:{web_port}/login/")
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(request, timeout=10)
        assert redirect.value.code == 301
        assert redirect.value.headers["Location"].startswith("https://")
    finally:
        for proc in procs:
            _stop(proc)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
