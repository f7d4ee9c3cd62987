"""Issue 26: a worker process of the default queue starts the agreement computation (its
forkserver, statsmodels' inter-rater module) as it starts, so its first recompute costs what the
next ones do; its first recompute then uses that server. Workers of the other queues never
recompute and start nothing. Real processes: redis-server, prefork `celery worker`s, PostgreSQL."""

import os

import pytest
from django.urls import reverse

from goldset.models import AgreementSnapshot, OutboxMessage
from tests.goldset.worker.test_job_faults import pool_children, wait_until

pytestmark = [pytest.mark.worker, pytest.mark.postgres]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _maps(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return f.read()
    except OSError:
        return ""


def _forkservers(pool_child: int) -> list[int]:
    """The agreement forkservers ``pool_child`` started (its children running the server)."""
    return [
        pid
        for pid in pool_children(pool_child)
        if "multiprocessing.forkserver" in (line := _cmdline(pid))
        and "goldset.services.agreement_children" in line
    ]


def _warmed(pool_child: int) -> bool:
    """Its server is up and statsmodels' inter-rater module (SciPy with it) is loaded in it."""
    return bool(_forkservers(pool_child)) and "/scipy/" in _maps(pool_child)


def _only_pool_child(worker) -> int:
    wait_until(lambda: len(pool_children(worker.pid)) == 1, timeout=60, what="the pool process")
    return pool_children(worker.pid)[0]


def _prefork_worker(processes, name, *queues):
    """A prefork worker with one pool process, consuming ``queues`` (all of them if none)."""
    options = ["-Q", ",".join(queues)] if queues else []
    proc = processes._popen(
        ["worker", "--pool=prefork", "--concurrency=1", "--without-gossip", "--without-mingle"]
        + ["-n", name, "--loglevel=INFO", *options]
    )
    return proc


def test_a_default_queue_worker_starts_the_agreement_server_at_start_and_its_first_recompute_uses_it(
    processes, admin_user, client_for
):
    from tests.factories import DomainFactory
    from tests.goldset.answers_helpers import build_conflict_item, claim_and_label

    processes.env.update(AGREEMENT_WARM_UP="true", AGREEMENT_PROCESSES="2")
    # Started first, so it has had longer than the other to warm up, were it to.
    others = _prefork_worker(processes, "others@%h", "reconcile", "webhooks")
    others_child = _only_pool_child(others)
    default = _prefork_worker(processes, "default@%h")
    default_child = _only_pool_child(default)
    wait_until(
        lambda: _warmed(default_child),
        timeout=120,
        what="the default queue's pool process to start its agreement server and load statsmodels",
    )
    [server] = _forkservers(default_child)
    assert _forkservers(others_child) == [] and "/scipy/" not in _maps(others_child)

    # Its first recompute forks its processes from that server: no second server is started.
    record, annotators = build_conflict_item(DomainFactory(slug="supply_chain"))
    claim_and_label(annotators[0], rationale="checked both passages")
    assert client_for(admin_user).post(reverse("quality:recompute")).status_code == 302
    wait_until(
        lambda: (
            AgreementSnapshot.objects.exists()
            and not OutboxMessage.objects.filter(
                kind="agreement.recompute", done_at__isnull=True
            ).exists()
        ),
        timeout=180,
        what="the first agreement recompute of the warmed worker",
    )
    assert _forkservers(default_child) == [server]
    assert os.path.exists(f"/proc/{server}")


def test_with_warm_up_off_a_worker_starts_no_agreement_server_until_it_recomputes(processes):
    processes.env.update(AGREEMENT_WARM_UP="false", AGREEMENT_PROCESSES="2")
    off = _prefork_worker(processes, "off@%h")
    off_child = _only_pool_child(off)
    # A warmed worker started after it, as the yardstick of "long enough".
    processes.env["AGREEMENT_WARM_UP"] = "true"
    on = _prefork_worker(processes, "on@%h")
    on_child = _only_pool_child(on)
    wait_until(lambda: _warmed(on_child), timeout=120, what="the warmed worker's server")
    assert _forkservers(off_child) == [] and "/scipy/" not in _maps(off_child)
