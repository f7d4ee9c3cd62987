"""Names shared by the services that queue background work, the reconciler, the tasks and the
pages that read it: outbox message kinds and the tasks they publish."""

from goldset.conf import tunable

# Outbox message kinds (goldset.services.outbox); each kind registers how it is published.
SCORING_OUTBOX_KIND = "scoring.run"
AGREEMENT_OUTBOX_KIND = "agreement.recompute"
IMPORT_OUTBOX_KIND = "imports.run"
# One debounced agreement recompute request at a time (the outbox's dedupe key).
AGREEMENT_DEBOUNCE_KEY = "agreement-recompute"
# The periodic reconciler's task (scheduled by Celery beat, settings.CELERY_BEAT_SCHEDULE).
RECONCILE_TASK = "goldset.reconcile"


def scoring_dedupe_key(job_id: int) -> str:
    """At most one unstarted scoring message per job."""
    return f"scoring-job:{job_id}"


def import_dedupe_key(job_id: int) -> str:
    """At most one unstarted import message per import job."""
    return f"import-job:{job_id}"


def calibration_dedupe_key(calibration_id: int) -> str:
    """At most one unstarted message per PCS calibration."""
    return f"pcs-calibration:{calibration_id}"


# Production traces (goldset.services.traces): one open mapping request per project; the task
# maps every trace of the project waiting to be mapped.
TRACES_OUTBOX_KIND = "traces.map"
MAP_TRACES_TASK = "goldset.map_traces"


def traces_dedupe_key(project_id: int) -> str:
    """At most one unstarted mapping message per project (a request while one waits is
    merged into it: that pass maps its traces too)."""
    return f"traces-map:{project_id}"


# Notification e-mails (goldset.services.notifications): one message per batch of notifications.
NOTIFICATION_EMAIL_OUTBOX_KIND = "notifications.email"
NOTIFICATION_EMAIL_TASK = "goldset.send_notification_emails"


def job_time_limits() -> dict[str, int]:
    """Celery time limits of the tasks that run heartbeat-watched jobs (imports, scoring and its
    pieces, PCS calibrations, agreement recomputes). A lost worker is found by the heartbeat; Celery's generic limit
    (``CELERY_TASK_SOFT_TIME_LIMIT``, 10 minutes) would fail every such job that legitimately
    runs longer (a 200 MB questions import took 26 minutes in BENCHMARKS.md). Their own limit,
    ``JOB_TIME_LIMIT_SECONDS``, only ends a job whose worker is alive but stuck; the hard
    limit follows a minute later. The limits travel in each message, set by the publisher."""
    soft = tunable("JOB_TIME_LIMIT_SECONDS")
    return {"soft_time_limit": soft, "time_limit": soft + 60}
