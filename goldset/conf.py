"""The app's tunables: one typed table with documented defaults (seed 000 / 003 / 004, DESIGN.md
§5–§8), each overridable by an environment variable of the same name.

``workbench/settings.py`` reads every tunable from the environment into Django settings
(:func:`from_environment`); code reads them at call time through :func:`tunable` (or
:func:`curation_setting` for the ``CURATION_`` group), so tests change them with the ``settings``
fixture. ``.env.example`` lists every one (a test checks it).
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings


def _bool(raw: str) -> bool:
    return raw.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Tunable:
    name: str  # the Django setting and the environment variable
    default: Any
    parse: Callable[[str], Any]  # from the environment's text to the typed value
    doc: str


TUNABLES: dict[str, Tunable] = {
    t.name: t
    for t in [
        # Curation (seed 000, DESIGN.md §5).
        Tunable(
            "CURATION_FLAG_RATE_THRESHOLD",
            Decimal("0.25"),
            Decimal,
            "Per-author flag rate above which a calibration session is needed.",
        ),
        Tunable(
            "CURATION_FLAG_RATE_MIN_REVIEWS", 20, int, "Reviews an author needs before alerting."
        ),
        Tunable("CURATION_FLAG_RATE_WINDOW_DAYS", 28, int, "The rolling flag-rate window (days)."),
        Tunable(
            "CURATION_SOURCE_TARGETS",
            {"public_rfp": 40, "customer_permissioned": 30, "synthetic": 30},
            json.loads,
            "Gold-set source balance target in percent (JSON object).",
        ),
        Tunable(
            "CURATION_SOURCE_DRIFT_POINTS", 10, int, "Drift from a target that raises a warning."
        ),
        Tunable("CURATION_WORKING_SLICE_SIZE", 120, int, "Triples in the quarter's working slice."),
        Tunable(
            "CURATION_SPOT_CHECK_RATE",
            Decimal("0.10"),
            Decimal,
            "Share of the week's TRIAGE gold triples drawn for a spot-check review.",
        ),
        Tunable(
            "CURATION_MAX_OPEN_ASSIGNMENTS",
            1,
            int,
            "Open review assignments a reviewer may hold ('next item' returns the oldest).",
        ),
        Tunable(
            "CURATION_FRESH_REVIEWERS_ON_REVISION",
            True,
            _bool,
            "A revision after a discussion goes to reviewers who did not review earlier ones.",
        ),
        # Jobs that always end (goldset.services.jobs, outbox, scoring_jobs).
        Tunable(
            "JOB_STALE_SECONDS",
            120,
            int,
            "A running job without a heartbeat this long lost its worker (requeued or failed).",
        ),
        Tunable(
            "JOB_HEARTBEAT_SECONDS",
            10.0,
            float,
            "Workers beat this often (unset: min(10, JOB_STALE_SECONDS / 4)).",
        ),
        Tunable("JOB_MAX_ATTEMPTS", 3, int, "Attempts before a job fails with a message."),
        Tunable(
            "JOB_TIME_LIMIT_SECONDS",
            6 * 3600,
            int,
            "Celery soft time limit of import, scoring and calibration tasks (hard: a minute "
            "later); their liveness is the heartbeat, not CELERY_TASK_SOFT_TIME_LIMIT.",
        ),
        # Scoring spread over workers (goldset.services.scoring_chunks).
        Tunable(
            "SCORING_SPLIT_MIN_QUERIES",
            50_000,
            int,
            "Retrieval jobs with at least this many gold queries are split over the workers.",
        ),
        Tunable(
            "SCORING_CHUNK_QUERIES",
            25_000,
            int,
            "Queries in one piece of a split job (each bootstrap interval is a piece too).",
        ),
        Tunable(
            "OUTBOX_REDISPATCH_SECONDS",
            90,
            int,
            "A published message no worker picked up within this is published again (at the "
            "reconciler's next pass: within this plus RECONCILE_INTERVAL_SECONDS, 2 minutes).",
        ),
        Tunable(
            "RECONCILE_INTERVAL_SECONDS", 30, int, "The reconciler runs this often (Celery beat)."
        ),
        Tunable(
            "IMPORT_MAX_UPLOAD_BYTES",
            1 << 30,
            int,
            "Largest file any upload page accepts (bytes).",
        ),
        Tunable(
            "API_TOKEN_MAX_LIFETIME_DAYS",
            0,
            int,
            "Longest lifetime of an API token (days; 0: a token may never expire).",
        ),
        Tunable(
            "REQUEST_BODY_TIMEOUT_SECONDS",
            30.0,
            float,
            "Longest wait for the next bytes of a request body under gunicorn (s): 408/400.",
        ),
        Tunable(
            "IMPORT_ORPHAN_SECONDS",
            3600,
            int,
            "Stored upload files no unfinished import refers to are deleted once this old (s).",
        ),
        Tunable(
            "IMPORT_RETRY_KEEP_SECONDS",
            24 * 3600,
            int,
            "A failed or cancelled import keeps its file this long for a retry (s).",
        ),
        # Webhooks (goldset.services.webhooks).
        Tunable(
            "WEBHOOKS_ALLOW_PRIVATE_TARGETS",
            False,
            _bool,
            "Allow webhook targets on private, loopback, link-local or reserved addresses.",
        ),
        Tunable("WEBHOOKS_MAX_ATTEMPTS", 8, int, "Attempts per webhook delivery before it fails."),
        Tunable(
            "WEBHOOKS_RETRY_BASE_SECONDS",
            10.0,
            float,
            "First retry delay; doubles per attempt (capped, with up to 25 % jitter).",
        ),
        Tunable("WEBHOOKS_RETRY_MAX_SECONDS", 3600.0, float, "Longest delay between two attempts."),
        Tunable(
            "WEBHOOKS_TIMEOUT_SECONDS", 10.0, float, "Connect and read timeout of one attempt."
        ),
        Tunable(
            "WEBHOOKS_LINK_BASE_URL",
            "",
            str,
            "Prefix of the links in webhook payloads (e.g. https://goldset.example.org).",
        ),
        # Agreement (seed 003, DESIGN.md §8).
        Tunable("AGREEMENT_BOOTSTRAP_RESAMPLES", 1000, int, "Bootstrap resamples per CI."),
        Tunable("AGREEMENT_BOOTSTRAP_SEED", 8821, int, "Seed of every agreement bootstrap CI."),
        Tunable(
            "AGREEMENT_PROCESSES",
            2,
            int,
            "Processes computing agreement figures in the recompute task (from a forkserver; 1 = in the task).",
        ),
        Tunable(
            "AGREEMENT_DEBOUNCE_SECONDS", 30, int, "Changes within this window share a recompute."
        ),
        Tunable("AGREEMENT_MIN_ITEMS", 10, int, "Items a figure needs before it can alert."),
        Tunable("AGREEMENT_ALPHA_TARGET", 0.75, float, "Gold Krippendorff's alpha target."),
        Tunable(
            "KAPPA_GATE",
            0.70,
            float,
            "The protocol's Cohen kappa gate: an annotator qualifies for a domain at it "
            "(calibration), a gold annotator pair alerts below it, an evaluator is trusted at it.",
        ),
        Tunable(
            "SPOT_CHECK_DISAGREEMENT_LIMIT",
            0.12,
            float,
            "TRIAGE spot-check disagreement that alerts in two consecutive weeks.",
        ),
        Tunable(
            "AGREEMENT_OUTLIER_MARGIN",
            0.15,
            float,
            "An annotator this far below the others' agreement is an outlier.",
        ),
        Tunable(
            "SEVERE_RATE_GAP_MARGIN",
            0.10,
            float,
            "Gap in severe-safety label rate from the others that alerts.",
        ),
        # Answer labeling (seed 004 §3.5, A.2; goldset.services.labeling).
        Tunable(
            "AUDIT_SAMPLE_RATE",
            0.05,
            float,
            "Share of majority-settled answer records drawn into the lead's audit sample.",
        ),
        Tunable(
            "AUDIT_SAMPLE_SEED", 9314, int, "Seed of the audit-sample draw (recorded per item)."
        ),
        Tunable(
            "ANSWER_SPOT_CHECK_RATE",
            0.10,
            float,
            "Share of the week's TRIAGE answer records drawn for a second label (spot check).",
        ),
        Tunable(
            "ANSWER_SPOT_CHECK_SEED", 1003, int, "Seed of the spot-check draw (recorded per item)."
        ),
        Tunable(
            "LABEL_LOAD_TOLERANCE",
            0.10,
            float,
            "An annotator's cap in a domain: the fair share of its label slots plus this share.",
        ),
        # Evaluators against the gold tier (seed 003/004, issue 24).
        Tunable(
            "EVALUATOR_MIN_COVERAGE",
            0.90,
            float,
            "Share of the gold tier's records a judge must have judged to be trusted on an axis.",
        ),
        Tunable("LABELING_COST_GOLD", 0.40, float, "Estimated labeling cost of a GOLD case ($)."),
        Tunable(
            "LABELING_COST_TRIAGE", 0.16, float, "Estimated labeling cost of a TRIAGE case ($)."
        ),
        Tunable(
            "LABEL_UNDO_WINDOW_SECONDS",
            120,
            int,
            "Seconds during which an annotator may undo their last label (item still unresolved).",
        ),
        Tunable(
            "REVIEW_UNDO_WINDOW_SECONDS",
            120,
            int,
            "Seconds during which a reviewer may undo their last triple review (still unresolved).",
        ),
        Tunable(
            "SUBMIT_LOCK_TIMEOUT_MS",
            5000,
            int,
            "A label, review or adjudication submit waits this long for a row held elsewhere, "
            "then is retried once; after the second wait it answers 503 (nothing stored).",
        ),
        # Time on item (issue 14; goldset.rules.time_on_item).
        Tunable(
            "ACTIVE_IDLE_GAP_SECONDS",
            60,
            int,
            "A gap without input longer than this is idle and left out of the active time.",
        ),
        Tunable(
            "ACTIVE_TIME_SLACK_MS",
            2000,
            int,
            "A client's active time is capped at the server time plus this (ms).",
        ),
        Tunable(
            "FAST_DECISION_SECONDS_GOLD",
            5.0,
            float,
            "A GOLD label, review or adjudication faster than this is flagged to leads (0: off).",
        ),
        Tunable(
            "FAST_DECISION_SECONDS_TRIAGE",
            2.0,
            float,
            "A TRIAGE label, review or adjudication faster than this is flagged (0: off).",
        ),
        # Promotion (issue 6; goldset.services.promotion).
        Tunable(
            "PROMOTION_BATCH_MAX",
            1000,
            int,
            "Cases one batch promotion promotes at most (the first matching by id).",
        ),
    ]
}


# The protocol numbers a project may override (DESIGN.md §15): the environment gives the
# installation default, ``Project.settings`` the project's value (as the environment's text).
PROJECT_TUNABLES = frozenset(
    {
        "CURATION_FLAG_RATE_THRESHOLD",
        "CURATION_FLAG_RATE_MIN_REVIEWS",
        "CURATION_FLAG_RATE_WINDOW_DAYS",
        "CURATION_SOURCE_TARGETS",
        "CURATION_SOURCE_DRIFT_POINTS",
        "CURATION_WORKING_SLICE_SIZE",
        "CURATION_SPOT_CHECK_RATE",
        "CURATION_MAX_OPEN_ASSIGNMENTS",
        "CURATION_FRESH_REVIEWERS_ON_REVISION",
        "AGREEMENT_BOOTSTRAP_RESAMPLES",
        "AGREEMENT_BOOTSTRAP_SEED",
        "AGREEMENT_MIN_ITEMS",
        "AGREEMENT_ALPHA_TARGET",
        "KAPPA_GATE",
        "SPOT_CHECK_DISAGREEMENT_LIMIT",
        "AGREEMENT_OUTLIER_MARGIN",
        "SEVERE_RATE_GAP_MARGIN",
        "AUDIT_SAMPLE_RATE",
        "AUDIT_SAMPLE_SEED",
        "ANSWER_SPOT_CHECK_RATE",
        "ANSWER_SPOT_CHECK_SEED",
        "LABEL_LOAD_TOLERANCE",
        "EVALUATOR_MIN_COVERAGE",
        "LABELING_COST_GOLD",
        "LABELING_COST_TRIAGE",
        "LABEL_UNDO_WINDOW_SECONDS",
        "REVIEW_UNDO_WINDOW_SECONDS",
        "FAST_DECISION_SECONDS_GOLD",
        "FAST_DECISION_SECONDS_TRIAGE",
        "PROMOTION_BATCH_MAX",
    }
)


def installation_default(name: str) -> Any:
    """A tunable's installation value (a Django setting, else its documented default)."""
    return getattr(settings, name, TUNABLES[name].default)


def tunable(name: str, *, project=None) -> Any:
    """The value in force: ``project``'s own value for a per-project tunable when it set one,
    else the installation's (a Django setting, else the documented default). Code that works in
    a project passes it; installation-level tunables (jobs, imports, webhooks) take none."""
    if project is not None and name in PROJECT_TUNABLES:
        raw = (project.settings or {}).get(name)
        if raw is not None:
            return TUNABLES[name].parse(raw)
    return installation_default(name)


def curation_setting(name: str, *, project=None) -> Any:
    """``tunable("CURATION_<name>", project=project)``."""
    return tunable(f"CURATION_{name}", project=project)


def from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    """Every tunable, parsed from ``environ`` where set there, else its default."""
    return {
        t.name: t.parse(environ[t.name]) if environ.get(t.name, "") != "" else t.default
        for t in TUNABLES.values()
    }
