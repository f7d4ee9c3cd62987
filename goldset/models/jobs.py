"""Background work recorded in the database: the transactional outbox and the reconciler's runs.

A service that triggers background work inserts an :class:`OutboxMessage` in the same
transaction as the change, so the work is never lost when the broker is down: the relay
publishes it after commit, and the periodic reconciler publishes whatever is still pending
(or was published but never picked up) when the broker returns."""

from django.db import models
from django.db.models import Q
from django.utils import timezone


class OutboxMessage(models.Model):
    """One piece of work to publish to the broker. Life cycle: pending (``dispatched_at`` empty)
    → dispatched → started (a worker picked it up) → done. ``dedupe_key`` (when set) is unique
    among messages not yet started, which debounces repeated requests for the same work."""

    kind = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    dedupe_key = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    available_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Stamped while a worker does the message's work (agreement recomputes): a started message
    # is presumed lost only when this (or started_at) is older than JOB_STALE_SECONDS.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dedupe_key"],
                condition=Q(started_at__isnull=True) & ~Q(dedupe_key=""),
                name="outbox_dedupe_until_started",
            )
        ]
        indexes = [
            models.Index(
                fields=["kind", "created_at"],
                condition=Q(done_at__isnull=True),
                name="outbox_open_by_kind",
            )
        ]

    def __str__(self):
        return f"outbox #{self.pk} {self.kind}"


class ReconcilerRun(models.Model):
    """The reconciler's last run per trigger ("beat", "worker_start", "command"): /health/
    reports a missing beat from the "beat" row."""

    trigger = models.CharField(max_length=20, unique=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    summary = models.JSONField(default=dict, blank=True)

    def __str__(self):
        return f"reconciler run ({self.trigger}) at {self.started_at:%Y-%m-%d %H:%M:%S}"
