"""Stored agreement figures. Dashboards read these rows; a Celery task recomputes them."""

from django.db import models


class AgreementSnapshot(models.Model):
    """One figure for one scope: protocol × axis × metric × (tier, task type, domain, ISO week)
    and, for pairwise or per-annotator metrics, a subject. Empty scope fields mean "all"."""

    protocol = models.CharField(max_length=32)
    axis = models.CharField(max_length=48)
    metric = models.CharField(max_length=48)
    tier = models.CharField(max_length=16, blank=True)
    task_type = models.CharField(max_length=32, blank=True)
    domain = models.CharField(max_length=64, blank=True)
    week = models.CharField(max_length=8, blank=True)
    subject = models.CharField(max_length=128, blank=True)
    value = models.FloatField(null=True)
    reason = models.CharField(max_length=200, blank=True)
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    n_items = models.PositiveIntegerField(default=0)
    n_annotators = models.PositiveIntegerField(default=0)
    data_version = models.CharField(max_length=64)
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "protocol",
                    "axis",
                    "metric",
                    "tier",
                    "task_type",
                    "domain",
                    "week",
                    "subject",
                ],
                name="agreement_snapshot_scope_unique",
            )
        ]
        indexes = [models.Index(fields=["protocol", "metric", "tier"])]

    def __str__(self):
        return f"{self.protocol}/{self.axis}/{self.metric} {self.tier}{self.task_type}{self.domain}{self.week}{self.subject} = {self.value}"
