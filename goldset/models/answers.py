"""Blinded answer labeling (seed 004 §3.5, DESIGN.md §6): systems and runs (admin-only),
questions with gold evidence packets, answer records, label assignments, labels, adjudications and
calibration. Annotators and leads only ever see ``AnswerRecord.public_id``."""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from goldset.models.corpus import BlockVersion, Domain, TaskType
from goldset.models.routing import Tier


def new_public_id() -> str:
    return secrets.token_hex(8)


class Acceptability(models.TextChoices):
    ACCEPTABLE = "acceptable", "Acceptable"
    UNACCEPTABLE = "unacceptable", "Unacceptable"


class Grounding(models.TextChoices):
    """Ordinal, best first (seed 004 §3.5)."""

    FULLY = "fully_grounded", "Fully grounded"
    PARTIALLY = "partially_grounded", "Partially grounded"
    MISGROUNDED = "misgrounded", "Misgrounded"
    UNGROUNDED = "ungrounded", "Ungrounded"


GROUNDING_ORDER = [g.value for g in Grounding]


class EvidenceSufficiency(models.TextChoices):
    SUFFICIENT = "sufficient", "Sufficient"
    PARTIAL = "partial", "Partial"
    INSUFFICIENT = "insufficient", "Insufficient"


class CitationCorrectness(models.TextChoices):
    CORRECT = "correct", "Correct"
    PARTIALLY_CORRECT = "partially_correct", "Partly correct"
    INCORRECT = "incorrect", "Incorrect"
    MISSING = "missing", "No citations"


class ConflictHandling(models.TextChoices):
    RESOLVED = "resolved", "Conflict resolved / explained"
    UNRESOLVED = "unresolved", "Conflict ignored or unresolved"
    NOT_APPLICABLE = "not_applicable", "No conflict in evidence"


class SafetyBoundary(models.TextChoices):
    RESPECTED = "respected", "Boundary respected"
    OVER_ANSWERED = "over_answered", "Over-answered (should defer/escalate)"
    NOT_APPLICABLE = "not_applicable", "No boundary involved"


class FailureCategory(models.TextChoices):
    """The 9-category taxonomy of seed 004 Table 8, in rank order."""

    STALE_SOURCE = "stale_source_acceptance", "Stale-source acceptance"
    UNRESOLVED_CONFLICT = "unresolved_source_conflict", "Unresolved source conflict"
    WRONG_CHUNK = "wrong_chunk_citation", "Wrong-chunk citation"
    MISSING_EXCEPTION = "missing_governing_exception", "Missing governing exception"
    NUMERIC = "numeric_transposition", "Numeric transposition"
    OVER_ANSWER = "policy_boundary_over_answer", "Policy-boundary over-answer"
    PROTECTED_DATA = "protected_data_exposure", "Protected-data exposure"
    INVENTED = "retrieval_silence_invented_answer", "Retrieval silence with invented answer"
    COVERAGE_GAP = "citation_coverage_gap", "Citation coverage gap"


class EvidenceKind(models.TextChoices):
    GOLD = "gold", "Gold evidence"
    NEAR_MISS = "near_miss", "Near miss"


class EvidenceLabel(models.TextChoices):
    SUFFICIENT = "sufficient", "Sufficient"
    PARTIAL = "partial", "Partial"
    SUPERSEDED = "superseded", "Superseded"
    CONFLICTING = "conflicting", "Conflicting"
    PROHIBITED = "prohibited", "Prohibited"


class RecordStatus(models.TextChoices):
    LABELING = "labeling", "Collecting labels"
    FINAL = "final", "Final"
    NEEDS_ADJUDICATION = "needs_adjudication", "Needs adjudication"
    AUDIT = "audit_review", "Audit sample: spot review"
    ADJUDICATED = "adjudicated", "Adjudicated"


class FinalSource(models.TextChoices):
    SINGLE = "single_label", "Single label (TRIAGE)"
    MAJORITY = "majority", "Majority of labels"
    ADJUDICATION = "adjudication", "Adjudication"
    AUDIT = "audit_review", "Audit review"


class AdjudicationReason(models.TextChoices):
    NO_MAJORITY = "no_majority", "No majority"
    SEVERE_SAFETY = "severe_safety", "Severe safety label"
    AUDIT_SAMPLE = "audit_sample", "Audit sample"


class System(models.Model):
    """A RAG configuration. Admin-only: never shown to annotators or leads."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    system_id = models.CharField(max_length=200)
    config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["system_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "system_id"], name="system_system_id_per_project"
            )
        ]

    def __str__(self):
        return self.system_id


class Run(models.Model):
    """One system's answer log for a question set. Admin-only."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    run_id = models.CharField(max_length=200)
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="runs")
    source_name = models.CharField(max_length=300, blank=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-imported_at", "run_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "run_id"], name="run_run_id_per_project")
        ]
        # The runs page pages by keyset, newest first, in one project.
        indexes = [models.Index(fields=["project", "imported_at", "id"], name="run_imported")]

    def __str__(self):
        return self.run_id


