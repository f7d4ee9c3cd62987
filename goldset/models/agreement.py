"""Stored agreement figures. Dashboards read these rows; a Celery task recomputes them."""

from django.db import models


class AgreementSnapshot(models.Model):
    """One figure for one scope: protocol × axis × metric × (tier, task type, domain, ISO week)
    and, for pairwise or per-annotator metrics, a subject. Empty scope fields mean "all"."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

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
                    "project",
                    "protocol",
                    "axis",
                    "metric",
                    "tier",
                    "task_type",
                    "domain",
                    "week",
                    "subject",
                ],
                name="agreement_snapshot_scope_per_project",
            )
        ]
        indexes = [
            models.Index(
                fields=["project", "protocol", "metric", "tier"], name="agreement_snapshot_lookup"
            )
        ]

    def __str__(self):
        return f"{self.protocol}/{self.axis}/{self.metric} {self.tier}{self.task_type}{self.domain}{self.week}{self.subject} = {self.value}"


class AgreementDirtyScope(models.Model):
    """A change the stored figures do not include yet, written in the transaction of the label,
    review, undo, adjudication or promotion that made it (append-only; the recompute task deletes
    the rows it has taken into account). ``kind``: ``rating`` — one rating row of ``protocol``
    with these scope columns by ``annotator_id`` changed (its α/Fleiss scopes and that
    annotator's pairs are recomputed); ``facts`` — only per-annotator facts; ``all`` — every
    figure of ``protocol`` (every protocol when empty), e.g. after a tier change."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    RATING, FACTS, ALL = "rating", "facts", "all"

    protocol = models.CharField(max_length=32, blank=True)
    kind = models.CharField(max_length=8, default=RATING)
    tier = models.CharField(max_length=16, blank=True)
    task_type = models.CharField(max_length=32, blank=True)
    domain_id = models.BigIntegerField(null=True)
    week = models.CharField(max_length=8, blank=True)
    annotator_id = models.BigIntegerField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return (
            f"{self.kind} {self.protocol} {self.tier}/{self.task_type}/{self.domain_id}/{self.week}"
        )


class DashboardCounter(models.Model):
    """Counts the lead dashboards show, maintained by database triggers on every insert, delete
    and relevant update (migration ``0021_agree_dirty_scopes_counters``), so a page reads a few counter
    rows instead of counting items. ``name`` / ``key``:

    * ``triple`` / ``state|tier|domain_id|source`` — triples;
    * ``record`` / ``tier`` — production (non-calibration) answer records;
    * ``reviews_day`` / ``labels_day`` — ``YYYY-MM-DD`` (UTC) — reviews and labels made that day;
    * ``author_reviews`` / ``author_flags`` — ``author_id|YYYY-MM-DD`` — reviews (flags) an
      author's triples received that day;
    * ``time_changes`` / ``kind|user_id`` — changes to a person's timed decisions of that kind
      (only ever grows; a stored ``TimeOnItemFigure`` behind it is stale, migration 0026);
    * ``fast`` / ``user_id|kind`` — flagged fast decisions;
    * ``record_status`` / ``status`` — production answer records (runs and export pages);
    * ``run_status`` / ``run_id|status`` — every answer record of a run (runs page);
    * ``customer_triples`` / ``customer_id|state`` — a customer's triples (customers page);
    * ``skips`` / ``annotator_id`` — records an annotator skipped (calibration status page;
      these four since migration 0027).
    """

    name = models.CharField(max_length=24)
    key = models.CharField(max_length=120)
    # Writers on PostgreSQL add to one of 16 rows per key, chosen by their connection, so that
    # concurrent labels and reviews do not queue on one row's lock; readers sum the shards
    # (migration 0025, ``goldset/migrations/_counter_triggers.py``).
    shard = models.SmallIntegerField(db_default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["name", "key", "shard"], name="dashboard_counter_shard_unique"
            )
        ]

    def __str__(self):
        return f"{self.name}[{self.key}] = {self.n}"
