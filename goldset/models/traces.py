"""Production traces received over OTLP/HTTP (issue 28, DESIGN.md §16): the spans as received
and, per trace, what became of it. Admin-only: a span's attributes name the service and the
models that answered, which annotators and leads never see.

A span is stored once per (project, trace id, span id), so a batch sent again creates nothing.
A trace is ``pending`` while its mapping is queued, ``incomplete`` when its spans so far do not
make a whole trace (more may arrive; it is mapped again when they do), ``mapped`` once it became
an answer record (its ``record``), ``rejected`` with the reason otherwise."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldset.models.answers import AnswerRecord


class TraceStatus(models.TextChoices):
    PENDING = "pending", "Waiting to be mapped"
    INCOMPLETE = "incomplete", "Waiting for more spans"
    MAPPED = "mapped", "Mapped to an answer record"
    DROPPED = "dropped", "Dropped: no sampling rule matched"
    CAPPED = "capped", "Not sampled: its rules' daily caps were reached"
    REJECTED = "rejected", "Rejected"


# The statuses in which spans arriving for a trace are stored and the trace is mapped (again).
# A dropped or capped trace keeps its spans: a span arriving later (a user's thumbs-down, a
# judge's verdict) has it sampled again.
OPEN_TRACE_STATUSES = (
    TraceStatus.PENDING,
    TraceStatus.INCOMPLETE,
    TraceStatus.DROPPED,
    TraceStatus.CAPPED,
)


class SamplingRuleKind(models.TextChoices):
    PERCENTAGE = "percentage", "A percentage of traces (seeded)"
    FEEDBACK = "feedback", "User feedback: thumbs-down"
    JUDGE = "judge", "Judges disagree, or a judge's confidence is low"
    UNCERTAINTY = "uncertainty", "Model uncertainty at or above a threshold"
    DOMAIN = "domain", "A domain"
    TASK_TYPE = "task_type", "A task type"
    NEW_QUESTION = "new_question", "A new question (no near-duplicate among gold questions)"


class SamplingRule(models.Model):
    """One sampling rule of a project (issue 28): which received traces become answer records.
    Rules are evaluated in ``position`` order (then id); the first enabled rule that matches and
    has room under its daily cap samples the trace. Rules are never deleted (traces name them):
    they are disabled. Every edit bumps ``version`` and writes an audit event."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    name = models.SlugField(max_length=64)
    kind = models.CharField(max_length=16, choices=SamplingRuleKind.choices)
    # percentage: the share sampled (0–100), drawn from a hash of the seed and the trace id
    percentage = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True)
    seed = models.PositiveIntegerField(default=0)
    # uncertainty: at or above; judge: a confidence below it; new_question: the similarity at
    # or above which a gold question is a near-duplicate
    threshold = models.DecimalField(max_digits=4, decimal_places=3, null=True, blank=True)
    value = models.CharField(max_length=64, blank=True)  # domain slug or task type
    daily_cap = models.PositiveIntegerField(null=True, blank=True)  # per UTC day; none: no cap
    position = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=1)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="sampling_rule_name"),
            models.CheckConstraint(
                condition=Q(percentage__isnull=True)
                | (Q(percentage__gte=0) & Q(percentage__lte=100)),
                name="sampling_rule_percentage_0_100",
            ),
            models.CheckConstraint(
                condition=Q(threshold__isnull=True) | (Q(threshold__gte=0) & Q(threshold__lte=1)),
                name="sampling_rule_threshold_0_1",
            ),
        ]

    def __str__(self):
        return self.name


class SamplingDayCount(models.Model):
    """Traces a rule sampled, and traces it matched but could not take (its cap reached), on
    one UTC day. The mapping locks the day's rows of the project's rules, so a cap holds when
    several workers map at once."""

    rule = models.ForeignKey(SamplingRule, on_delete=models.CASCADE, related_name="day_counts")
    day = models.DateField()
    sampled = models.PositiveIntegerField(default=0)
    capped = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["rule_id", "day"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "day"], name="sampling_day_count_once")
        ]

    def __str__(self):
        return f"{self.rule_id} {self.day}: {self.sampled} sampled, {self.capped} capped"


