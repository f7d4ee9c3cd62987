"""Gold triple curation (seed 000, DESIGN.md §4–§5): customers and their permission grants,
triples and their numbered revisions, review assignments and blind reviews, discussion threads,
the quality tracker, weekly spot-check draws and quarterly working slices.

Rules live in ``goldset.services``; the constraints here make the impossible states impossible
even when two requests race (one assignment per slot, one review per reviewer and revision).
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from goldset.models.corpus import BlockVersion, Domain, TaskType
from goldset.models.routing import Tier


class Source(models.TextChoices):
    PUBLIC_RFP = "public_rfp", "Public RFP"
    CUSTOMER_PERMISSIONED = "customer_permissioned", "Customer (with permission)"
    SYNTHETIC_HUMAN_VERIFIED = "synthetic_human_verified", "Synthetic, human-verified"
    LLM_GENERATED = "llm_generated", "LLM-generated"


class Difficulty(models.TextChoices):
    EASY = "easy", "Easy"
    STANDARD = "standard", "Standard"
    HARD = "hard", "Hard"


class TripleState(models.TextChoices):
    PENDING_REVIEW = "pending_review", "Pending review"
    IN_DISCUSSION = "in_discussion", "In discussion"
    GOLD = "gold", "Gold"
    DROPPED = "dropped", "Dropped"
    SPLIT = "split", "Split"
    NEEDS_REREVIEW = "needs_rereview", "Needs re-review"
    RETIRED = "retired", "Retired"
    REVOKED = "revoked", "Revoked"


class Resolution(models.TextChoices):
    CONSENSUS = "consensus", "Consensus (both reviewers confirmed)"
    REVISED_CONSENSUS = "revised_consensus", "Consensus after revision"
    SINGLE_REVIEW = "single_review", "TRIAGE single review"


class Verdict(models.TextChoices):
    CONFIRM = "confirm", "Confirm"
    FLAG = "flag", "Flag"


class Flag(models.TextChoices):
    QUESTION_UNREALISTIC = "question_unrealistic", "Question unrealistic"
    WRONG_SOURCE_BLOCK = "wrong_source_block", "Wrong source block"
    ANSWER_NOT_ENTAILED = "answer_not_entailed", "Answer not entailed"


class EntailmentDirection(models.TextChoices):
    UNDERSTATED = "understated", "Understated"
    OVERSTATED = "overstated", "Overstated"


class DisagreementCategory(models.TextChoices):
    NUMERIC_PRECISION = "numeric_precision", "Numeric precision"
    SYNONYM_TENSE = "synonym_tense", "Synonym / tense"
    COMPOUND_CLAIM = "compound_claim", "Compound claim"


class Customer(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="customer_slug_per_project")
        ]
        # The customers page pages by keyset in this order.
        indexes = [models.Index(fields=["name", "id"], name="customer_name")]

    def __str__(self):
        return self.name


class CustomerPermission(models.Model):
    """One grant of permission to use a customer's questions; active until revoked.

    Rows are never deleted: the grant and the revocation (who, when, why) stay on record."""

    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="permissions")
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=500, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revocation_note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-granted_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["customer"],
                condition=Q(revoked_at__isnull=True),
                name="customer_one_active_permission",
            ),
            models.CheckConstraint(
                condition=Q(revoked_at__isnull=True, revoked_by__isnull=True)
                | Q(revoked_at__isnull=False, revoked_by__isnull=False),
                name="customer_permission_revocation_complete",
            ),
        ]

    def __str__(self):
        return f"{self.customer_id} granted {self.granted_at:%Y-%m-%d}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class Triple(models.Model):
    """A gold-set candidate. Its content lives in numbered revisions; ``current_revision`` is the
    one under review (or gold). ``state`` only changes through the services in
    ``goldset.services.resolution`` and friends, each writing an audit event."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    external_id = models.CharField(max_length=100)
    state = models.CharField(
        max_length=20, choices=TripleState, default=TripleState.PENDING_REVIEW, db_index=True
    )
    previous_state = models.CharField(max_length=20, choices=TripleState, blank=True)
    resolution = models.CharField(max_length=20, choices=Resolution, blank=True)
    tier = models.CharField(max_length=10, choices=Tier)
    routing_rule = models.CharField(max_length=100)
    rules_version = models.PositiveIntegerField()
    source = models.CharField(max_length=30, choices=Source)
    customer = models.ForeignKey(
        Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="triples"
    )
    adversarial = models.BooleanField(default=False)
    model_uncertainty = models.DecimalField(max_digits=4, decimal_places=3, null=True, blank=True)
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="triples")
    task_type = models.CharField(max_length=20, choices=TaskType)
    difficulty = models.CharField(max_length=10, choices=Difficulty, default=Difficulty.STANDARD)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="authored_triples"
    )
    human_verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    human_verified_at = models.DateTimeField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    current_revision = models.ForeignKey(
        "TripleRevision", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    added_at = models.DateTimeField()
    gold_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Whether the current revision pins a block version that is no longer its block's newest.
    # Owned by database triggers (migration 0026_curation_pin_superseded): set when a triple
    # changes its current revision and when a newer version of the pinned block is inserted;
    # whatever a save writes here is replaced by the computed value.
    pin_superseded = models.BooleanField(default=False, editable=False)

    class Meta:
        ordering = ["-added_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="triple_external_id_per_project"
            ),
            models.CheckConstraint(
                condition=Q(source=Source.CUSTOMER_PERMISSIONED, customer__isnull=False)
                | (~Q(source=Source.CUSTOMER_PERMISSIONED) & Q(customer__isnull=True)),
                name="triple_customer_iff_customer_source",
            ),
            models.CheckConstraint(
                condition=Q(model_uncertainty__isnull=True)
                | (Q(model_uncertainty__gte=0) & Q(model_uncertainty__lte=1)),
                name="triple_uncertainty_0_1",
            ),
            models.CheckConstraint(
                condition=~Q(state=TripleState.GOLD) | ~Q(resolution=""),
                name="triple_gold_has_resolution",
            ),
            models.CheckConstraint(
                condition=~Q(state=TripleState.GOLD)
                | ~Q(source=Source.LLM_GENERATED)
                | Q(human_verified_by__isnull=False),
                name="triple_llm_gold_needs_human",
            ),
        ]
        indexes = [
            models.Index(fields=["author", "state"]),
            # The "needs re-review" list in its order, holding only its rows: the condition
            # mirrors goldset.rules.triple_states.needs_rereview_q (a test holds them equal).
            models.Index(
                fields=["updated_at", "id"],
                condition=~Q(
                    state__in=[
                        TripleState.DROPPED,
                        TripleState.SPLIT,
                        TripleState.RETIRED,
                        TripleState.REVOKED,
                    ]
                )
                & (Q(pin_superseded=True) | Q(state=TripleState.NEEDS_REREVIEW)),
                name="triple_needs_rereview",
            ),
            # The promotion page's list and batch, in id order, holding only promotable TRIAGE
            # triples: mirrors goldset.selectors.promotion.promotable_triples_q (a test holds
            # them equal).
            models.Index(
                fields=["id"],
                condition=Q(
                    tier=Tier.TRIAGE,
                    state__in=[TripleState.PENDING_REVIEW, TripleState.GOLD],
                    current_revision__isnull=False,
                ),
                name="triple_promotable",
            ),
        ]

    def __str__(self):
        return self.external_id


