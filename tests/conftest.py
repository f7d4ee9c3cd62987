"""Shared fixtures: users per role, logged-in clients, and the real-service fixtures
(PostgreSQL, a Celery worker on Redis, Chromium, the NIST file).

Nothing is skipped. Outside CI, tests whose service is missing on this machine are *deselected*
at collection (the summary says how many and why); with CI=true nothing is deselected, and a
missing service makes its tests fail."""

import os
import shutil
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection, transaction

from tests.factories import TEST_PASSWORD, UserFactory
from workbench.roles import Role

ROOT = Path(__file__).resolve().parent.parent
# The checkout sits next to shared/ by default; NIST_FILE points elsewhere (a git worktree).
NIST_FILE = Path(
    os.environ.get("NIST_FILE")
    or ROOT.parent / "shared" / "data" / "nist-800-53" / "controls.jsonl"
)
IN_CI = os.environ.get("CI", "").lower() == "true"
# The workers tests start (they inherit this environment) do not start the agreement
# computation at start-up: most never recompute, and each would start a ~290 MB server.
# tests/goldset/worker/test_agreement_warm_up.py turns it on.
os.environ.setdefault("AGREEMENT_WARM_UP", "false")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


# What each service fixture needs, and how to tell whether this machine has it.
def _have_postgres() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


def _have_redis() -> bool:
    return bool(os.environ.get("REDIS_URL"))


def _have_chromium() -> bool:
    return os.path.exists(CHROMIUM) or bool(shutil.which("chromium"))


SERVICES = {
    "PostgreSQL (DATABASE_URL=postgres://…)": _have_postgres,
    "Redis (REDIS_URL=redis://…)": _have_redis,
    f"Chromium ({CHROMIUM})": _have_chromium,
    f"the NIST file ({NIST_FILE})": NIST_FILE.exists,
    "redis-server (Debian package redis-server)": lambda: bool(shutil.which("redis-server")),
    "xmlsec1 (Debian package xmlsec1)": lambda: bool(shutil.which("xmlsec1")),
}
FIXTURE_NEEDS = {
    "postgres": ["PostgreSQL (DATABASE_URL=postgres://…)"],
    "redis_url": ["Redis (REDIS_URL=redis://…)"],
    "celery_worker_process": [
        "PostgreSQL (DATABASE_URL=postgres://…)",
        "Redis (REDIS_URL=redis://…)",
    ],
    "browser": [f"Chromium ({CHROMIUM})"],
    "nist_file": [f"the NIST file ({NIST_FILE})"],
    "own_redis": ["redis-server (Debian package redis-server)"],
    # the SAML tests' identity provider and our service provider sign with xmlsec1
    "idp": ["xmlsec1 (Debian package xmlsec1)"],
    "saml_idp_server": ["xmlsec1 (Debian package xmlsec1)"],
}


# Tests that wait on real processes (workers, browsers, servers) run first: in parallel runs
# (pytest-xdist hands out tests in this order) the short tests then fill the end evenly, instead
# of one process finishing a long test while the other waits.
SLOW_FIXTURES = {
    "celery_worker_process",
    "start_worker",
    "processes",
    "browser",
    "browser_login",
    "live_server",
}


def _runs_long(item) -> bool:
    return bool(
        SLOW_FIXTURES.intersection(item.fixturenames)
        or item.get_closest_marker("worker")
        or item.get_closest_marker("browser")
    )


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not _runs_long(item))  # stable: file order is kept otherwise
    if IN_CI:
        return
    missing = {name for name, present in SERVICES.items() if not present()}
    kept, dropped = [], {}
    for item in items:
        lacking = {
            need for f in item.fixturenames for need in FIXTURE_NEEDS.get(f, []) if need in missing
        }
        if lacking:
            for need in lacking:
                dropped[need] = dropped.get(need, 0) + 1
            dropped.setdefault("_items", []).append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped.pop("_items"))
        items[:] = kept
        config._service_deselections = dropped
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: the main process reports
            config.workeroutput["service_deselections"] = dropped


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: every worker deselects the same tests; keep one worker's counts."""
    counts = getattr(node, "workeroutput", {}).get("service_deselections")
    if counts:
        node.config._service_deselections = counts


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for need, count in sorted(getattr(config, "_service_deselections", {}).items()):
        terminalreporter.write_line(
            f"deselected {count} test(s) that need {need}; CI runs them.", yellow=True
        )


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if IN_CI and skipped:
        reporter.write_line(
            f"CI=true: {len(skipped)} test(s) skipped; every test must run in CI.", red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---------------------------------------------------------------- users and clients


@pytest.fixture
def make_user(db):
    def make(role: Role | None = Role.ANNOTATOR, **fields):
        return UserFactory(role=role, **fields)

    return make


@pytest.fixture
def annotator(make_user):
    return make_user(Role.ANNOTATOR, username="ann-test")


@pytest.fixture
def lead(make_user):
    return make_user(Role.LEAD, username="lead-test")


@pytest.fixture
def admin_user(make_user):
    return make_user(Role.ADMIN, username="admin-test")


@pytest.fixture
def team(make_user):
    """A curation team: an author, a lead, an admin and six reviewers ``r1``…``r6`` (usernames
    ``rev1``…``rev6``)."""
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        "lead": make_user(Role.LEAD, username="lead"),
        "admin": make_user(Role.ADMIN, username="admin"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 7)},
    }


