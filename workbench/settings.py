"""Settings for Goldset Workbench, driven entirely by environment variables.

Without any variables the *embedded default* is used: an SQLite file under ``var/`` and Celery
tasks executed in-process. ``DATABASE_URL`` (PostgreSQL via psycopg 3) and ``REDIS_URL``
(Celery broker, result backend and cache) switch to the team services with no code change.
Every variable is documented in ``.env.example``.
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from kombu import Queue

from goldset import conf as goldset_conf
from workbench.envfile import read_or_create_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
# An empty value (as in .env.example) means the default, never the current directory.
VAR_DIR = Path(environ.Env().str("WORKBENCH_VAR_DIR", default="") or BASE_DIR / "var")

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
# Team mode (docker-compose.yml) points SECRET_KEY_FILE at a shared volume: the first start
# writes a random key there, and every service reads the same one.
if not SECRET_KEY and env.str("SECRET_KEY_FILE", default=""):
    SECRET_KEY = read_or_create_secret_key(Path(env.str("SECRET_KEY_FILE")))
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG-on"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "workbench",
    "goldset",
]

MIDDLEWARE = [
    "workbench.middleware.QueryCountMiddleware",
    # Before every middleware that may answer on its own (413, a NUL byte's 400, static files):
    # every answer carries X-Request-ID, as the API's schema says.
    "workbench.middleware.RequestIdMiddleware",
    "workbench.middleware.RequestBodyGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "workbench.middleware.RejectNulBytesMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "workbench.middleware.ProjectMountMiddleware",
    "workbench.middleware.ApiWriteAuditMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "workbench.middleware.SessionSecurityMiddleware",
    "workbench.middleware.AccessMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

# Benchmarks only: answers say how many SQL statements they ran (``X-Query-Count``).
QUERY_COUNT_HEADER = env.bool("QUERY_COUNT_HEADER", default=False)

ROOT_URLCONF = "workbench.urls"
WSGI_APPLICATION = "workbench.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "workbench.context_processors.roles",
                "workbench.context_processors.sign_in",
                "goldset.context_processors.protocol",
            ],
            # ``{{ code|display }}`` in every template: one source of display names
            "builtins": [
                "goldset.templatetags.display",
                "goldset.templatetags.protocol",
                "goldset.templatetags.projects",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"].setdefault("OPTIONS", {})
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # The embedded default serves requests in threads beside its background task thread, all
    # writing one file. WAL lets readers run beside the writer; every transaction takes the
    # write lock when it begins (IMMEDIATE), so a second writer waits for it (up to the busy
    # timeout) instead of failing with "database is locked" when a read would turn into a
    # write; synchronous=NORMAL is durable across crashes of the process in WAL mode.
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": env.float("SQLITE_BUSY_TIMEOUT_SECONDS", default=20.0),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A slow statement must not hold a web worker (and its connection) for minutes; workers and
    # migrations set DB_STATEMENT_TIMEOUT_MS=0. JIT compilation only adds latency to the short,
    # index-driven statements the pages and claims run.
    DATABASES["default"]["OPTIONS"]["options"] = " ".join(
        [
            f"-c statement_timeout={env.int('DB_STATEMENT_TIMEOUT_MS', default=30000)}",
            "-c jit=off",
        ]
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "goldset",
            # A cache outage must answer fast, never hang a request.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: the embedded default runs tasks in-process; with REDIS_URL they go to real workers.
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
# In the embedded default, tasks run in a background thread of the web process after the
# response (workbench.embedded), as a worker would run them; false runs them inside the request
# that queued them (the old embedded behaviour; the test overlay's).
EMBEDDED_BACKGROUND_TASKS = env.bool("EMBEDDED_BACKGROUND_TASKS", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=600)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=660)
# A prefork pool child whose resident memory exceeds this (KiB) after a task is replaced by a
# fresh one, so one large scoring job's peak is not kept for the next tasks (issue 24).
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env.int(
    "CELERY_WORKER_MAX_MEMORY_PER_CHILD", default=1_000_000
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXPIRES = 3600
# A broker outage fails a publish within seconds (the outbox keeps the work); never hang.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 10}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 10
# A task running when the broker connection drops keeps running (a recompute or a scoring job is
# not killed by a Redis restart); its message may be delivered again, and tasks are idempotent.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# kombu's Redis transport, fixed so a worker survives Redis restarting while it holds an
# unacknowledged message (workbench.broker says why).
if REDIS_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT = "workbench.broker:Transport"
# Three queues. Jobs (imports, scoring and its pieces, agreement recomputes, e-mails) go to the
# default queue; the reconciler has its own, so no backlog of jobs delays it, and so have webhook
# deliveries, so an endpoint that times out or fails never delays a job. A worker started without
# -Q consumes all three; docker-compose.yml runs one worker per queue (README, "Workers, beat and
# the reconciler"). /health/ fails while a queue has no worker.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = [Queue(name) for name in ("celery", "reconcile", "webhooks")]
CELERY_TASK_ROUTES = {
    "goldset.reconcile": {"queue": "reconcile"},
    "goldset.deliver_webhook": {"queue": "webhooks"},
}

# Jobs that always end (goldset.services.jobs). A running job whose heartbeat is older than
# JOB_STALE_SECONDS lost its worker: a redelivered task takes it over, or the reconciler requeues
# it; after JOB_MAX_ATTEMPTS attempts it fails with a message. Workers write a heartbeat every
# JOB_HEARTBEAT_SECONDS. A published message no worker picked up within
# OUTBOX_REDISPATCH_SECONDS is published again.
# The reconciler runs every RECONCILE_INTERVAL_SECONDS under Celery beat (`celery -A workbench
# beat`, a service of docker-compose.yml). /health/ reports a missing beat when its last run is
# older than three intervals. The embedded default needs no beat: work runs in-process at commit.
# These and the protocol's other tunables (goldset.conf.TUNABLES: documented defaults, typed) are
# each overridable by an environment variable of the same name.
TUNABLES = goldset_conf.from_environment(os.environ)
if not env.str("JOB_HEARTBEAT_SECONDS", default=""):
    TUNABLES["JOB_HEARTBEAT_SECONDS"] = min(10.0, TUNABLES["JOB_STALE_SECONDS"] / 4)
globals().update(TUNABLES)
CELERY_BEAT_SCHEDULE = {
    "reconcile-jobs": {
        "task": "goldset.reconcile",
        "schedule": float(TUNABLES["RECONCILE_INTERVAL_SECONDS"]),
        # No expiry: a pass waiting on its queue runs late, never silently not at all.
    },
    # API tokens ending within a week: their owners are told once (workbench.services.identity).
    "notify-expiring-tokens": {"task": "workbench.notify_expiring_tokens", "schedule": 6 * 3600.0},
}

# REST API v1 (goldset.views.api): who may call what comes from workbench.access, errors are
# application/problem+json, lists paginate with cursors.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "goldset.views.api_access.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "goldset.views.api_access.AccessTablePermission",
        "goldset.views.api_access.TokenScopePermission",
        "goldset.views.api_access.IdempotencyKeyPermission",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["goldset.views.api_access.PerTokenRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "goldset.views.api_support.Cursor",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["goldset.views.api_parsers.DepthLimitedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "goldset.views.api_support.problem_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# Requests per API token (or signed-in user) per period: "<n>/sec|min|hour|day".
API_TOKEN_RATE = env.str("API_TOKEN_RATE", default="600/min")
# Notification e-mail (a per-user choice, off by default), sent by a Celery task: EMAIL_URL picks
# the backend (default smtp://localhost:25; consolemail:// prints them); links in e-mails start with
# WORKBENCH_BASE_URL.
_email = env.email_url_config(env.str("EMAIL_URL", default="") or "smtp://localhost:25")
_smtp = {
    option: _email[name]
    for option, name in [
        ("host", "EMAIL_HOST"),
        ("port", "EMAIL_PORT"),
        ("username", "EMAIL_HOST_USER"),
        ("password", "EMAIL_HOST_PASSWORD"),
        ("use_tls", "EMAIL_USE_TLS"),
        ("use_ssl", "EMAIL_USE_SSL"),
    ]
    if _email.get(name) not in (None, "")
}
MAILERS = {
    "default": {
        "BACKEND": _email["EMAIL_BACKEND"],
        "OPTIONS": _smtp if _email["EMAIL_BACKEND"].endswith("smtp.EmailBackend") else {},
    }
}
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="") or "goldset-workbench@localhost"
WORKBENCH_BASE_URL = env.str("WORKBENCH_BASE_URL", default="")
SPECTACULAR_SETTINGS = {
    "TITLE": "Goldset Workbench API",
    "DESCRIPTION": (
        "**Projects.** An installation holds several projects (gold sets). Every path below "
        "except `/api/v1/projects/`, `/api/v1/schema/` and `/api/v1/docs/` also exists under "
        "a project's prefix, `/api/v1/projects/{project}/…` (e.g. "
        "`/api/v1/projects/customer-bot/documents/`), and answers with that project's objects "
        "only; without the prefix the default project answers. `GET /api/v1/projects/` lists "
        "the caller's projects with the role held in each, and `POST` creates one "
        "(installation admins). The project itself is its prefix's root: `/api/v1/` below is "
        "`/api/v1/projects/{project}/` (read, change, delete the project), and `settings/` "
        "and `members/` are its settings and members. A project the caller is not a "
        "member of, or that the token is not for, is a 404. Links and `Location` headers keep "
        "the prefix the request came through."
    ),
    "VERSION": "1",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # The docs page's scripts and styles come from drf-spectacular-sidecar: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "goldset.views.api_support.document_problems",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ImportKindEnum": "goldset.models.imports.ImportKind",
        "ImportStatusEnum": "goldset.models.imports.ImportStatus",
        "RunKindEnum": "goldset.models.scoring.RunKind",
        "JobStatusEnum": "goldset.models.scoring.JobStatus",
        "FailureCategoryEnum": "goldset.models.answers.FailureCategory",
        # what a reviewer presses on a pair (a judgment asked for and a judgment shown)
        "PairChoiceEnum": "goldset.rules.pairwise.CHOICES",
        # a preference relative to a pair's answers A and B (a judgment, a calibration reference)
        "PreferenceEnum": "goldset.models.pairwise.Preference",
        "SamplingRuleKindEnum": "goldset.models.traces.SamplingRuleKind",
        # a role in a project (the project list, a project, its members)
        "RoleEnum": "workbench.roles.Role",
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Brute-force protection for every password form (see workbench.services.login_throttle):
# per (account, address) a lock, per account a growing delay for the addresses that failed on it
# (never for a fresh one: no one locks the owner out), per address a growing delay; in the database.
AUTHENTICATION_BACKENDS = ["workbench.auth.ThrottledModelBackend"]
LOGIN_MAX_FAILURES = env.int("LOGIN_MAX_FAILURES", default=5)
LOGIN_ACCOUNT_MAX_FAILURES = env.int("LOGIN_ACCOUNT_MAX_FAILURES", default=20)
LOGIN_ACCOUNT_MAX_DELAY_SECONDS = env.int("LOGIN_ACCOUNT_MAX_DELAY_SECONDS", default=300)
LOGIN_LOCKOUT_SECONDS = env.int("LOGIN_LOCKOUT_SECONDS", default=900)
LOGIN_ADDRESS_SLOWDOWN_AFTER = env.int("LOGIN_ADDRESS_SLOWDOWN_AFTER", default=10)
LOGIN_ADDRESS_MAX_DELAY_SECONDS = env.int("LOGIN_ADDRESS_MAX_DELAY_SECONDS", default=60)
# LOCAL_PASSWORDS_ENABLED=false refuses every password form (the login page and the Django
# admin's) in that backend; API tokens and OpenID Connect keep working.
LOCAL_PASSWORDS_ENABLED = env.bool("LOCAL_PASSWORDS_ENABLED", default=True)

# OpenID Connect sign-in (mozilla-django-oidc; workbench.auth.RoleMappingOIDCBackend). Each
# sign-in creates or updates the user and sets the role from OIDC_ROLE_CLAIM through
# OIDC_ROLE_MAP ("claim-value:role,claim-value:project-slug:role,…"; workbench.roles
# .parse_role_map): value:role is the default project's role; no mapped value: refused.
OIDC_ENABLED = env.bool("OIDC_ENABLED", default=False)
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="your identity provider")
OIDC_RP_CLIENT_ID = env.str("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_RP_CLIENT_SECRET", default="")
OIDC_RP_SIGN_ALGO = env.str("OIDC_RP_SIGN_ALGO", default="RS256")
OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", default="openid email profile")
OIDC_OP_ISSUER = env.str("OIDC_OP_ISSUER", default="")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env.str("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env.str("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env.str("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_OP_LOGOUT_ENDPOINT = env.str("OIDC_OP_LOGOUT_ENDPOINT", default="")
OIDC_ROLE_CLAIM = env.str("OIDC_ROLE_CLAIM", default="groups")
OIDC_ROLE_MAP = env.str("OIDC_ROLE_MAP", default="")
OIDC_USE_PKCE = env.bool("OIDC_USE_PKCE", default=True)
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT", default=10.0)
OIDC_STORE_ID_TOKEN = True  # the hint for the provider's logout (OIDC_OP_LOGOUT_ENDPOINT)
OIDC_CREATE_USER = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
if OIDC_ENABLED:
    AUTHENTICATION_BACKENDS.append("workbench.auth.RoleMappingOIDCBackend")

# SAML 2.0 sign-in (pysaml2; workbench.saml). The IdP's metadata is a local file (download it
# from the IdP once); the SP's metadata is served at /saml/metadata/. Roles come from the
# SAML_ROLE_ATTRIBUTE attribute through SAML_ROLE_MAP, the syntax of OIDC_ROLE_MAP.
SAML_ENABLED = env.bool("SAML_ENABLED", default=False)
SAML_PROVIDER_NAME = env.str("SAML_PROVIDER_NAME", default="your identity provider")
SAML_IDP_METADATA_FILE = env.str("SAML_IDP_METADATA_FILE", default="")
SAML_SP_BASE_URL = env.str("SAML_SP_BASE_URL", default="")  # https://goldset.example.org
SAML_SP_KEY_FILE = env.str("SAML_SP_KEY_FILE", default="")  # signs requests and logouts
SAML_SP_CERT_FILE = env.str("SAML_SP_CERT_FILE", default="")
SAML_ROLE_ATTRIBUTE = env.str("SAML_ROLE_ATTRIBUTE", default="groups")
SAML_ROLE_MAP = env.str("SAML_ROLE_MAP", default="")
SAML_ALLOW_IDP_INITIATED = env.bool("SAML_ALLOW_IDP_INITIATED", default=False)
SAML_CLOCK_SKEW_SECONDS = env.int("SAML_CLOCK_SKEW_SECONDS", default=120)
SAML_XMLSEC_BINARY = env.str("SAML_XMLSEC_BINARY", default="/usr/bin/xmlsec1")

# Reverse proxies in front of the app that append to X-Forwarded-For (0: use REMOTE_ADDR).
TRUSTED_PROXY_HOPS = env.int("TRUSTED_PROXY_HOPS", default=0)

# /health/: anonymous callers get a liveness answer memoised this long; the detailed report
# (database, broker, workers) is for admins and requests carrying X-Health-Token: HEALTH_TOKEN.
HEALTH_LIVENESS_CACHE_SECONDS = env.int("HEALTH_LIVENESS_CACHE_SECONDS", default=5)
HEALTH_TOKEN = env.str("HEALTH_TOKEN", default="")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_ROOT = VAR_DIR / "media"
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=50 * 1024 * 1024)
# Every upload page (corpus, triples, questions, answer logs, runs) refuses files larger than
# IMPORT_MAX_UPLOAD_BYTES (a tunable, goldset.conf). Uploads are written, while Django parses the
# request, into IMPORT_STORAGE_DIR (hashed as they arrive), and an accepted one is renamed there
# for the worker: a directory web and worker processes share (a volume in docker-compose.yml).
IMPORT_STORAGE_DIR = Path(env.str("IMPORT_STORAGE_DIR", default="") or VAR_DIR / "imports")
FILE_UPLOAD_HANDLERS = ["goldset.imports.uploads.ImportUploadHandler"]

# Evaluators against the gold tier (seed 004 A.1: 10,000 bootstrap resamples; trust at the κ gate,
# KAPPA_GATE in goldset.conf).
GOLDSET_EVALUATOR_RESAMPLES = env.int("GOLDSET_EVALUATOR_RESAMPLES", default=10_000)

# Security: strict by default, relaxed only with DEBUG on (local development).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if OIDC_ENABLED and OIDC_OP_LOGOUT_ENDPOINT:
    # Logging out is a form whose redirect ends at the provider's logout: form-action allows it.
    _logout = urlsplit(OIDC_OP_LOGOUT_ENDPOINT)
    SECURE_CSP["form-action"].append(f"{_logout.scheme}://{_logout.netloc}")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Health checks (compose, load balancers) speak plain HTTP inside the network: never redirect them.
SECURE_REDIRECT_EXEMPT = [r"^health/$"]
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", default=False) else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
# Sessions: idle timeout and absolute lifetime (workbench.middleware.SessionSecurityMiddleware).
SESSION_IDLE_TIMEOUT_SECONDS = env.int("SESSION_IDLE_TIMEOUT_SECONDS", default=30 * 60)
SESSION_ABSOLUTE_TIMEOUT_SECONDS = env.int("SESSION_ABSOLUTE_TIMEOUT_SECONDS", default=12 * 3600)
SESSION_COOKIE_AGE = SESSION_ABSOLUTE_TIMEOUT_SECONDS
# An active session's last-seen time is written at most this often (no write per request).
SESSION_SEEN_WRITE_SECONDS = env.int("SESSION_SEEN_WRITE_SECONDS", default=60)
# Free text (rationales, comments, messages, questions, answers) is capped in the services.
FREE_TEXT_MAX_CHARS = env.int("FREE_TEXT_MAX_CHARS", default=20_000)
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # pysaml2's schema library reports every schema it loads at INFO, at import
    "loggers": {"xmlschema": {"level": "WARNING"}},
}