class TripleRevision(models.Model):
    """One numbered version of a triple's content, pinned to one block *version*.

    ``reviewers_needed`` is 2 for GOLD, 1 for TRIAGE (2 once drawn for a spot-check);
    ``assigned_count`` is only changed while the row is locked, so claims never over-assign.
    ``project`` repeats ``triple.project`` (set when the revision is created, never changed), so
    the review claim walks one project's open revisions in an index that starts with it."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    triple = models.ForeignKey(Triple, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    question = models.TextField()
    expected_block_version = models.ForeignKey(
        BlockVersion, on_delete=models.PROTECT, related_name="pinned_revisions"
    )
    expected_answer = models.TextField()
    # Why the author pinned a version that was already superseded when this revision was written
    # (empty for a pin to the block's current version); see goldset.services.triples.check_pin.
    superseded_reason = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    reviewers_needed = models.PositiveSmallIntegerField()
    assigned_count = models.PositiveSmallIntegerField(default=0)
    spot_check = models.BooleanField(default=False)

    class Meta:
        ordering = ["triple_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["triple", "number"], name="revision_number_unique"),
            models.CheckConstraint(
                condition=Q(reviewers_needed__gte=1) & Q(reviewers_needed__lte=2),
                name="revision_reviewers_1_2",
            ),
            models.CheckConstraint(
                condition=Q(assigned_count__lte=F("reviewers_needed")),
                name="revision_never_over_assigned",
            ),
        ]
        indexes = [
            models.Index(fields=["created_at", "id"]),
            # The review claim walks this, oldest first: only one project's revisions short of
            # reviewers (issue 27: other projects' open revisions are never walked past).
            models.Index(
                fields=["project", "created_at", "id"],
                condition=Q(assigned_count__lt=F("reviewers_needed")),
                name="revision_open_slots",
            ),
        ]

    def __str__(self):
        return f"{self.triple_id} r{self.number}"


class ReviewAssignment(models.Model):
    """A reviewer's claim on one review slot of a revision. Slot 2 of a TRIAGE revision is the
    spot-check second review."""

    revision = models.ForeignKey(
        TripleRevision, on_delete=models.PROTECT, related_name="assignments"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_assignments"
    )
    slot = models.PositiveSmallIntegerField()
    spot_check = models.BooleanField(default=False)
    assigned_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["assigned_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["revision", "reviewer"], name="assignment_reviewer_once"
            ),
            models.UniqueConstraint(fields=["revision", "slot"], name="assignment_slot_once"),
            models.CheckConstraint(
                condition=Q(slot__gte=1) & Q(slot__lte=2), name="assignment_slot_1_2"
            ),
        ]
        indexes = [models.Index(fields=["reviewer", "completed_at"])]

    def __str__(self):
        return f"{self.revision} slot {self.slot} → {self.reviewer_id}"


class Review(models.Model):
    """A blind, independent verdict on one revision. Flags are three booleans so that a
    constraint can require at least one flag on *flag* and none on *confirm*."""

    assignment = models.OneToOneField(
        ReviewAssignment, on_delete=models.PROTECT, related_name="review"
    )
    revision = models.ForeignKey(TripleRevision, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews"
    )
    verdict = models.CharField(max_length=10, choices=Verdict)
    question_unrealistic = models.BooleanField(default=False)
    wrong_source_block = models.BooleanField(default=False)
    answer_not_entailed = models.BooleanField(default=False)
    entailment_direction = models.CharField(max_length=12, choices=EntailmentDirection, blank=True)
    disagreement_category = models.CharField(
        max_length=20, choices=DisagreementCategory, blank=True
    )
    comment = models.TextField(blank=True)
    spot_check = models.BooleanField(default=False)
    submitted_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Time on item and the guideline in force (issue 14; see LabelAxes).
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
        ordering = ["submitted_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["revision", "reviewer"], name="review_once"),
            models.CheckConstraint(
                condition=Q(
                    verdict=Verdict.CONFIRM,
                    question_unrealistic=False,
                    wrong_source_block=False,
                    answer_not_entailed=False,
                    entailment_direction="",
                )
                | Q(verdict=Verdict.FLAG)
                & (
                    Q(question_unrealistic=True)
                    | Q(wrong_source_block=True)
                    | Q(answer_not_entailed=True)
                ),
                name="review_flag_names_a_problem",
            ),
            models.CheckConstraint(
                condition=Q(entailment_direction="") | Q(answer_not_entailed=True),
                name="review_direction_needs_entailment_flag",
            ),
        ]
        # "My recent reviews" and the undo lookup start with the person and the time (issue 26:
        # the submitted_at index alone walked everyone's reviews to find one person's).
        indexes = [
            models.Index(fields=["reviewer", "submitted_at", "id"], name="review_reviewer_time")
        ]

    def __str__(self):
        return f"{self.revision} {self.verdict} by {self.reviewer_id}"

    @property
    def flags(self) -> list[str]:
        return [f.value for f in Flag if getattr(self, f.value)]


class ReviewSkip(models.Model):
    """A reviewer passed on a revision with a reason; the slot went back to the pool and the
    revision is never offered to them again. Counted per reviewer on the lead's dashboard."""

    revision = models.ForeignKey(TripleRevision, on_delete=models.PROTECT, related_name="skips")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_skips"
    )
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["revision", "reviewer"], name="review_skip_revision_reviewer"
            )
        ]
        indexes = [models.Index(fields=["reviewer", "created_at"], name="review_skip_time")]

    def __str__(self):
        return f"skip {self.revision_id} by {self.reviewer_id}"