@pytest.fixture
def client_for(client):
    """A fresh logged-in Django test client for a user: ``client_for(user)``."""
    from django.test import Client

    def make(user):
        c = Client()
        c.force_login(user)
        return c

    return make


# ---------------------------------------------------------------- data shared by several tests


@contextmanager
def shared_test_data(django_db_blocker):
    """For a module- or class-scoped fixture that builds data once for several tests (e.g. the
    seeded demo, 8-12 s each time): the data is written in a transaction that stays open while
    those tests run and is rolled back after the last. Each test runs in a savepoint of it
    (pytest-django's ``db`` fixture nests), so what one test changes is gone before the next,
    as if the data had been built for it alone.

    Only for tests on the ``db`` fixture: a live server or a worker uses other connections,
    which never see uncommitted data (those tests build their own). Build the data inside
    ``django_db_blocker.unblock()``; the tests keep their own database access rules."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


# ---------------------------------------------------------------- real services


def free_port() -> int:
    """A TCP port nothing listens on now (parallel test processes must not share fixed ports)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _require(condition: bool, why: str):
    """Reached only when a test that needs a service runs without it (in CI): that is a failure."""
    if not condition:
        pytest.fail(f"{why}: this test needs it, and CI must provide it")


@pytest.fixture
def postgres(db):
    """Use in tests that need PostgreSQL (row locks, triggers)."""
    _require(connection.vendor == "postgresql", "needs DATABASE_URL=postgres://…")


@pytest.fixture
def redis_url():
    """The broker's URL; tests that need a real Redis take this fixture."""
    url = os.environ.get("REDIS_URL", "")
    _require(bool(url), "needs REDIS_URL=redis://…")
    return url


class OwnRedis:
    """A private ``redis-server`` this test starts and may stop, on a free port."""

    def __init__(self, tmp_path):
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.tmp_path = tmp_path
        self.start()

    def start(self):
        """Start the server (again, after ``stop()``: same port, empty, like a restarted
        container without persistence)."""
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.tmp_path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait(up=True)

    def _wait(self, *, up: bool, deadline_s: float = 10.0):
        import socket
        import time

        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                answering = True
            except OSError:
                answering = False
            if answering == up:
                return
            time.sleep(0.05)
        pytest.fail(f"redis-server on port {self.port} did not {'start' if up else 'stop'}")

    def stop(self, *, crash: bool = False):
        """Stop the server: SIGTERM, or with ``crash`` SIGKILL (no goodbye to its clients)."""
        if self.proc.poll() is None:
            self.proc.kill() if crash else self.proc.terminate()
            self.proc.wait(timeout=10)
        self._wait(up=False)


@pytest.fixture
def own_redis(tmp_path):
    """A redis-server started for this test (stop it with ``own_redis.stop()``)."""
    _require(bool(shutil.which("redis-server")), "needs the redis-server binary")
    server = OwnRedis(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def celery_worker_process(transactional_db, settings):
    """A real `celery worker` process on Redis, using this test's database.

    Yields the Popen; the code under test stops running tasks in-process for the duration."""
    from workbench.celery import app

    redis_url = os.environ.get("REDIS_URL", "")
    _require(bool(redis_url), "needs REDIS_URL=redis://…")
    _require(
        connection.vendor == "postgresql", "the worker shares the test database: needs PostgreSQL"
    )
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "worker-test-secret",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": redis_url,
    }
    name = f"test-{uuid.uuid4().hex[:8]}@%h"
    proc = _start_worker(env, name)
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        proc.worker_name = name
        yield proc
    finally:
        app.conf.task_always_eager = previous
        _stop(proc)


def _start_worker(env, name, *, ready_timeout=300):
    from workbench.celery import app

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workbench",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-gossip",
            "--without-mingle",
            "-Q",
            ",".join(
                queue.name for queue in app.conf.task_queues
            ),  # every queue, like `make worker`
            "-n",
            name,
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Wait on the condition (the worker answers a ping), not on a clock; the bound only ends the
    # wait for a worker that never starts (at load 12 one took over 60 s to import and answer).
    deadline_pings = int(ready_timeout / 0.5)
    for _ in range(deadline_pings):
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}")
        if app.control.ping(destination=[name.replace("%h", os.uname().nodename)], timeout=0.5):
            return proc
    _stop(proc)
    raise RuntimeError(f"celery worker did not answer pings within {ready_timeout}s")


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def start_worker(transactional_db):
    """Start extra workers (e.g. after killing one): ``start_worker(env_overrides)``."""
    started = []

    def start(env, name):
        proc = _start_worker(env, name)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        _stop(proc)


