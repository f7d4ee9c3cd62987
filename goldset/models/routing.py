"""Tiers and the routing rules that pick them (seed 003). Rules are data: every edit is a new
version, and every routed case stores the version and the rule that fired."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class Tier(models.TextChoices):
    TRIAGE = "tier_a", "TRIAGE (tier A)"
    GOLD = "tier_b", "GOLD (tier B)"


class RoutingRules(models.Model):
    """One immutable version of the routing rules. The newest version is in force."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    version = models.PositiveIntegerField()
    gold_task_types = models.JSONField(default=list)
    uncertainty_threshold = models.DecimalField(max_digits=4, decimal_places=3)
    adversarial_routes_gold = models.BooleanField(default=True)
    gold_domains = models.JSONField(default=list, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "version"], name="routing_rules_version_per_project"
            ),
            models.CheckConstraint(
                condition=Q(uncertainty_threshold__gte=0) & Q(uncertainty_threshold__lte=1),
                name="routing_threshold_0_1",
            ),
        ]

    def __str__(self):
        return f"routing rules v{self.version}"
