"""Issue 24: a prefork pool child that scored a job does not keep the job's memory for the
next tasks. The job hands its pages back when it ends (``release_unused_memory``), and a child
still above ``CELERY_WORKER_MAX_MEMORY_PER_CHILD`` after a task is replaced by a fresh one."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

from goldset.models import JobStatus, ScoringJob
from goldset.services.scoring_jobs import create_scoring_job
from tests.conftest import ROOT, _stop
from tests.goldset.worker.test_scoring_jobs_worker import big_version, run_bytes
from tests.waiting import wait_until
from workbench.celery import app

pytestmark = pytest.mark.worker


def _children(pid):
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.fixture
def prefork_worker(transactional_db):
    """A real prefork worker (concurrency 1) whose child is replaced after any task that leaves
    it above 1 KiB (always: the limit is what is under test, not the job's size)."""
    db = connection.settings_dict
    name = f"prefork-{uuid.uuid4().hex[:8]}@%h"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "worker-test-secret",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_WORKER_MAX_MEMORY_PER_CHILD": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workbench", "worker", "--pool=prefork"]
        + ["--concurrency=1", "--without-gossip", "--without-mingle", "-n", name]
        + ["--loglevel=INFO"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    host_name = name.replace("%h", os.uname().nodename)
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        wait_until(
            lambda: bool(app.control.ping(destination=[host_name], timeout=0.5)),
            timeout=90,
            what="the prefork worker to answer",
        )
        yield proc
    finally:
        app.conf.task_always_eager = previous
        _stop(proc)


def test_the_pool_child_that_scored_a_job_is_replaced_and_its_memory_returned(
    prefork_worker, admin_user
):
    wait_until(lambda: len(_children(prefork_worker.pid)) == 1, timeout=60, what="a pool child")
    (first,) = _children(prefork_worker.pid)
    idle = _rss_kib(first)
    version = big_version(3000, 600, admin_user)
    job = create_scoring_job(
        version=version,
        name="memory",
        data=run_bytes(3000, 600),
        filename="run.trec",
        actor=admin_user,
        resamples=2000,
    )
    wait_until(lambda: ScoringJob.objects.get(pk=job.pk).finished, timeout=180, what="the job")
    assert ScoringJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED
    # The child that ran the job is gone; a fresh one holds the pool's place.
    wait_until(
        lambda: (kids := _children(prefork_worker.pid)) and first not in kids,
        timeout=60,
        what="the pool child to be replaced",
    )
    (fresh,) = _children(prefork_worker.pid)
    assert fresh != first and not Path(f"/proc/{first}").exists()
    assert _rss_kib(fresh) < idle * 1.5  # a fresh child: none of the job's memory
