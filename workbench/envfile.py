"""Reads the deployment's ``.env`` file into the environment before Django's settings load.

Every entry point (``manage.py``, ``workbench.wsgi``, the Celery app) calls
:func:`read_env_file` first, so a team-mode checkout configured by ``cp .env.example .env``
behaves the same under ``manage.py``, gunicorn and Celery. Variables already set in the real
environment win over the file (compose's ``environment:`` block, CI's exports), which is why the
file is read with ``setdefault`` semantics. ``WORKBENCH_ENV_FILE`` names another file; an empty
value turns the file off.
"""

import os
import secrets
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent


def env_file_path() -> Path | None:
    named = os.environ.get("WORKBENCH_ENV_FILE")
    if named is not None:
        return Path(named) if named else None
    return BASE_DIR / ".env"


def read_env_file() -> Path | None:
    """Loads the file when it exists and returns its path (``None`` when there is none)."""
    path = env_file_path()
    if path is None or not path.is_file():
        return None
    environ.Env.read_env(path, overwrite=False)
    return path


def read_or_create_secret_key(path: Path) -> str:
    """The secret key kept in ``path``, created (random, mode 0600) on first use.

    Team mode shares one file between web, worker and beat through a volume, so a fresh
    ``cp .env.example .env && docker compose up`` gets a strong per-installation key without
    anyone pasting one. Concurrent first starts are safe: the key is written to a private
    temporary file and linked into place, and a process that loses the race reads the winner's.
    """
    if path.is_file():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(50))
    try:
        os.link(temp, path)
    except FileExistsError:
        pass
    finally:
        temp.unlink()
    return path.read_text().strip()
