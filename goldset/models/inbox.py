"""What waits for a user: in-app notifications, the e-mail preference, and calibration retake
requests (issue 14).

A :class:`Notification` is written by the service that makes the event, in the same transaction.
Repeated events of one thread (replies in one discussion, items reaching the adjudication queue)
share one *unread* notification per recipient through ``key``: the count goes up instead of a new
row appearing, so a busy day is one line, not fifty."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from goldset.models.corpus import Domain


class NotificationKind(models.TextChoices):
    DISCUSSION_OPENED = "discussion_opened", "Discussion opened"
    DISCUSSION_REPLY = "discussion_reply", "Reply in a discussion"
    REVISION = "revision", "Revision of a triple you flagged"
    CALIBRATION_FAILED = "calibration_failed", "Calibration not passed"
    RETAKE_REQUESTED = "retake_requested", "Calibration retake requested"
    RETAKE_DECIDED = "retake_decided", "Calibration retake answered"
    ADJUDICATION_WAITING = "adjudication_waiting", "Items await adjudication"
    TOKEN_EXPIRING = "token_expiring", "API token expires soon"


class Notification(models.Model):
    """One thing to tell one user. ``text`` is written for its recipient (display names, no
    system, run or model identity); ``link`` is a path inside the workbench. ``count`` > 1 when
    events of the same ``key`` were folded into this unread row (``created_at`` is the latest)."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    text = models.CharField(max_length=300)
    link = models.CharField(max_length=300, blank=True)
    key = models.CharField(max_length=100, blank=True)
    count = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One unread notification per project, recipient and thread: later events of the
            # project fold into it (a thread key of another project never does).
            models.UniqueConstraint(
                fields=["project", "recipient", "key"],
                condition=Q(read_at__isnull=True) & ~Q(key=""),
                name="notification_unread_key_once_per_project",
            )
        ]
        indexes = [
            # The list page: a user's notifications in a project, newest first (keyset on
            # created_at, id).
            models.Index(
                fields=["project", "recipient", "created_at", "id"],
                name="notification_project_list",
            ),
            # The badge and the inbox: a user's unread ones in a project, per kind.
            models.Index(
                fields=["project", "recipient", "kind"],
                condition=Q(read_at__isnull=True),
                name="notification_project_unread",
            ),
        ]

    def __str__(self):
        return f"{self.kind} → {self.recipient_id}"


class NotificationPreference(models.Model):
    """Per-user delivery choices; without a row, nothing is e-mailed (the default is off)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="notification_preference",
    )
    email = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"preferences of {self.user_id}"


class RetakeStatus(models.TextChoices):
    PENDING = "pending", "Waiting for a lead"
    GRANTED = "granted", "Granted"
    DECLINED = "declined", "Declined"


class CalibrationRetake(models.Model):
    """An annotator's request to retake a failed calibration, and the lead's answer.

    A grant starts attempt ``attempt`` with a fresh draw of the calibration set: ``draw_seed``
    and the pool reproduce ``drawn_items`` (public ids) through
    ``goldset.rules.calibration.draw_retake``. ``previous_attempt`` keeps the replaced attempt's
    result and labels, which the grant clears so the new attempt starts empty."""

    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="calibration_retakes"
    )
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="+")
    message = models.TextField(blank=True)
    status = models.CharField(
        max_length=10, choices=RetakeStatus.choices, default=RetakeStatus.PENDING
    )
    requested_at = models.DateTimeField(default=timezone.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    attempt = models.PositiveIntegerField(null=True, blank=True)
    draw_seed = models.BigIntegerField(null=True, blank=True)
    drawn_items = models.JSONField(default=list, blank=True)
    previous_attempt = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "domain"],
                condition=Q(status="pending"),
                name="retake_one_pending",
            )
        ]
        indexes = [
            models.Index(fields=["status", "requested_at", "id"], name="retake_by_status"),
            models.Index(fields=["annotator", "domain"], name="retake_annotator_domain"),
        ]

    def __str__(self):
        return f"retake {self.domain_id} {self.annotator_id}: {self.status}"
