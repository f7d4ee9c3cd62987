"""The fault table of issue 10, with real processes: a Redis server of our own (no persistence,
like a default container), real `celery worker` and `celery beat` processes on it, PostgreSQL.

* SIGKILL the pool child mid-scoring; SIGKILL the whole worker (and its beat) and restart it under
  the same name; terminate the job's database connections mid-task: each job ends once, with
  figures equal to ``python -m scoring`` on the same files.
* Stop Redis mid-work: label and review submissions and a run upload commit, "Recompute now"
  answers at once; after Redis returns (same port, empty) the upload's job runs and the agreement
  recompute happens with no manual step, and the worker is still alive."""

import io
import os
import shutil
import signal
import subprocess
import sys
import uuid
from contextlib import contextmanager

import pytest
from django.db import connection
from django.urls import reverse

from goldset.models import AgreementSnapshot, ImportJob, JobStatus, OutboxMessage, ScoringJob
from goldset.services.scoring_jobs import create_scoring_job
from tests.conftest import ROOT, _stop, free_port
from tests.goldset.worker.test_scoring_jobs_worker import (
    assert_equals_cli,
    big_version,
    cli_result,
    run_bytes,
    wait_until,
)
from workbench.celery import app

pytestmark = [pytest.mark.worker, pytest.mark.postgres]

STALE = 6  # seconds without a heartbeat before a job counts as lost
FAST = {
    "JOB_STALE_SECONDS": str(STALE),
    "JOB_HEARTBEAT_SECONDS": "1",
    "RECONCILE_INTERVAL_SECONDS": "2",
    "OUTBOX_REDISPATCH_SECONDS": "8",
    "AGREEMENT_DEBOUNCE_SECONDS": "1",
}


class RedisServer:
    """A redis-server on our own port, without persistence: a restart loses every message."""

    def __init__(self, port, workdir):
        self.port, self.workdir, self.proc = port, workdir, None
        self.url = f"redis://127.0.0.1:{port}/0"

    def start(self):
        binary = shutil.which("redis-server")
        assert binary, "redis-server is needed for the outage tests"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--save", "", "--appendonly", "no"]
            + ["--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.answers, timeout=20, what=f"redis-server on port {self.port}")

    def answers(self):
        import redis

        try:
            return redis.Redis(port=self.port, socket_connect_timeout=0.5).ping()
        except redis.ConnectionError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)


@pytest.fixture
def private_redis(tmp_path, redis_url):
    # A free port, kept for the test: a restarted server comes back on the same one.
    server = RedisServer(free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


@contextmanager
def broker(url):
    """Point this process's Celery app (publishing and pings) at ``url``, tasks not eager."""
    saved = (app.conf.broker_url, app.conf.task_always_eager)
    app.conf.broker_url, app.conf.task_always_eager = url, False
    _forget_connections()
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.task_always_eager = saved
        _forget_connections()


def _forget_connections():
    from kombu import pools

    app._pool, app.amqp._producer_pool = None, None
    app.control.mailbox.__dict__.pop("producer_pool", None)  # a cached_property
    pools.reset()


def answers_ping(node):
    """The worker answers a ping (a broker connection broken by a Redis restart counts as no
    answer: the next call reconnects)."""
    try:
        return bool(app.control.ping(destination=[node], timeout=0.5))
    except Exception:
        _forget_connections()
        return False


class Processes:
    """Workers and beats started by a test, each in its own process group (killed as one)."""

    def __init__(self, redis, tmp_path):
        db = connection.settings_dict
        self.env = {
            **os.environ,
            **FAST,
            "DJANGO_SETTINGS_MODULE": "workbench.settings",
            "SECRET_KEY": "fault-test-secret",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:"
            f"{db['PORT'] or 5432}/{db['NAME']}",
            "REDIS_URL": redis.url,
        }
        self.tmp_path, self.started = tmp_path, []

    def _popen(self, args):
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workbench", *args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.tmp_path / f"{uuid.uuid4().hex[:6]}.log", "wb"),
            start_new_session=True,
        )
        self.started.append(proc)
        return proc

    def worker(self, name, *, pool="solo"):
        proc = self._popen(
            ["worker", f"--pool={pool}", "--concurrency=1", "--without-gossip", "--without-mingle"]
            + ["-n", name, "--loglevel=INFO"]
        )
        node = name.replace("%h", os.uname().nodename)
        wait_until(
            lambda: proc.poll() is None and answers_ping(node),
            timeout=60,
            what=f"worker {node} to answer pings",
        )
        proc.node = node
        return proc

    def beat(self):
        schedule = self.tmp_path / f"beat-{uuid.uuid4().hex[:6]}"
        return self._popen(["beat", "-s", str(schedule), "--loglevel=INFO"])

    def kill_group(self, proc):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)

    def stop_all(self):
        for proc in self.started:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
                _stop(proc)


@pytest.fixture
def processes(transactional_db, private_redis, tmp_path, settings):
    for name, value in FAST.items():
        setattr(settings, name, int(value))
    procs = Processes(private_redis, tmp_path)
    with broker(private_redis.url):
        yield procs
        procs.stop_all()


def pool_children(pid):
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry))
    return children


def slow_job(admin_user, n_queries=6000, n_blocks=1500):
    version = big_version(n_queries, n_blocks, admin_user)
    data = run_bytes(n_queries, n_blocks)
    job = create_scoring_job(
        version=version, name="slow", data=data, filename="run.trec", actor=admin_user
    )
    return job, data


def wait_for_stage(job, stage="bootstrap", timeout=120):
    wait_until(
        lambda: ScoringJob.objects.filter(
            pk=job.pk, status=JobStatus.RUNNING, stage=stage
        ).exists(),
        timeout=timeout,
        what=f"the job to reach the {stage} stage",
    )


