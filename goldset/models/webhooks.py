"""Webhooks: endpoints admins register for events, and one delivery row per (event, endpoint).

A delivery is created in the transaction of the action that raised the event, with an outbox
message that publishes its delivery task after commit (``goldset.services.webhooks``), so no
event is lost when the broker is down. Life cycle: pending → delivering (a worker claimed an
attempt) → succeeded, or back to pending with ``next_attempt_at`` (a retry), or failed once its
attempts are used."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class WebhookEvent(models.TextChoices):
    GOLD_VERSION_FROZEN = "gold_version.frozen", "Gold version frozen"
    SCORING_JOB_SUCCEEDED = "scoring_job.succeeded", "Scoring job finished"
    SCORING_JOB_FAILED = "scoring_job.failed", "Scoring job failed"
    ALERT_RAISED = "alert.raised", "Alert raised"
    IMPORT_FINISHED = "import.finished", "Import finished (imported, rejected or failed)"
    TAG_MOVED = "tag.moved", "Version tag created, moved or deleted"
    LABEL_SUBMITTED = "label.submitted", "Label submitted (production items)"
    ADJUDICATION_RECORDED = "adjudication.recorded", "Adjudication recorded"
    TRIPLE_RESOLVED = (
        "triple.resolved",
        "Triple's review round resolved (gold, discussion, dropped)",
    )


# Sent on an admin's request to one endpoint, whatever it subscribes to.
TEST_EVENT = "webhook.test"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERING = "delivering", "Delivering"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class WebhookEndpoint(models.Model):
    """Where events are posted. ``secret`` is the Standard Webhooks signing secret
    (``whsec_<base64>``): generated here, shown to the admin once, kept to sign deliveries."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    events = models.JSONField(default=list, blank=True)  # WebhookEvent values
    secret = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"webhook endpoint {self.pk} {self.url}"


class WebhookDelivery(models.Model):
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_type = models.CharField(max_length=40)
    # The Standard Webhooks message id (``webhook-id``): the same on every attempt, so receivers
    # can drop duplicates; one id per event, shared by the endpoints that receive it.
    message_id = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    status = models.CharField(
        max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=1)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    response_snippet = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "message_id"], name="webhook_delivery_unique_message"
            )
        ]
        indexes = [
            # the endpoint's delivery log, newest first
            models.Index(fields=["endpoint", "-id"], name="webhook_delivery_log"),
            # the reconciler: open deliveries by due time
            models.Index(
                fields=["status", "next_attempt_at"],
                condition=Q(status__in=["pending", "delivering"]),
                name="webhook_delivery_open",
            ),
        ]

    def __str__(self):
        return f"delivery {self.pk} {self.event_type} → endpoint {self.endpoint_id}"

    @property
    def finished(self) -> bool:
        return self.status in (DeliveryStatus.SUCCEEDED, DeliveryStatus.FAILED)