class ReceivedTrace(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    trace_id = models.CharField(max_length=32)  # 32 lowercase hex digits
    status = models.CharField(
        max_length=16, choices=TraceStatus.choices, default=TraceStatus.PENDING
    )
    reason = models.TextField(blank=True)  # why rejected, or what an incomplete trace waits for
    record = models.OneToOneField(
        AnswerRecord, null=True, blank=True, on_delete=models.PROTECT, related_name="trace"
    )
    convention = models.CharField(max_length=16, blank=True)  # openinference, genai, mixed, none
    # Which sampling rule chose the trace (its name; "all" when the project has no rules), or
    # for a capped trace the first rule that matched.
    sampled_by = models.CharField(max_length=120, blank=True)
    sampling_rule = models.ForeignKey(
        SamplingRule, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    span_count = models.PositiveIntegerField(default=0)
    # The UTC day the trace was last counted as capped, and the ids of the rules whose counters
    # counted it that day: mapped again that day (a batch sent again, a later span), it is not
    # counted twice.
    capped_on = models.DateField(null=True, blank=True)
    capped_rules = models.JSONField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    mapped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace_id"], name="received_trace_once_per_project"
            )
        ]
        indexes = [
            # The mapping claims a project's pending traces in id order; the receiver's
            # back-pressure counts them (bounded).
            models.Index(
                fields=["project", "id"],
                condition=Q(status="pending"),
                name="received_trace_pending",
            ),
            # The traces page counts a project's traces by status.
            models.Index(fields=["project", "status"], name="received_trace_status"),
            # The reconciler rejects traces incomplete for too long.
            models.Index(
                fields=["updated_at"],
                condition=Q(status="incomplete"),
                name="received_trace_incomplete",
            ),
        ]

    def __str__(self):
        return f"trace {self.trace_id} ({self.status})"


class ReceivedSpan(models.Model):
    """One span as decoded (goldset.traces.decode.Span), kept for the mapping and for admins.
    ``payload`` is the span's JSON text (name, kind, times, attributes, events, resource,
    scope, status): text rather than jsonb, because attribute values may be NaN or ±Infinity,
    which JSON text keeps and jsonb refuses."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    payload = models.TextField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace_id", "span_id"], name="received_span_once_per_project"
            )
        ]

    def __str__(self):
        return f"span {self.span_id} of trace {self.trace_id}"


class UnmatchedPassage(models.Model):
    """A passage a trace retrieved whose document is not in the project's corpus (no block with
    its id): kept with its text, rank and score beside the record's matched
    ``RetrievedPassage`` rows (the ranks of both together are 1…n)."""

    record = models.ForeignKey(
        AnswerRecord, on_delete=models.CASCADE, related_name="unmatched_passages"
    )
    rank = models.PositiveIntegerField()
    passage_ref = models.CharField(max_length=220, blank=True)  # the document id as sent
    text = models.TextField(blank=True)
    score = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["record_id", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["record", "rank"], name="unmatched_passage_rank_unique")
        ]

    def __str__(self):
        return f"{self.record_id} #{self.rank} {self.passage_ref or '(no id)'}"


class TripleOrigin(models.Model):
    """Where a triple promoted from a labeled production record came from (issue 28): the
    record, and for a trace-born record its trace id and the sampling rule that chose it. Kept
    in the gold JSONL export's metadata."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    triple = models.OneToOneField("goldset.Triple", on_delete=models.CASCADE, related_name="origin")
    record = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="+")
    # the record's public id, so the triple's pages and export name it without loading the
    # record (whose columns name the system)
    record_public_id = models.CharField(max_length=32)
    trace_id = models.CharField(max_length=32, blank=True)
    sampling_rule = models.CharField(max_length=120, blank=True)
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    promoted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # one triple per record: promoting it again finds the first
            models.UniqueConstraint(fields=["record"], name="triple_origin_once_per_record")
        ]

    def __str__(self):
        return f"{self.triple_id} from {self.record_id}"