def wait_finished(job, timeout=300):
    wait_until(lambda: ScoringJob.objects.get(pk=job.pk).finished, timeout=timeout, what="the job")
    job.refresh_from_db()
    return job


def test_a_sigkilled_pool_child_leaves_no_job_running(processes, admin_user, tmp_path):
    worker = processes.worker("child@%h", pool="prefork")
    processes.beat()
    job, data = slow_job(admin_user)
    wait_for_stage(job)
    (child,) = pool_children(worker.pid)
    os.kill(child, signal.SIGKILL)  # an OOM kill or a hard time limit does the same
    job = wait_finished(job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.attempts == 2 and worker.poll() is None
    assert f"Attempt 1 on worker {worker.node} was lost" in job.notice
    assert_equals_cli(job, cli_result(tmp_path, job, data))


def test_a_killed_worker_restarted_under_the_same_name_finishes_the_job_once(
    processes, admin_user, tmp_path
):
    worker = processes.worker("same@%h")
    processes.beat()
    job, data = slow_job(admin_user)
    wait_for_stage(job)
    processes.kill_group(worker)  # the whole worker: main process and all, like `docker kill`
    assert ScoringJob.objects.get(pk=job.pk).status == JobStatus.RUNNING
    again = processes.worker("same@%h")
    assert again.node == worker.node
    job = wait_finished(job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.attempts == 2 and job.worker == worker.node
    assert f"Attempt 1 on worker {worker.node} was lost" in job.notice
    assert_equals_cli(job, cli_result(tmp_path, job, data))


def test_a_terminated_database_connection_mid_task_requeues_and_the_job_ends_once(
    processes, admin_user, tmp_path
):
    processes.worker("pgkill@%h")
    processes.beat()
    job, data = slow_job(admin_user)
    wait_for_stage(job)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cursor.fetchone()[0] >= 1
    job = wait_finished(job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.attempts == 2
    assert "lost its database connection" in job.notice and "requeued automatically" in job.notice
    assert_equals_cli(job, cli_result(tmp_path, job, data))


def test_with_redis_down_work_commits_and_runs_when_redis_returns(
    processes, private_redis, admin_user, client_for, tmp_path, settings
):
    from tests.goldset.answers_helpers import build_conflict_item, claim_and_label
    from tests.goldset.curation_support import review, write_triple
    from tests.goldset.web.test_exports_pages import upload
    from workbench.roles import Role

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    worker = processes.worker("outage@%h", pool="prefork")
    processes.beat()
    running, running_data = slow_job(admin_user)
    wait_for_stage(running)  # the worker holds this job's message, unacknowledged

    from goldset.models import Domain
    from tests.factories import UserFactory

    domain = Domain.objects.get(slug="supply_chain")
    record, annotators = build_conflict_item(domain)
    author = UserFactory(role=Role.ANNOTATOR, username="outage-author")
    reviewer = UserFactory(role=Role.ANNOTATOR, username="outage-reviewer")
    triple = write_triple(author)
    from goldset.models import GoldVersion

    small = GoldVersion.objects.get()

    private_redis.stop()
    # Redis is down. A label and a review commit; the work they trigger waits in the outbox.
    label = claim_and_label(annotators[0], rationale="checked both passages")
    submitted = review(reviewer, triple, "confirm")
    assert label.pk and submitted.pk
    pending = OutboxMessage.objects.filter(kind="agreement.recompute", done_at__isnull=True)
    assert pending.exists()
    admin = client_for(admin_user)
    recompute = admin.post(reverse("quality:recompute"))
    # It answered (publishing gives up at the broker's connect timeout, asserted in
    # tests/workbench/test_supervision.py) and the request waits in the outbox with the error.
    assert recompute.status_code == 302
    assert pending.filter(last_error__contains="Error").exists()
    dashboard = admin.get(reverse("quality:agreement"))
    assert dashboard.status_code == 200 and "These figures are stale" in dashboard.content.decode()
    upload_data = run_bytes(6000, 1500)[: 10 * 1024]
    upload_data = upload_data[: upload_data.rfind(b"\n") + 1]
    file = io.BytesIO(upload_data)
    file.name = "during-outage.trec"
    response = upload(admin, small, file, name="during outage")
    assert response.status_code == 302
    # The upload is stored as a background import job; it waits for the broker.
    assert ImportJob.objects.filter(filename="during-outage.trec", status="queued").exists()

    private_redis.start()  # same port, empty: every message in flight is gone
    wait_until(
        lambda: ScoringJob.objects.filter(name="during outage").exists(),
        timeout=240,
        what="the upload's import to create its scoring job after Redis returned",
    )
    queued = wait_finished(ScoringJob.objects.get(name="during outage"), timeout=240)
    assert queued.status == JobStatus.SUCCEEDED, queued.error
    assert_equals_cli(queued, cli_result(tmp_path, queued, upload_data))
    wait_until(
        lambda: (
            not OutboxMessage.objects.filter(
                kind="agreement.recompute", done_at__isnull=True
            ).exists()
        ),
        timeout=120,
        what="the agreement recompute after Redis returned",
    )
    assert AgreementSnapshot.objects.exists()
    assert "These figures are stale" not in admin.get(reverse("quality:agreement")).content.decode()
    running = wait_finished(running, timeout=300)
    assert running.status == JobStatus.SUCCEEDED, running.error
    assert_equals_cli(running, cli_result(tmp_path, running, running_data))
    assert worker.poll() is None, "the worker died with the Redis restart"
    wait_until(lambda: answers_ping(worker.node), timeout=30, what="the worker to answer")
