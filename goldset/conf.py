"""The app's tunables: one typed table with documented defaults (seed 000 / 003 / 004, DESIGN.md
§5–§8), each overridable by an environment variable of the same name.

``workbench/settings.py`` reads every tunable from the environment into Django settings
(:func:`from_environment`); code reads them at call time through :func:`tunable` (or
:func:`curation_setting` for the ``CURATION_`` group), so tests change them with the ``settings``
fixture. ``.env.example`` lists every one (a test checks it).
"""

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _bool(raw: str) -> bool:
    return raw.strip().lower() in TRUE_WORDS


# A rule a value must keep: the value (parsed) and the project it is set for (None: the
# installation) → None when kept, else the rule in words ("a rate between 0 and 1").
Check = Callable[[Any, Any], str | None]


def _number(value) -> float | None:
    """``value`` as a finite float, None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def between(low, high, what: str = "a number") -> Check:
    def check(value, project=None):
        number = _number(value)
        if number is None or not low <= number <= high:
            return f"{what} between {low:g} and {high:g}"
        return None

    return check


def at_least(low, what: str = "a number") -> Check:
    def check(value, project=None):
        number = _number(value)
        if number is None or number < low:
            return f"{what} of at least {low:g}"
        return None

    return check


RATE = between(0, 1, "a rate")
TARGET = between(0, 1, "a target")
SEED = at_least(0, "an integer seed")
COUNT = at_least(1, "a count")
COST = at_least(0, "a cost")
SECONDS = at_least(0, "a duration")


def _source_targets(value, project=None) -> str | None:
    rule = "a JSON object of source → percent (each at least 0) summing to 100"
    if not isinstance(value, dict) or not value:
        return rule
    numbers = [_number(v) for v in value.values()]
    if any(n is None or n < 0 for n in numbers) or abs(sum(numbers) - 100) > 1e-9:
        return rule
    return None


def _pcs_calibration(value, project=None) -> str | None:
    """0 (the PROBE defaults) or a succeeded PCS calibration of the project."""
    rule = "0 or the number of a succeeded PCS calibration of this project"
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return rule
    if value == 0 or project is None:
        return None
    from goldset.models import CalibrationStatus, PcsCalibration  # conf loads before the apps

    found = PcsCalibration.objects.filter(
        project=project, pk=value, status=CalibrationStatus.SUCCEEDED
    ).exists()
    return None if found else rule


@dataclass(frozen=True)
class Tunable:
    name: str  # the Django setting and the environment variable
    default: Any
    parse: Callable[[str], Any]  # from the environment's text to the typed value
    doc: str
    # The rule a project's value must keep (goldset.services.project_settings refuses others).
    check: Check | None = None


TUNABLES: dict[str, Tunable] = {
    t.name: t
    for t in [
        # Curation (seed 000, DESIGN.md §5).
        Tunable(
            "CURATION_FLAG_RATE_THRESHOLD",
            Decimal("0.25"),
            Decimal,
            "Per-author flag rate above which a calibration session is needed.",
            check=RATE,
        ),
        Tunable(
            "CURATION_FLAG_RATE_MIN_REVIEWS",
            20,
            int,
            "Reviews an author needs before alerting.",
            check=COUNT,
        ),
        Tunable(
            "CURATION_FLAG_RATE_WINDOW_DAYS",
            28,
            int,
            "The rolling flag-rate window (days).",
            check=COUNT,
        ),
        Tunable(
            "CURATION_SOURCE_TARGETS",
            {"public_rfp": 40, "customer_permissioned": 30, "synthetic": 30},
            json.loads,
            "Gold-set source balance target in percent (JSON object).",
            check=_source_targets,
        ),
        Tunable(
            "CURATION_SOURCE_DRIFT_POINTS",
            10,
            int,
            "Drift from a target that raises a warning.",
            check=between(0, 100, "percentage points"),
        ),
        Tunable(
            "CURATION_WORKING_SLICE_SIZE",
            120,
            int,
            "Triples in the quarter's working slice.",
            check=COUNT,
        ),
        Tunable(
            "CURATION_SPOT_CHECK_RATE",
            Decimal("0.10"),
            Decimal,
            "Share of the week's TRIAGE gold triples drawn for a spot-check review.",
            check=RATE,
        ),
        Tunable(
            "CURATION_MAX_OPEN_ASSIGNMENTS",
            1,
            int,
            "Open review assignments a reviewer may hold ('next item' returns the oldest).",
            check=COUNT,
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
        Tunable(
            "AGREEMENT_BOOTSTRAP_RESAMPLES", 1000, int, "Bootstrap resamples per CI.", check=COUNT
        ),
        Tunable(
            "AGREEMENT_BOOTSTRAP_SEED",
            8821,
            int,
            "Seed of every agreement bootstrap CI.",
            check=SEED,
        ),
        Tunable(
            "AGREEMENT_PROCESSES",
            2,
            int,
            "Processes computing agreement figures in the recompute task (from a forkserver; 1 = in the task).",
        ),
        Tunable(
            "AGREEMENT_REFRESH_BUDGET",
            0.05,
            float,
            "Largest share of the time the agreement refreshes after labels and reviews may take: after a refresh of d seconds none starts for d × (1/budget − 1) seconds (1 = no limit).",
            check=between(0.01, 1, "a share of the time"),
        ),
        Tunable(
            "AGREEMENT_WARM_UP",
            True,
            _bool,
            "Worker processes of the default queue start the agreement computation as they start, not at their first recompute.",
        ),
        Tunable(
            "AGREEMENT_DEBOUNCE_SECONDS", 30, int, "Changes within this window share a recompute."
        ),
        Tunable(
            "AGREEMENT_MIN_ITEMS", 10, int, "Items a figure needs before it can alert.", check=COUNT
        ),
        Tunable(
            "AGREEMENT_ALPHA_TARGET", 0.75, float, "Gold Krippendorff's alpha target.", check=TARGET
        ),
        Tunable(
            "KAPPA_GATE",
            0.70,
            float,
            "The protocol's Cohen kappa gate: an annotator qualifies for a domain at it "
            "(calibration), a gold annotator pair alerts below it, an evaluator is trusted at it.",
            check=TARGET,
        ),
        Tunable(
            "SPOT_CHECK_DISAGREEMENT_LIMIT",
            0.12,
            float,
            "TRIAGE spot-check disagreement that alerts in two consecutive weeks.",
            check=RATE,
        ),
        Tunable(
            "AGREEMENT_OUTLIER_MARGIN",
            0.15,
            float,
            "An annotator this far below the others' agreement is an outlier.",
            check=between(0, 1, "a margin"),
        ),
        Tunable(
            "SEVERE_RATE_GAP_MARGIN",
            0.10,
            float,
            "Gap in severe-safety label rate from the others that alerts.",
            check=between(0, 1, "a margin"),
        ),
        # Answer labeling (seed 004 §3.5, A.2; goldset.services.labeling).
        Tunable(
            "AUDIT_SAMPLE_RATE",
            0.05,
            float,
            "Share of majority-settled answer records drawn into the lead's audit sample.",
            check=RATE,
        ),
        Tunable(
            "AUDIT_SAMPLE_SEED",
            9314,
            int,
            "Seed of the audit-sample draw (recorded per item).",
            check=SEED,
        ),
        Tunable(
            "ANSWER_SPOT_CHECK_RATE",
            0.10,
            float,
            "Share of the week's TRIAGE answer records drawn for a second label (spot check).",
            check=RATE,
        ),
        Tunable(
            "ANSWER_SPOT_CHECK_SEED",
            1003,
            int,
            "Seed of the spot-check draw (recorded per item).",
            check=SEED,
        ),
        Tunable(
            "LABEL_LOAD_TOLERANCE",
            0.10,
            float,
            "An annotator's cap in a domain: the fair share of its label slots plus this share.",
            check=at_least(0, "a share"),
        ),
        # Evaluators against the gold tier (seed 003/004, issue 24).
        Tunable(
            "EVALUATOR_MIN_COVERAGE",
            0.90,
            float,
            "Share of the gold tier's records a judge must have judged to be trusted on an axis.",
            check=RATE,
        ),
        Tunable(
            "LABELING_COST_GOLD",
            0.40,
            float,
            "Estimated labeling cost of a GOLD case ($).",
            check=COST,
        ),
        Tunable(
            "LABELING_COST_TRIAGE",
            0.16,
            float,
            "Estimated labeling cost of a TRIAGE case ($).",
            check=COST,
        ),
        Tunable(
            "LABEL_UNDO_WINDOW_SECONDS",
            120,
            int,
            "Seconds during which an annotator may undo their last label (item still unresolved).",
            check=SECONDS,
        ),
        Tunable(
            "REVIEW_UNDO_WINDOW_SECONDS",
            120,
            int,
            "Seconds during which a reviewer may undo their last triple review (still unresolved).",
            check=SECONDS,
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
            check=SECONDS,
        ),
        Tunable(
            "FAST_DECISION_SECONDS_TRIAGE",
            2.0,
            float,
            "A TRIAGE label, review or adjudication faster than this is flagged (0: off).",
            check=SECONDS,
        ),
        # Tiers (seed 003, DESIGN.md §7; goldset.rules.tiers): reviews a triple and labels an
        # answer record need before they settle (a review assignment holds at most 2, a record
        # at most 3: database constraints).
        Tunable(
            "GOLD_REVIEWS_PER_TRIPLE",
            2,
            int,
            "Independent reviews a GOLD triple revision needs before it settles.",
            check=between(1, 2, "a count of reviewers"),
        ),
        Tunable(
            "TRIAGE_REVIEWS_PER_TRIPLE",
            1,
            int,
            "Reviews a TRIAGE triple revision needs (2 once drawn for a spot check).",
            check=between(1, 2, "a count of reviewers"),
        ),
        Tunable(
            "GOLD_LABELS_PER_ITEM",
            3,
            int,
            "Independent labels a GOLD answer record needs before it settles.",
            check=between(1, 3, "a count of labels"),
        ),
        Tunable(
            "TRIAGE_LABELS_PER_ITEM",
            1,
            int,
            "Labels a TRIAGE answer record needs (2 once drawn for a spot check).",
            check=between(1, 3, "a count of labels"),
        ),
        Tunable(
            "QUEUE_SHUFFLE_SEED",
            6601,
            int,
            "Seed of the shuffled order of the labeling queue (each record's place is fixed when "
            "it is imported; each annotator's starting point follows the seed at once).",
            check=SEED,
        ),
        Tunable(
            "PCS_CALIBRATION",
            0,
            int,
            "The PCS calibration release reports and answer-log scoring use unless another is "
            "chosen (its number; 0: the PROBE defaults).",
            check=_pcs_calibration,
        ),
        # Promotion (issue 6; goldset.services.promotion).
        Tunable(
            "PROMOTION_BATCH_MAX",
            1000,
            int,
            "Cases one batch promotion promotes at most (the first matching by id).",
            check=COUNT,
        ),
        # Production traces over OTLP/HTTP (issue 28; goldset.services.traces).
        Tunable(
            "OTLP_MAX_BODY_BYTES",
            16 * 1024 * 1024,
            int,
            "Largest OTLP/HTTP traces request body (bytes, also after gunzip): 413 above, "
            "checked from Content-Length before the body is read.",
        ),
        Tunable(
            "OTLP_MAX_PENDING_TRACES",
            20_000,
            int,
            "Traces of a project waiting to be mapped beyond which the receiver answers 429 "
            "with Retry-After (back-pressure) and stores nothing.",
        ),
        Tunable(
            "OTLP_RETRY_AFTER_SECONDS",
            5,
            int,
            "The Retry-After of the receiver's 429 and 503 answers (seconds).",
        ),
        Tunable(
            "OTLP_INCOMPLETE_SECONDS",
            3600,
            int,
            "A trace still incomplete (a root or parent span never arrived) this long after its "
            "last span is rejected by the reconciler, with what it waited for (seconds).",
        ),
        Tunable(
            "OTLP_DROPPED_KEEP_DAYS",
            7,
            int,
            "Days the spans of a trace no sampling rule took (dropped or capped) are kept, so a "
            "later thumbs-down or judge verdict can still sample it; the reconciler deletes "
            "them after that (the trace's row and counts stay).",
        ),
        Tunable(
            "OTLP_MAP_BATCH",
            200,
            int,
            "Traces one mapping transaction claims (each in its own savepoint).",
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
        "GOLD_REVIEWS_PER_TRIPLE",
        "TRIAGE_REVIEWS_PER_TRIPLE",
        "GOLD_LABELS_PER_ITEM",
        "TRIAGE_LABELS_PER_ITEM",
        "QUEUE_SHUFFLE_SEED",
        "PCS_CALIBRATION",
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