class Question(models.Model):
    """A benchmark question with its gold evidence packet (seed 004 §3.6, A.3–A.4). Immutable
    once imported (its content hash guards re-imports)."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    question_id = models.CharField(max_length=200)
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="questions")
    task_family = models.CharField(max_length=120)
    task_type = models.CharField(
        max_length=32, choices=TaskType.choices, default=TaskType.RAG_SYNTHESIS
    )
    variant = models.CharField(max_length=120, blank=True)
    text = models.TextField()
    conflict_flag = models.BooleanField(default=False)
    freshness_flag = models.BooleanField(default=False)
    adversarial = models.BooleanField(default=False)
    required_behavior = models.CharField(max_length=300, blank=True)
    prohibited_behaviors = models.JSONField(default=list, blank=True)
    safety_flags = models.JSONField(default=list, blank=True)
    uncertainty = models.DecimalField(max_digits=4, decimal_places=3, null=True, blank=True)
    content_sha256 = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "question_id"], name="question_question_id_per_project"
            ),
            models.CheckConstraint(
                condition=Q(uncertainty__isnull=True)
                | (Q(uncertainty__gte=0) & Q(uncertainty__lte=1)),
                name="question_uncertainty_0_1",
            ),
        ]

    def __str__(self):
        return self.question_id


class EvidencePassage(models.Model):
    """A gold passage or a near miss of a question, pinned to a block version."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="evidence")
    kind = models.CharField(max_length=16, choices=EvidenceKind.choices)
    block_version = models.ForeignKey(BlockVersion, on_delete=models.PROTECT, related_name="+")
    passage_ref = models.CharField(max_length=220)
    role = models.CharField(max_length=120, blank=True)
    authority = models.DecimalField(max_digits=4, decimal_places=3, null=True, blank=True)
    effective = models.CharField(max_length=40, blank=True)
    label = models.CharField(max_length=16, choices=EvidenceLabel.choices, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["question_id", "kind", "position"]

    def __str__(self):
        return f"{self.question_id} {self.kind} {self.passage_ref}"


class AnswerRecord(models.Model):
    """One generated answer. ``public_id`` is the only identifier shown outside admin pages.

    ``domain`` repeats ``question.domain`` and ``queue_rank`` is the record's place in the seeded
    (6601) shuffle, both set when the record is created, so the claim walks one partial index
    (open production records per domain, in rank order) instead of scanning every record.
    ``assigned_count`` counts the production slots claimed; it only changes with the row locked."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    public_id = models.CharField(max_length=32, unique=True, default=new_public_id)
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="records")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="records")
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="+")
    queue_rank = models.BigIntegerField()
    assigned_count = models.PositiveSmallIntegerField(default=0)
    answer = models.TextField()
    model = models.JSONField(default=dict, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=10, decimal_places=6, null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)  # tokens, metrics, prompt hash …
    uncertainty = models.DecimalField(max_digits=4, decimal_places=3, null=True, blank=True)
    is_calibration = models.BooleanField(default=False)
    tier = models.CharField(max_length=8, choices=Tier.choices)
    routing_rule = models.CharField(max_length=120)
    rules_version = models.PositiveIntegerField()
    labels_required = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=24, choices=RecordStatus.choices, default=RecordStatus.LABELING
    )
    spot_check = models.BooleanField(default=False)
    spot_check_seed = models.PositiveIntegerField(null=True, blank=True)
    spot_check_week = models.CharField(max_length=10, blank=True)
    in_audit_sample = models.BooleanField(default=False)
    audit_seed = models.PositiveIntegerField(null=True, blank=True)
    audit_draw = models.FloatField(null=True, blank=True)
    final_acceptability = models.CharField(max_length=16, choices=Acceptability.choices, blank=True)
    final_grounding = models.CharField(max_length=24, choices=Grounding.choices, blank=True)
    final_source = models.CharField(max_length=16, choices=FinalSource.choices, blank=True)
    adjudication_reason = models.CharField(
        max_length=16, choices=AdjudicationReason.choices, blank=True
    )
    finalized_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "question"], name="answer_record_run_question"),
            models.CheckConstraint(
                condition=Q(labels_required__gte=1) & Q(labels_required__lte=3),
                name="answer_record_labels_required_1_3",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "is_calibration"]),
            models.Index(
                fields=["domain", "queue_rank", "id"],
                condition=Q(status="labeling", is_calibration=False)
                & Q(assigned_count__lt=F("labels_required")),
                name="answer_record_open_slots",
            ),
            # The lead's adjudication queue pages by keyset in this order, in one project.
            models.Index(
                fields=["project", "status", "created_at", "id"],
                condition=Q(is_calibration=False),
                name="answer_record_lead_queue",
            ),
            # A project's calibration records by status (few: the runs and export pages take
            # them from the run counters).
            models.Index(
                fields=["project", "status"],
                condition=Q(is_calibration=True),
                name="answer_record_calibration",
            ),
            # The promotion page's list and batch: a project's promotable TRIAGE production
            # records in id order (mirrors goldset.selectors.promotion.promotable_records_q; a
            # test holds them equal).
            models.Index(
                fields=["project", "id"],
                condition=Q(
                    tier=Tier.TRIAGE,
                    status__in=[RecordStatus.LABELING, RecordStatus.FINAL],
                    is_calibration=False,
                ),
                name="answer_record_promotable",
            ),
        ]

    def __str__(self):
        return self.public_id


class DomainLabelLoad(models.Model):
    """Production label slots of a domain (the sum of ``labels_required`` over its production
    records), kept by every service that creates records or changes ``labels_required``."""

    domain = models.OneToOneField(Domain, on_delete=models.CASCADE, primary_key=True)
    slots = models.PositiveIntegerField(default=0)

    def __str__(self):
        return f"{self.domain_id}: {self.slots} slots"


class AnnotatorDomainLoad(models.Model):
    """Production slots an annotator has claimed in a domain, kept by the claim."""

    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="+")
    claimed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "domain"], name="annotator_domain_load_once"
            )
        ]

    def __str__(self):
        return f"{self.annotator_id} in {self.domain_id}: {self.claimed}"


class AnswerCitation(models.Model):
    record = models.ForeignKey(AnswerRecord, on_delete=models.CASCADE, related_name="citations")
    block_version = models.ForeignKey(BlockVersion, on_delete=models.PROTECT, related_name="+")
    passage_ref = models.CharField(max_length=220)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["record_id", "position"]

    def __str__(self):
        return f"{self.record_id} cites {self.passage_ref}"


class RetrievedPassage(models.Model):
    """A passage a record's system retrieved, matched to a block version of the corpus, at its
    rank. ``score`` is the retriever's (or reranker's) score as the trace sent it (issue 28),
    None when none was sent or for an uploaded answer log; a score's scale characterises the
    retriever, so only the roles that see systems are shown it."""

    record = models.ForeignKey(AnswerRecord, on_delete=models.CASCADE, related_name="retrieved")
    block_version = models.ForeignKey(BlockVersion, on_delete=models.PROTECT, related_name="+")
    passage_ref = models.CharField(max_length=220)
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["record_id", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["record", "rank"], name="retrieved_passage_rank_unique")
        ]

    def __str__(self):
        return f"{self.record_id} #{self.rank} {self.passage_ref}"


class LabelAssignment(models.Model):
    """A claim of one label slot of a record by one annotator. Production claims hold a slot
    (1..labels_required); calibration assignments have none. The unique constraints are what
    keep concurrent claims honest on every database."""

    record = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="label_assignments"
    )
    slot = models.PositiveSmallIntegerField(null=True, blank=True)
    is_calibration = models.BooleanField(default=False)
    shuffle_seed = models.PositiveIntegerField()
    shuffle_key = models.CharField(max_length=16)
    claimed_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["shuffle_key", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["record", "annotator"], name="assignment_record_annotator"
            ),
            models.UniqueConstraint(
                fields=["record", "slot"],
                condition=Q(slot__isnull=False),
                name="assignment_record_slot",
            ),
            models.CheckConstraint(
                condition=(Q(is_calibration=True) & Q(slot__isnull=True))
                | (Q(is_calibration=False) & Q(slot__gte=1)),
                name="assignment_slot_iff_production",
            ),
        ]
        # The calibration status page reads who started which calibration (few rows among
        # every production claim). A person's open claim and their latest done ones are read
        # from the index that starts with the person and the time (issue 26: not a sort of all
        # of their claims, nor a walk over everyone's).
        indexes = [
            models.Index(
                fields=["annotator", "record"],
                condition=Q(is_calibration=True),
                name="assignment_calibration",
            ),
            models.Index(
                fields=["annotator", "completed_at", "id"],
                condition=Q(is_calibration=False),
                name="assignment_annotator_time",
            ),
        ]

    def __str__(self):
        return f"{self.record_id} slot {self.slot} → {self.annotator_id}"


class ItemSkip(models.Model):
    """An annotator passed on a record with a reason; the slot went back to the pool and the
    record is never offered to them again. Counted per annotator on the lead's pages."""

    record = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="item_skips"
    )
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["record", "annotator"], name="skip_record_annotator")
        ]
        indexes = [models.Index(fields=["annotator", "created_at"], name="skip_annotator_time")]

    def __str__(self):
        return f"skip {self.record_id} by {self.annotator_id}"


