"""Queue a Celery task by its registered name.

Services queue work, and tasks call services: naming the task instead of importing it keeps the
layers one-way (tasks → services). ``goldset.apps`` imports the task modules at start-up, so every
name is registered in web processes as well as in workers.
"""

import logging

from celery import group
from django.conf import settings

from workbench import request_context
from workbench.celery import app
from workbench.embedded import runner

logger = logging.getLogger(__name__)


def in_background() -> bool:
    """Whether a task goes to the in-process background runner (:mod:`workbench.embedded`):
    Celery is eager (the embedded mode), ``EMBEDDED_BACKGROUND_TASKS`` is on, and the caller is
    a web request (or a task one queued: both carry the request's id). Management commands and
    the shell still run tasks in their own thread, so they end with the work done and print it."""
    return bool(
        app.conf.task_always_eager
        and getattr(settings, "EMBEDDED_BACKGROUND_TASKS", False)
        and request_context.current_request_id()
    )


def tasks_run_inline() -> bool:
    """Whether tasks run in this process (Celery eager: the embedded mode, tests, commands)
    rather than in workers: a delay then means nothing to hold a task back with."""
    return bool(app.conf.task_always_eager)


def enqueue(name: str, *args, countdown: float | None = None):
    """Send the task ``name`` with positional ``args`` (in the embedded mode: to the background
    runner, or run in-process when Celery is eager without it). Call it through
    ``transaction.on_commit`` from inside a transaction."""
    if in_background():
        return runner().submit(name, args, countdown=countdown)
    return app.tasks[name].apply_async(args, countdown=countdown)


def publish(name: str, *, args=(), kwargs=None, countdown: float | None = None):
    """Send the task ``name`` once, without Celery's publish retries: the outbox relay calls
    this and keeps the message pending when the broker is down, so a request never waits on a
    broker outage (in the embedded mode: to the background runner, after the response)."""
    if in_background():
        return runner().submit(name, args, kwargs, countdown=countdown)
    return app.tasks[name].apply_async(args, kwargs or {}, countdown=countdown, retry=False)


def offer_group(name: str, arg_lists: list[list]) -> bool:
    """Offer work to every worker: one ``name`` task per argument list, sent as a Celery group,
    best effort. For work whose sender does whatever nobody took (the database records who
    does what), so a broker outage only costs speed: it is logged and False is returned. In the
    embedded eager mode nothing is sent (the sender does all of it in-process)."""
    if app.conf.task_always_eager or not arg_lists:
        return False
    task = app.tasks[name]
    try:
        group(task.si(*args) for args in arg_lists).apply_async(retry=False)
    except Exception:  # the broker is down: the sender does the work itself
        logger.warning("could not offer %d %s tasks to the workers", len(arg_lists), name)
        return False
    return True
