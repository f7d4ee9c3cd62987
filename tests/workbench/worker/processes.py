"""Real Celery processes for the worker tests of this package: workers of the holding app
(``tests.workbench.worker.holding_app``: the workbench's app plus ``tests.hold``) and beat, each
in its own process group, logging to a file the test names."""

import os
import signal
import subprocess
import sys

from django.db import connection

from tests.conftest import ROOT


def worker_env(redis_url: str, **overrides: str) -> dict:
    """The environment of a worker on ``redis_url`` and this test's database."""
    db = connection.settings_dict
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "worker-process-test",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": redis_url,
        **overrides,
    }


def _start(args: list[str], env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", *args],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def start_worker(env: dict, node: str, log, *options: str) -> subprocess.Popen:
    """``celery worker`` of the holding app, named ``node``, with ``options`` (-Q, --pool...)."""
    args = ["-A", "tests.workbench.worker.holding_app", "worker", "-n", node, "--loglevel=INFO"]
    return _start([*args, *options], env, log)


def start_beat(env: dict, schedule, log) -> subprocess.Popen:
    return _start(["-A", "workbench", "beat", "-s", str(schedule), "--loglevel=INFO"], env, log)


def stop_group(proc: subprocess.Popen, *, kill: bool = False) -> None:
    """Stop the process and its children: SIGTERM (a warm shutdown), or SIGKILL with ``kill``."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
