"""Test overlay: the environment's database and broker, with fast hashing and plain HTTP."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
# Uploads wait in a directory of this test run (removed at exit), not in var/; set in the
# environment so the worker processes tests start share it.
if not os.environ.get("IMPORT_STORAGE_DIR"):
    os.environ["IMPORT_STORAGE_DIR"] = tempfile.mkdtemp(prefix="goldset-test-imports-")
    atexit.register(shutil.rmtree, os.environ["IMPORT_STORAGE_DIR"], ignore_errors=True)

# Under pytest-xdist (worker ``gw<N>``) each test process gets its own Redis database (the base
# URL's number plus N) and its own import directory (a ``gw<N>`` folder in the one above, which
# the xdist workers inherit from the main process), set in the environment before the settings
# below read them: the Celery workers a test starts consume that database's queues (two test
# processes on one queue would take each other's tasks), and the orphan sweep deletes every
# stored file its own database does not know. pytest-django gives each its own test database.
# Done once: a subprocess that loads these settings again inherits the environment (marked).
if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw") and os.environ.get(
    "WORKBENCH_TEST_WORKER"
) != os.environ.get("PYTEST_XDIST_WORKER"):
    _xdist_worker = os.environ["WORKBENCH_TEST_WORKER"] = os.environ["PYTEST_XDIST_WORKER"]
    _index = int(_xdist_worker.removeprefix("gw"))
    _imports = Path(os.environ["IMPORT_STORAGE_DIR"]) / _xdist_worker
    _imports.mkdir(parents=True, exist_ok=True)
    os.environ["IMPORT_STORAGE_DIR"] = str(_imports)
    if os.environ.get("REDIS_URL"):
        _redis = urlsplit(os.environ["REDIS_URL"])
        _redis_db = int(_redis.path.strip("/") or 0) + _index
        os.environ["REDIS_URL"] = urlunsplit(_redis._replace(path=f"/{_redis_db}"))

# The production bound on one statement is 30 s (workbench.settings). In tests it is a wall-clock
# limit on the bulk seeding of the scaling tests (20,000-row pools, a 20,000-document corpus),
# which at load 10 took longer than 30 s; those tests assert statement counts and plans, never
# time. The bound stays (a runaway statement still ends), five minutes instead of thirty seconds.
os.environ.setdefault("DB_STATEMENT_TIMEOUT_MS", "300000")

from .settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
# The last-seen write (a minute in production) is a wall-clock cost: a test that counts a page's
# statements after a long data set-up (over a minute at load 12) would count that write too.
# Tests write it at most every 25 minutes, below the 30-minute idle timeout; the tests of the
# write itself set the interval they test.
SESSION_SEEN_WRITE_SECONDS = 25 * 60
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Code under test runs tasks in-process; worker tests switch this off for their duration.
CELERY_TASK_ALWAYS_EAGER = True
# ... inside the code under test (the embedded background runner only where a test turns it on).
EMBEDDED_BACKGROUND_TASKS = False
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405
WHITENOISE_USE_FINDERS = True
# pytest-django flushes test data with TRUNCATE, which the protected tables refuse unless the
# session opts in (see goldset migration 0007); tests of the refusal switch it off again.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    # Appended: the statement timeout and jit=off of workbench.settings stay in force.
    _options = DATABASES["default"]["OPTIONS"].get("options", "")  # noqa: F405
    DATABASES["default"]["OPTIONS"]["options"] = f"{_options} -c goldset.allow_truncate=on".strip()  # noqa: F405