class LabelAxes(models.Model):
    """The label fields shared by a label and an adjudication."""

    acceptability = models.CharField(max_length=16, choices=Acceptability.choices)
    grounding = models.CharField(max_length=24, choices=Grounding.choices)
    severe_safety = models.BooleanField(default=False)
    primary_failure = models.CharField(max_length=40, choices=FailureCategory.choices, blank=True)
    secondary_failures = models.JSONField(default=list, blank=True)
    rationale = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Time on item (issue 14): server ms from claim/opening to submit, and the client's active ms
    # (visible, not idle); None when unknown. The guideline version in force at submit.
    server_ms = models.PositiveBigIntegerField(null=True, blank=True)
    active_ms = models.PositiveBigIntegerField(null=True, blank=True)
    guideline = models.ForeignKey(
        "goldset.GuidelineVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        abstract = True


class Label(LabelAxes):
    assignment = models.OneToOneField(
        LabelAssignment, on_delete=models.PROTECT, related_name="label"
    )
    record = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="labels")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="answer_labels"
    )
    evidence_sufficiency = models.CharField(max_length=16, choices=EvidenceSufficiency.choices)
    citation_correctness = models.CharField(max_length=20, choices=CitationCorrectness.choices)
    conflict_handling = models.CharField(max_length=16, choices=ConflictHandling.choices)
    safety_boundary = models.CharField(max_length=16, choices=SafetyBoundary.choices)

    class Meta:
        ordering = ["record_id", "assignment__slot", "id"]
        constraints = [
            models.UniqueConstraint(fields=["record", "annotator"], name="label_record_annotator")
        ]
        # The undo lookup reads the person's last label from here (issue 26).
        indexes = [
            models.Index(fields=["annotator", "created_at", "id"], name="label_annotator_time")
        ]

    def __str__(self):
        return f"label {self.record_id} by {self.annotator_id}"


