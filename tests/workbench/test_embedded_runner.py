"""The embedded default's background runner (workbench.embedded): a task handed to it runs in
its thread, never in the caller's; due tasks run before delayed ones (a countdown is honoured);
a failing task is logged and the next one still runs; the request id travels with the task;
dispatch sends tasks there only from a request in the embedded mode with EMBEDDED_BACKGROUND_TASKS
on (commands run them in their own thread)."""

import threading

import pytest

from goldset.tasks import beats
from tests.waiting import wait_until
from workbench import dispatch, request_context
from workbench.celery import app
from workbench.embedded import EmbeddedRunner, runner

RECORD = "tests.embedded.record"
HOLD = "tests.embedded.hold"
FAIL = "tests.embedded.fail"

seen: list[tuple[str, int, str]] = []  # (label, thread id, request id) per run, in order
beating: list[bool] = []  # whether a job's attempt would stamp its heartbeat, per run
held = threading.Event()
release = threading.Event()


@app.task(name=RECORD)
def record(label):
    seen.append((label, threading.get_ident(), request_context.current_request_id()))
    beating.append(beats(record))


@app.task(name=HOLD)
def hold():
    held.set()
    release.wait()


@app.task(name=FAIL)
def fail():
    raise RuntimeError("this task fails on purpose")


@pytest.fixture
def fresh():
    """Empty records, a closed gate, and runners made with ``fresh()``; at the end the gate
    opens and every runner's thread (the process's one too) is stopped, whatever happened."""
    seen.clear()
    beating.clear()
    held.clear()
    release.clear()
    made = []

    def make():
        made.append(EmbeddedRunner())
        return made[-1]

    yield make
    release.set()
    for r in [*made, runner()]:
        r.stop()


def test_a_task_runs_in_the_runners_thread_never_the_callers(fresh):
    r = fresh()
    with request_context.bound(request_context.RequestContext(request_id="req-42")):
        r.submit(RECORD, ["one"])
    assert r.wait_idle(timeout=60)
    [(label, thread, request_id)] = seen
    assert label == "one" and thread != threading.get_ident()
    assert request_id == "req-42"  # the audit log names the request that queued it
    assert beating == [True]  # its job page watches the heartbeat, as under a worker


def test_the_caller_returns_before_the_task_ran(fresh):
    r = fresh()
    r.submit(HOLD)
    assert held.wait(60)  # the runner is busy with the held task
    r.submit(RECORD, ["after"])  # returns at once although the runner cannot take it
    assert seen == [] and r.pending() == 2
    release.set()
    assert r.wait_idle(timeout=60)
    assert [label for label, *_ in seen] == ["after"]


def test_due_tasks_run_before_delayed_ones_and_a_flush_runs_everything(fresh):
    r = fresh()
    r.submit(HOLD)
    assert held.wait(60)
    r.submit(RECORD, ["debounced"], countdown=3600)
    r.submit(RECORD, ["now"])
    release.set()
    wait_until(lambda: r.completed == 2, timeout=60, what="the held and the due task")
    assert [label for label, *_ in seen] == ["now"]  # the debounced one is due in an hour
    assert r.pending() == 1
    assert r.wait_idle(hurry=True, timeout=60)  # exit: run the rest, due or not
    assert [label for label, *_ in seen] == ["now", "debounced"]


def test_a_failing_task_is_logged_and_the_next_one_runs(fresh, caplog):
    r = fresh()
    r.submit(FAIL)
    r.submit(RECORD, ["next"])
    assert r.wait_idle(timeout=60)
    assert [label for label, *_ in seen] == ["next"]
    assert "embedded task tests.embedded.fail failed" in caplog.text
    assert r.completed == 2


def test_dispatch_uses_the_runner_only_in_the_embedded_mode_with_the_setting_on(fresh, settings):
    settings.EMBEDDED_BACKGROUND_TASKS = False
    dispatch.publish(RECORD, args=["inline"])
    assert seen[-1][1] == threading.get_ident()  # eager, in this thread (the test overlay)
    assert beating == [False]  # the caller waits for it: no heartbeat thread
    settings.EMBEDDED_BACKGROUND_TASKS = True
    dispatch.publish(RECORD, args=["command"])  # no request: a command or the shell
    assert seen[-1][1] == threading.get_ident()
    with request_context.bound(request_context.RequestContext(request_id="req-7")):
        assert dispatch.in_background()
        dispatch.publish(RECORD, args=["background"])
        dispatch.enqueue(RECORD, "enqueued")
        assert runner().wait_idle(timeout=60)
        app.conf.task_always_eager = False  # team mode: a worker's job, never the runner's
        try:
            assert not dispatch.in_background()
        finally:
            app.conf.task_always_eager = True
    assert [label for label, *_ in seen] == ["inline", "command", "background", "enqueued"]
    assert all(thread != threading.get_ident() for _, thread, _ in seen[2:])


def test_a_stopped_runner_ends_its_thread_and_starts_again_on_demand(fresh):
    r = fresh()
    r.submit(RECORD, ["first"])
    assert r.wait_idle(timeout=60)
    thread = r._thread
    r.stop()
    assert not thread.is_alive()
    r.submit(RECORD, ["second"])
    assert r.wait_idle(timeout=60)
    assert [label for label, *_ in seen] == ["first", "second"]
