"""The embedded default's task runner: what team mode sends to a Celery worker runs here in one
background thread of the web process, after the response, never inside the user's request.

Without ``REDIS_URL`` Celery runs tasks eagerly (``task_always_eager``): published from a
request (the outbox relays at commit), a task would run inside that request, so a label submit
waited for the agreement recompute. With ``EMBEDDED_BACKGROUND_TASKS`` (on by default in the
embedded mode) :mod:`workbench.dispatch` hands each task to :func:`runner` instead: a queue
ordered by due time (a ``countdown``, such as the agreement debounce window, is honoured as a
worker honours it), drained one task at a time by a daemon thread that runs the task eagerly
with the request id of the request that queued it. The thread starts at the first task, is
started afresh in a forked child, and opens its own database connections (closed when unusable,
as a worker's are). A task that raises is logged and the next one runs: the task's own service
records the failure on its job, as under a worker.

At interpreter exit (a management command, a stopped development server) the queue is run to
the end, due or not, so a command's background work is not lost. A process killed outright
loses what was queued; the outbox still holds it (``manage.py score_run --recover`` relays it).
"""

import atexit
import heapq
import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, field

from django.db import close_old_connections

from workbench import request_context
from workbench.celery import app

logger = logging.getLogger(__name__)
THREAD_NAME = "goldset-embedded-tasks"


@dataclass(order=True)
class _Call:
    due: float
    seq: int
    name: str = field(compare=False)
    args: tuple = field(compare=False, default=())
    kwargs: dict = field(compare=False, default_factory=dict)
    request_id: str = field(compare=False, default="")


class EmbeddedRunner:
    """An in-process queue of task calls and the one thread that drains it (see the module)."""

    def __init__(self, *, clock=time.monotonic):
        self._clock = clock
        self._queue: list[_Call] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._running = 0  # tasks taken off the queue and not finished yet (0 or 1)
        self._hurry = 0  # > 0: run queued tasks now, due or not (flush)
        self._stopping = False
        self.completed = 0

    def submit(self, name: str, args=(), kwargs=None, *, countdown: float | None = None) -> None:
        """Queue the task ``name``; it runs in the runner's thread once ``countdown`` seconds
        have passed. Returns at once (never runs the task in the caller)."""
        call = _Call(
            due=self._clock() + max(0.0, countdown or 0.0),
            seq=next(self._seq),
            name=name,
            args=tuple(args or ()),
            kwargs=dict(kwargs or {}),
            request_id=request_context.current_request_id(),
        )
        with self._cond:
            heapq.heappush(self._queue, call)
            self._ensure_thread()
            self._cond.notify_all()

    def pending(self) -> int:
        """Tasks queued or running."""
        with self._cond:
            return len(self._queue) + self._running

    def wait_idle(self, *, hurry: bool = False, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running; with ``hurry`` run queued tasks now, due
        or not. Returns False when ``timeout`` passed first."""
        with self._cond:
            if self._queue:
                self._ensure_thread()  # (after a stop, or at exit)
            if hurry:
                self._hurry += 1
                self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: not self._queue and not self._running, timeout)
            finally:
                if hurry:
                    self._hurry -= 1

    def stop(self) -> None:
        """End the thread once its current task is done (queued tasks stay queued; the next
        :meth:`submit` starts a thread again)."""
        with self._cond:
            self._stopping = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._cond:
            self._stopping = False

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._drain, name=THREAD_NAME, daemon=True)
            self._thread.start()

    def _next(self) -> _Call | None:
        with self._cond:
            while True:
                if self._stopping:
                    return None
                if self._queue:
                    wait = self._queue[0].due - self._clock()
                    if wait <= 0 or self._hurry:
                        self._running += 1
                        return heapq.heappop(self._queue)
                    self._cond.wait(wait)
                else:
                    self._cond.wait()

    def _drain(self) -> None:
        while (call := self._next()) is not None:
            try:
                self._run(call)
            finally:
                with self._cond:
                    self._running -= 1
                    self.completed += 1
                    self._cond.notify_all()

    def _run(self, call: _Call) -> None:
        close_old_connections()
        try:
            with request_context.bound(request_context.RequestContext(request_id=call.request_id)):
                app.tasks[call.name].apply_async(call.args, call.kwargs, retry=False)
        except Exception:
            logger.exception("embedded task %s failed", call.name)
        finally:
            close_old_connections()

    def _after_fork(self) -> None:
        """In a forked child the thread is gone and the lock may be held: start afresh, empty
        (the parent runs what it queued)."""
        self._queue = []
        self._cond = threading.Condition()
        self._thread = None
        self._running = 0
        self._hurry = 0
        self._stopping = False


_runner = EmbeddedRunner()
os.register_at_fork(after_in_child=_runner._after_fork)


def runner() -> EmbeddedRunner:
    """The process's runner."""
    return _runner


def in_runner() -> bool:
    """Whether this code runs in a runner's thread (a task the runner took)."""
    return threading.current_thread().name == THREAD_NAME


@atexit.register
def _finish_at_exit() -> None:
    if _runner.pending():
        _runner.wait_idle(hurry=True)
