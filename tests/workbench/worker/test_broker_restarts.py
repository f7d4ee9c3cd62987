"""A worker survives its broker (issue 24): Redis restarts five times while the worker holds an
unacknowledged message, and after each restart the worker's main process is alive and answers;
after the last it still runs a task. The worker is started as docker-compose.yml starts it
(prefork, two processes, gossip and mingle on): with one process busy and one free, the
consumer waits in BRPOP when Redis goes away, the case that crashed kombu's restore before
workbench.broker (see its docstring)."""

import os

import pytest

from tests.goldset.worker.test_job_faults import answers_ping, broker
from tests.waiting import wait_until
from tests.workbench.worker.holding_app import hold
from tests.workbench.worker.processes import start_worker, stop_group, worker_env

pytestmark = [pytest.mark.worker, pytest.mark.postgres]

RESTARTS = 5


def test_the_worker_survives_five_redis_restarts_while_it_holds_unacknowledged_work(
    transactional_db, own_redis, tmp_path
):
    node = f"restarts-{os.getpid()}@{os.uname().nodename}"
    log_path = tmp_path / "worker.log"
    with broker(own_redis.url), open(log_path, "wb") as log:
        worker = start_worker(
            worker_env(own_redis.url), node, log, "--pool=prefork", "--concurrency=2"
        )
        try:

            def log_tail():
                return log_path.read_text(errors="replace")[-4000:]

            def crashed():
                return "Unrecoverable error" in log_path.read_text(errors="replace")

            wait_until(lambda: answers_ping(node), timeout=90, what="the worker to answer")
            for restart in range(1, RESTARTS + 1):
                name = f"held-{restart}"
                hold.apply_async((str(tmp_path), name))
                wait_until(
                    (tmp_path / f"{name}.started").exists,
                    timeout=60,
                    what=f"round {restart}: the held task to start",
                )
                own_redis.stop(crash=True)  # the held message is unacknowledged now
                own_redis.start()  # same port, empty
                wait_until(
                    lambda: worker.poll() is not None or crashed() or answers_ping(node),
                    timeout=90,
                    what=f"round {restart}: the worker to reconnect",
                )
                # A crashed worker's main process first waits for its running task to end.
                assert worker.poll() is None and not crashed(), (
                    f"the worker stopped after Redis restart {restart}:\n{log_tail()}"
                )
                (tmp_path / f"{name}.release").touch()
                wait_until(
                    (tmp_path / f"{name}.done").exists,
                    timeout=60,
                    what=f"round {restart}: the held task to finish",
                )
            # Still a working worker: a new task runs to its end.
            (tmp_path / "after.release").touch()
            hold.apply_async((str(tmp_path), "after"))
            wait_until(
                (tmp_path / "after.done").exists, timeout=60, what="a task after the restarts"
            )
            assert worker.poll() is None and answers_ping(node)
        finally:
            stop_group(worker)
