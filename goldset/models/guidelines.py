"""Guidelines in the task and time on item (issue 14).

* :class:`GuidelineVersion`: the rubric text of one (domain, task) pair — answer labeling, triple
  review or adjudication — in Markdown, with its sanitised HTML. Versions are append-only: an edit
  is a new row with the next number, the newest is in force, and every label, review and
  adjudication points at the version in force when it was submitted.
* :class:`FastDecision`: a label, review or adjudication decided faster than its tier's
  ``FAST_DECISION_SECONDS_*``, recorded when it was submitted, for the lead to look at.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldset.models.corpus import Domain
from goldset.models.routing import Tier


class GuidelineTask(models.TextChoices):
    ANSWER_LABELING = "answer_labeling", "Answer labeling"
    TRIPLE_REVIEW = "triple_review", "Triple review"
    ADJUDICATION = "adjudication", "Adjudication"


class GuidelineVersion(models.Model):
    """One immutable version of a (domain, task) guideline; the highest ``version`` is in force."""

    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="guidelines")
    task = models.CharField(max_length=20, choices=GuidelineTask.choices)
    version = models.PositiveIntegerField()
    body = models.TextField()  # Markdown, as the lead wrote it
    html = models.TextField()  # rendered with raw HTML disabled, then sanitised
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["domain_id", "task", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["domain", "task", "version"], name="guideline_version_once"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="guideline_version_from_1"),
        ]

    def __str__(self):
        return f"{self.domain_id} {self.task} v{self.version}"


class DecisionKind(models.TextChoices):
    LABEL = "label", "Answer label"
    REVIEW = "review", "Triple review"
    ADJUDICATION = "adjudication", "Adjudication"
    PAIR_JUDGMENT = "pair_judgment", "Pairwise judgment"


class FastDecision(models.Model):
    """A decision faster than its tier's threshold. ``decision_ms`` is the shorter of the server
    (opening to submit) and the client's active time; ``threshold_ms`` the threshold then."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    kind = models.CharField(max_length=16, choices=DecisionKind.choices)
    label = models.OneToOneField(
        "goldset.Label", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    review = models.OneToOneField(
        "goldset.Review", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    adjudication = models.OneToOneField(
        "goldset.Adjudication", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    tier = models.CharField(max_length=8, choices=Tier.choices)
    decision_ms = models.PositiveIntegerField()
    threshold_ms = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    kind="label",
                    label__isnull=False,
                    review__isnull=True,
                    adjudication__isnull=True,
                )
                | Q(
                    kind="review",
                    label__isnull=True,
                    review__isnull=False,
                    adjudication__isnull=True,
                )
                | Q(
                    kind="adjudication",
                    label__isnull=True,
                    review__isnull=True,
                    adjudication__isnull=False,
                ),
                name="fast_decision_one_target",
            )
        ]
        # The lead's list pages of a project by keyset, newest first.
        indexes = [
            models.Index(fields=["project", "created_at", "id"], name="fast_decision_project_time")
        ]

    def __str__(self):
        return f"fast {self.kind} by {self.annotator_id}: {self.decision_ms} ms"


class TimeOnItemFigure(models.Model):
    """One person's stored active-time figures for one kind of decision in one project (the
    project's agreement dashboard's time-on-item table), computed by the agreement recompute
    from that person's timed decisions in the project. ``changes_seen`` is the ``time_changes``
    counter (``<project_id>|kind|user_id``, kept by database triggers on every timed label,
    review and adjudication) when they were computed: a counter that has moved on since marks
    them stale."""

    project = models.ForeignKey("goldset.Project", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=DecisionKind.choices)
    user_id = models.BigIntegerField()
    n = models.PositiveIntegerField(default=0)  # decisions with an active time
    median_ms = models.FloatField(null=True)
    p90_ms = models.FloatField(null=True)
    changes_seen = models.BigIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "user_id"], name="time_on_item_figure_once_per_project"
            )
        ]

    def __str__(self):
        return f"{self.kind} {self.user_id}: n={self.n} median={self.median_ms}"
