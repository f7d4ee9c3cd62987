"""The workbench's Celery app (same configuration, same tasks) plus ``tests.hold``, for tests
that need a worker busy on an unacknowledged message. Start such a worker with
``celery -A tests.workbench.worker.holding_app worker``."""

import threading
from pathlib import Path

from workbench.celery import app

__all__ = ["app", "hold"]


@app.task(name="tests.hold", acks_late=True, ignore_result=True)
def hold(directory: str, name: str, limit: float = 600.0) -> str:
    """Write ``<directory>/<name>.started``, run until ``<directory>/<name>.release`` exists
    (at most ``limit`` seconds), then write ``<directory>/<name>.done``. The message stays
    unacknowledged all that time (``acks_late``)."""
    folder = Path(directory)
    (folder / f"{name}.started").touch()
    release = folder / f"{name}.release"
    pause = threading.Event()
    waited = 0.0
    while not release.exists() and waited < limit:
        pause.wait(0.1)
        waited += 0.1
    (folder / f"{name}.done").touch()
    return name