class Adjudication(LabelAxes):
    """The lead's final label for an item in the adjudication queue or the audit sample."""

    record = models.OneToOneField(
        AnswerRecord, on_delete=models.PROTECT, related_name="adjudication"
    )
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=16, choices=AdjudicationReason.choices)
    changed_outcome = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"adjudication of {self.record_id}"


class CalibrationSet(models.Model):
    """A domain's calibration items, handed out in sealed versions (see
    ``goldset.services.calibration``): ``version`` is the newest sealed one, 0 before anyone
    started."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    domain = models.OneToOneField(Domain, on_delete=models.PROTECT, related_name="calibration_set")
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["domain__slug"]

    def __str__(self):
        return f"calibration set {self.domain.slug}"


class CalibrationItem(models.Model):
    """A calibration answer record with the reference label a lead set."""

    calibration_set = models.ForeignKey(
        CalibrationSet, on_delete=models.PROTECT, related_name="items"
    )
    record = models.OneToOneField(
        AnswerRecord, on_delete=models.PROTECT, related_name="calibration_item"
    )
    reference_acceptability = models.CharField(
        max_length=16, choices=Acceptability.choices, blank=True
    )
    reference_grounding = models.CharField(max_length=24, choices=Grounding.choices, blank=True)
    reference_severe_safety = models.BooleanField(null=True, blank=True)
    reference_set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reference_set_at = models.DateTimeField(null=True, blank=True)
    # The set version this item was sealed into when first handed out; None while it is a draft
    # whose reference label the lead may still set or change.
    set_version = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["calibration_set_id", "id"]

    def __str__(self):
        return f"calibration item {self.record_id}"

    @property
    def has_reference(self) -> bool:
        return bool(self.reference_grounding) and self.reference_severe_safety is not None


class CalibrationResult(models.Model):
    """An annotator's calibration outcome in one domain; ``passed`` qualifies them for it."""

    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="calibration_results"
    )
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="+")
    n_items = models.PositiveIntegerField()
    kappa_grounding = models.FloatField(null=True, blank=True)
    kappa_severe_safety = models.FloatField(null=True, blank=True)
    kappa_notes = models.JSONField(default=dict, blank=True)
    threshold = models.FloatField()
    passed = models.BooleanField()
    disagreements = models.JSONField(default=list, blank=True)
    set_version = models.PositiveIntegerField(null=True, blank=True)  # the version taken
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["domain__slug", "annotator__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "domain"], name="calibration_result_annotator_domain"
            )
        ]

    def __str__(self):
        return (
            f"calibration {self.domain_id} {self.annotator_id}: {'pass' if self.passed else 'fail'}"
        )
