"""Pairwise review (issue 30, DESIGN.md §18): blind side-by-side judgments of two systems'
answers to one question.

A :class:`PairwiseTask` compares the answer records of two or more runs on the questions they
share; its pairs are drawn with a recorded seed (``goldset.rules.pairwise``). Each pair is judged
by ``reviewers_required`` reviewers (by the task's tier), each seeing the two answers on sides
drawn from the seed for that pair *and* that reviewer (``PairAssignment.left``). A split goes to
a lead (:class:`PairAdjudication`). Reviewers and leads address a pair by its opaque
``public_id`` only; the records' runs and systems stay on the admin side."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from goldset.models.answers import AnswerRecord, Question, Run, new_public_id
from goldset.models.routing import Tier


class PairwiseDesign(models.TextChoices):
    ALL_PAIRS = "all_pairs", "All pairs of systems on every question"
    BALANCED = "balanced", "Balanced: N comparisons per question"


class Preference(models.TextChoices):
    """Stored relative to the pair's records A and B (never to the sides a person saw)."""

    A = "a", "A better"
    B = "b", "B better"
    TIE = "tie", "Tie"
    BOTH_UNACCEPTABLE = "both_unacceptable", "Both unacceptable"


DECISIVE = (Preference.A, Preference.B)


class Strength(models.TextChoices):
    SLIGHTLY = "slightly", "Slightly"
    CLEARLY = "clearly", "Clearly"


class Side(models.TextChoices):
    """Which of the pair's records (A or B) a person saw on the left."""

    A = "a", "Record A"
    B = "b", "Record B"


class PairStatus(models.TextChoices):
    JUDGING = "judging", "Collecting judgments"
    FINAL = "final", "Final"
    NEEDS_ADJUDICATION = "needs_adjudication", "Reviewers split: needs adjudication"
    ADJUDICATED = "adjudicated", "Adjudicated"


class PairFinalSource(models.TextChoices):
    SINGLE = "single", "Single judgment"
    MAJORITY = "majority", "Majority of judgments"
    ADJUDICATION = "adjudication", "Adjudication"


class PairwiseTask(models.Model):
    """A comparison of ``runs`` (two or more) on the questions every one of them answered."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200)
    gold_version = models.ForeignKey(
        "goldset.GoldVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    runs = models.ManyToManyField(Run, through="PairwiseTaskRun", related_name="+")
    design = models.CharField(max_length=16, choices=PairwiseDesign.choices)
    comparisons_per_question = models.PositiveSmallIntegerField(null=True, blank=True)
    seed = models.PositiveIntegerField()
    tier = models.CharField(max_length=8, choices=Tier.choices)
    reviewers_per_pair = models.PositiveSmallIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="pairwise_task_name"),
            models.CheckConstraint(
                condition=Q(reviewers_per_pair__gte=1) & Q(reviewers_per_pair__lte=5),
                name="pairwise_task_reviewers_1_5",
            ),
            models.CheckConstraint(
                condition=Q(design="all_pairs", comparisons_per_question__isnull=True)
                | Q(design="balanced", comparisons_per_question__gte=1),
                name="pairwise_task_design_n",
            ),
        ]
        indexes = [models.Index(fields=["project", "created_at", "id"], name="pairwise_task_time")]

    def __str__(self):
        return self.name


class PairwiseTaskRun(models.Model):
    """One run a task compares (an explicit table, so bundles and copies carry it)."""

    task = models.ForeignKey(PairwiseTask, on_delete=models.CASCADE, related_name="task_runs")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["task_id", "run_id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "run"], name="pairwise_task_run_once")
        ]

    def __str__(self):
        return f"{self.task_id}: {self.run_id}"


class PairwisePair(models.Model):
    """Two answer records of the same question (and project) to be compared: A and B in the
    order the seeded draw gave them (sides on screen are drawn per reviewer)."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    task = models.ForeignKey(PairwiseTask, on_delete=models.PROTECT, related_name="pairs")
    public_id = models.CharField(max_length=32, default=new_public_id)
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="+")
    record_a = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="+")
    record_b = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()  # the draw's order within the task
    queue_rank = models.BigIntegerField()
    reviewers_required = models.PositiveSmallIntegerField()
    assigned_count = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=24, choices=PairStatus.choices, default=PairStatus.JUDGING)
    final_preference = models.CharField(max_length=24, choices=Preference.choices, blank=True)
    final_source = models.CharField(max_length=16, choices=PairFinalSource.choices, blank=True)
    finalized_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "record_a", "record_b"], name="pairwise_pair_records"
            ),
            models.UniqueConstraint(fields=["task", "position"], name="pairwise_pair_position"),
            # pairs are addressed within their project (a copied project keeps its ids)
            models.UniqueConstraint(
                fields=["project", "public_id"], name="pairwise_pair_public_id"
            ),
            models.CheckConstraint(
                condition=~Q(record_a=F("record_b")), name="pairwise_pair_two_records"
            ),
            models.CheckConstraint(
                condition=Q(assigned_count__lte=F("reviewers_required")),
                name="pairwise_pair_assigned_le_required",
            ),
        ]
        indexes = [
            # the claim walks a project's open pairs in the seeded order
            models.Index(
                fields=["project", "queue_rank", "id"],
                condition=Q(status="judging") & Q(assigned_count__lt=F("reviewers_required")),
                name="pairwise_pair_open",
            ),
            # a lead's list of pairs by status
            models.Index(fields=["project", "status", "id"], name="pairwise_pair_status"),
        ]

    def __str__(self):
        return self.public_id


