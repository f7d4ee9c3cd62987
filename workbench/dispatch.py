"""Queue a Celery task by its registered name.

Services queue work, and tasks call services: naming the task instead of importing it keeps the
layers one-way (tasks → services). ``goldset.apps`` imports the task modules at start-up, so every
name is registered in web processes as well as in workers.
"""

from workbench.celery import app


def enqueue(name: str, *args, countdown: float | None = None):
    """Send the task ``name`` with positional ``args`` (run in-process in the embedded eager
    mode). Call it through ``transaction.on_commit`` from inside a transaction."""
    return app.tasks[name].apply_async(args, countdown=countdown)


def publish(name: str, *, args=(), kwargs=None, countdown: float | None = None):
    """Send the task ``name`` once, without Celery's publish retries: the outbox relay calls
    this and keeps the message pending when the broker is down, so a request never waits on a
    broker outage (run in-process in the embedded eager mode)."""
    return app.tasks[name].apply_async(args, kwargs or {}, countdown=countdown, retry=False)