@pytest.fixture(scope="session")
def browser():
    _require(
        os.path.exists(CHROMIUM) or shutil.which("chromium"), "needs Chromium at /usr/bin/chromium"
    )
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def browser_login(browser, live_server):
    """Open a new browser context logged in as ``user`` through the real login form."""
    contexts = []

    def login(user, password=TEST_PASSWORD):
        context = browser.new_context(base_url=live_server.url)
        contexts.append(context)
        page = context.new_page()
        # a bound for a page that never comes, not a timing claim: at load 12 two flows needed
        # more than 15 s for one navigation
        page.set_default_timeout(60_000)
        page.goto("/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        return page

    yield login
    for context in contexts:
        context.close()


@pytest.fixture
def nist_file():
    _require(NIST_FILE.exists(), f"needs {NIST_FILE}")
    return NIST_FILE


# ---------------------------------------------------------------- a real OpenID Connect provider


class OidcProvider:
    """django-oauth-toolkit's OpenID Connect provider (``tests/oidc_provider``) in its own Django
    process on a free loopback port, on SQLite in a temporary directory, signing with an RSA key
    generated for this run."""

    CLIENT_ID = "goldset-workbench"
    CLIENT_SECRET = "test-client-secret-" + uuid.uuid4().hex

    def __init__(self, directory: Path):
        import socket

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key_file = directory / "idp-key.pem"
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.issuer = f"{self.url}/o"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
            "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
            "IDP_DIR": str(directory),
            "IDP_KEY_FILE": str(key_file),
            "IDP_ISSUER": self.issuer,
            "PYTHONPATH": str(ROOT),
        }
        self.log = directory / "idp.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.oidc_provider", str(self.port)],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_ready()

    def _wait_ready(self, deadline_s: float = 60.0):
        import time

        import httpx

        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the test identity provider exited:\n{self.log.read_text()}")
            try:
                if httpx.get(self.discovery_url, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"the test identity provider did not answer within {deadline_s}s")

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        response = httpx.post(f"{self.url}{path}", json=body, timeout=10)
        response.raise_for_status()
        return response.json()

    def set_user(self, username: str, password: str, groups=(), email: str = "") -> str:
        """Create or update a user at the provider; returns its subject (``sub``)."""
        body = {"username": username, "password": password, "groups": list(groups)}
        return self._post("/test/users/", {**body, "email": email})["sub"]

    def register_client(self, redirect_uri: str, post_logout_redirect_uri: str = "") -> None:
        self._post(
            "/test/client/",
            {
                "client_id": self.CLIENT_ID,
                "client_secret": self.CLIENT_SECRET,
                "redirect_uri": redirect_uri,
                "post_logout_redirect_uri": post_logout_redirect_uri,
            },
        )

    def workbench_settings(self) -> dict:
        """The workbench's OIDC_* settings for this provider (what .env would hold)."""
        return {
            "OIDC_ENABLED": True,
            "OIDC_PROVIDER_NAME": "Test IdP",
            "OIDC_RP_CLIENT_ID": self.CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": self.CLIENT_SECRET,
            "OIDC_RP_SIGN_ALGO": "RS256",
            "OIDC_OP_ISSUER": self.issuer,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.issuer}/authorize/",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.issuer}/token/",
            "OIDC_OP_USER_ENDPOINT": f"{self.issuer}/userinfo/",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.issuer}/.well-known/jwks.json",
            "OIDC_OP_LOGOUT_ENDPOINT": f"{self.issuer}/logout/",
            "OIDC_ROLE_CLAIM": "groups",
            "OIDC_ROLE_MAP": (
                "goldset-annotators:annotator,goldset-leads:lead,goldset-admins:admin"
            ),
        }

    def stop(self):
        _stop(self.proc)


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory):
    """A running test identity provider (see :class:`OidcProvider`), for the whole session."""
    provider = OidcProvider(tmp_path_factory.mktemp("oidc-provider"))
    yield provider
    provider.stop()


@pytest.fixture
def oidc_settings(settings, oidc_provider, live_server):
    """The workbench signs in through the test provider, which knows the live server's callback."""
    for name, value in oidc_provider.workbench_settings().items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [
        "workbench.auth.ThrottledModelBackend",
        "workbench.auth.RoleMappingOIDCBackend",
    ]
    # what workbench.settings adds for OIDC_OP_LOGOUT_ENDPOINT (the logout form's redirect)
    csp = settings.SECURE_CSP
    settings.SECURE_CSP = {**csp, "form-action": [*csp["form-action"], oidc_provider.url]}
    oidc_provider.register_client(
        f"{live_server.url}/oidc/callback/", post_logout_redirect_uri=f"{live_server.url}/login/"
    )
    return settings