class DiscussionMessage(models.Model):
    triple = models.ForeignKey(Triple, on_delete=models.PROTECT, related_name="messages")
    revision = models.ForeignKey(TripleRevision, on_delete=models.PROTECT, related_name="+")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"message {self.pk} on {self.triple_id}"


class QualityTrackerEntry(models.Model):
    """A triple dropped because every reviewer flagged it: what was wrong, and who said so."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    triple = models.ForeignKey(Triple, on_delete=models.PROTECT, related_name="quality_entries")
    revision = models.OneToOneField(
        TripleRevision, on_delete=models.PROTECT, related_name="quality_entry"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="+")
    flags = models.JSONField(default=dict)  # flag -> how many reviewers named it
    categories = models.JSONField(default=list)
    comments = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"quality entry for {self.triple_id}"


class SpotCheckDraw(models.Model):
    """The weekly seeded draw of TRIAGE revisions that get a second (spot-check) review.

    ``eligible_revision_ids`` and ``seed`` reproduce ``selected_revision_ids`` exactly."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    iso_year = models.PositiveIntegerField()
    iso_week = models.PositiveSmallIntegerField()
    seed = models.BigIntegerField()
    rate = models.DecimalField(max_digits=4, decimal_places=3)
    eligible_revision_ids = models.JSONField(default=list)
    selected_revision_ids = models.JSONField(default=list)
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    drawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-iso_year", "-iso_week"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "iso_year", "iso_week"],
                name="spot_check_once_a_week_per_project",
            )
        ]

    def __str__(self):
        return f"spot-check {self.week}"

    @property
    def week(self) -> str:
        return f"{self.iso_year}-W{self.iso_week:02d}"


class WorkingSlice(models.Model):
    """A quarter's seeded, domain-stratified sample of the gold set."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    quarter = models.CharField(max_length=7)  # "2026Q1"
    seed = models.BigIntegerField()
    size = models.PositiveIntegerField()
    triple_ids = models.JSONField(default=list)
    strata = models.JSONField(default=dict)  # domain slug -> count drawn
    gold_count = models.PositiveIntegerField()
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    drawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-quarter"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "quarter"], name="working_slice_quarter_per_project"
            )
        ]

    def __str__(self):
        return f"working slice {self.quarter}"