class PairAssignment(models.Model):
    """A reviewer's claim of one slot of a pair, with the side the seed put record A on."""

    pair = models.ForeignKey(PairwisePair, on_delete=models.PROTECT, related_name="assignments")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    slot = models.PositiveSmallIntegerField()
    left = models.CharField(max_length=1, choices=Side.choices)
    claimed_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pair_id", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "reviewer"], name="pair_assignment_reviewer"),
            models.UniqueConstraint(fields=["pair", "slot"], name="pair_assignment_slot"),
        ]
        indexes = [
            models.Index(fields=["reviewer", "completed_at", "id"], name="pair_assignment_time")
        ]

    def __str__(self):
        return f"{self.pair_id} slot {self.slot} → {self.reviewer_id}"


class PairDecision(models.Model):
    """The fields a judgment and an adjudication share."""

    preference = models.CharField(max_length=24, choices=Preference.choices)
    strength = models.CharField(max_length=16, choices=Strength.choices, blank=True)
    rationale = models.TextField(blank=True)
    server_ms = models.PositiveBigIntegerField(null=True, blank=True)
    active_ms = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


# A strength goes with a preference for A or B, never with a tie or "both unacceptable".
STRENGTH_RULE = Q(preference__in=["a", "b"], strength__in=["slightly", "clearly"]) | Q(
    preference__in=["tie", "both_unacceptable"], strength=""
)


class PairJudgment(PairDecision):
    """One reviewer's verdict on a pair; ``left`` is the record they saw on the left."""

    assignment = models.OneToOneField(
        PairAssignment, on_delete=models.PROTECT, related_name="judgment"
    )
    pair = models.ForeignKey(PairwisePair, on_delete=models.PROTECT, related_name="judgments")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    left = models.CharField(max_length=1, choices=Side.choices)

    class Meta:
        ordering = ["pair_id", "assignment__slot", "id"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "reviewer"], name="pair_judgment_reviewer"),
            models.CheckConstraint(condition=STRENGTH_RULE, name="pair_judgment_strength"),
        ]
        indexes = [models.Index(fields=["reviewer", "created_at", "id"], name="pair_judgment_time")]

    def __str__(self):
        return f"judgment {self.pair_id} by {self.reviewer_id}"


class PairSkip(models.Model):
    """A reviewer passed on a pair with a reason; it is never offered to them again."""

    pair = models.ForeignKey(PairwisePair, on_delete=models.PROTECT, related_name="skips")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "reviewer"], name="pair_skip_reviewer")
        ]

    def __str__(self):
        return f"skip {self.pair_id} by {self.reviewer_id}"


class PairAdjudication(PairDecision):
    """A lead's final preference on a pair whose reviewers split."""

    pair = models.OneToOneField(PairwisePair, on_delete=models.PROTECT, related_name="adjudication")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=STRENGTH_RULE, name="pair_adjudication_strength")
        ]

    def __str__(self):
        return f"adjudication of {self.pair_id}"


# ---------------------------------------------------------------- qualification (calibration pairs)


class PairCalibrationItem(models.Model):
    """A calibration pair of the project: two answers to one question with a lead's reference
    preference (relative to A/B). Reviewers judge the project's calibration pairs blind and must
    reach the protocol's κ gate before they judge real pairs (``goldset.rules.pairwise``)."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    public_id = models.CharField(max_length=32, default=new_public_id)
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="+")
    record_a = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="+")
    record_b = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="+")
    reference = models.CharField(max_length=24, choices=Preference.choices)
    source_pair = models.ForeignKey(
        PairwisePair, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "record_a", "record_b"], name="pair_calibration_records"
            ),
            models.UniqueConstraint(
                fields=["project", "public_id"], name="pair_calibration_public_id"
            ),
            models.CheckConstraint(
                condition=~Q(record_a=F("record_b")), name="pair_calibration_two_records"
            ),
        ]

    def __str__(self):
        return self.public_id


class PairCalibrationAnswer(models.Model):
    """A reviewer's judgment of one calibration pair (relative to A/B; ``left`` as they saw it)."""

    item = models.ForeignKey(PairCalibrationItem, on_delete=models.PROTECT, related_name="answers")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    preference = models.CharField(max_length=24, choices=Preference.choices)
    left = models.CharField(max_length=1, choices=Side.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "reviewer"], name="pair_calibration_answer")
        ]
        indexes = [models.Index(fields=["reviewer", "item"], name="pair_calibration_mine")]

    def __str__(self):
        return f"{self.item_id} by {self.reviewer_id}"


class PairQualification(models.Model):
    """A reviewer's scored attempt at the project's calibration pairs: Cohen κ of their
    preferences against the references, the gate in force, pass or fail."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    n_items = models.PositiveIntegerField()
    kappa = models.FloatField(null=True, blank=True)
    kappa_note = models.CharField(max_length=200, blank=True)
    threshold = models.FloatField()
    passed = models.BooleanField()
    disagreements = models.JSONField(default=list, blank=True)
    scored_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project_id", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "reviewer"], name="pair_qualification_reviewer"
            )
        ]

    def __str__(self):
        return f"{self.reviewer_id}: {'passed' if self.passed else 'failed'}"
