"""REST API v1: labels, reviews and adjudications (issue 29), with the pages' blinding and rules.

Reads go through the selectors the pages use (``list_labels_for``, ``list_reviews_for``,
``list_adjudications_for``, the blind read models), so an annotator reads only their own labels
and a lead no system identity nor who labeled what. Writes go through the pages' forms (one field
policy) and services (``submit_label``, ``submit_review``, ``record_adjudication``): an annotator
labels an item they claimed, a reviewer reviews a revision assigned to them, a lead adjudicates
an item of their queue. Who may write is the role of the page that does the same thing
(``workbench.access``), checked here for the method; reads are the endpoint's own entry."""

from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import generics, serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from goldset.exceptions import GoldsetError
from goldset.forms.answers import AdjudicationForm, LabelForm
from goldset.forms.curation import ReviewForm
from goldset.models import (
    Acceptability,
    AdjudicationReason,
    CitationCorrectness,
    ConflictHandling,
    DisagreementCategory,
    EntailmentDirection,
    EvidenceSufficiency,
    FailureCategory,
    Flag,
    Grounding,
    SafetyBoundary,
    Verdict,
)
from goldset.selectors import answers as answer_selectors
from goldset.selectors import curation as curation_selectors
from goldset.services.adjudication import AdjudicationRejected, record_adjudication
from goldset.services.labeling import (
    LabelingClosed,
    LabelRuleViolation,
    claim_next_item,
    submit_label,
)
from goldset.services.locking import SubmitBusy
from goldset.services.reviews import claim_next_assignment, submit_review
from goldset.views.api import ApiList
from goldset.views.api_support import (
    Cursor,
    Problem,
    api_url,
    check_page_role,
    check_query,
    form_errors,
    problem_response,
)

# ---------------------------------------------------------------- shapes


class LabelSerializer(serializers.Serializer):
    """A label as the pages show it to the caller: the item by its opaque id, the slot
    (Annotator 1/2/3), ``labeler`` only for the roles that see labelers (admins; else "")."""

    id = serializers.IntegerField()
    record = serializers.CharField(source="record_public_id")
    slot = serializers.IntegerField()
    calibration = serializers.BooleanField()
    labeler = serializers.CharField(source="labeler_name", allow_blank=True)
    acceptability = serializers.ChoiceField(choices=Acceptability.choices)
    grounding = serializers.ChoiceField(choices=Grounding.choices)
    evidence_sufficiency = serializers.ChoiceField(choices=EvidenceSufficiency.choices)
    citation_correctness = serializers.ChoiceField(choices=CitationCorrectness.choices)
    conflict_handling = serializers.ChoiceField(choices=ConflictHandling.choices)
    safety_boundary = serializers.ChoiceField(choices=SafetyBoundary.choices)
    severe_safety = serializers.BooleanField()
    primary_failure = serializers.CharField(allow_blank=True)
    secondary_failures = serializers.ListField(child=serializers.CharField())
    rationale = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class _AxesRequest(serializers.Serializer):
    """The axes a label and an adjudication share (shape only: the page's form and the service
    apply the rules)."""

    record = serializers.CharField(max_length=64, help_text="The item's opaque id.")
    acceptability = serializers.ChoiceField(choices=Acceptability.choices)
    grounding = serializers.ChoiceField(choices=Grounding.choices)
    severe_safety = serializers.BooleanField(default=False)
    primary_failure = serializers.ChoiceField(
        choices=FailureCategory.choices, allow_blank=True, default=""
    )
    secondary_failures = serializers.ListField(
        child=serializers.ChoiceField(choices=FailureCategory.choices), default=list, max_length=9
    )
    rationale = serializers.CharField(allow_blank=True, default="", max_length=10000)


class LabelRequestSerializer(_AxesRequest):
    evidence_sufficiency = serializers.ChoiceField(choices=EvidenceSufficiency.choices)
    citation_correctness = serializers.ChoiceField(choices=CitationCorrectness.choices)
    conflict_handling = serializers.ChoiceField(choices=ConflictHandling.choices)
    safety_boundary = serializers.ChoiceField(choices=SafetyBoundary.choices)


class AdjudicationRequestSerializer(_AxesRequest):
    pass


class QuestionSerializer(serializers.Serializer):
    """A question as annotators and leads see it (``BlindQuestion``)."""

    question_id = serializers.CharField()
    text = serializers.CharField()
    domain = serializers.CharField(source="domain_slug")
    task_family = serializers.CharField()
    conflict_flag = serializers.BooleanField()
    freshness_flag = serializers.BooleanField()
    adversarial = serializers.BooleanField()
    safety_flags = serializers.ListField(child=serializers.CharField())
    required_behavior = serializers.CharField(allow_blank=True)
    prohibited_behaviors = serializers.ListField(child=serializers.CharField())


class PassageSerializer(serializers.Serializer):
    """A gold evidence passage or a citation: the pinned block version and its text."""

    passage_ref = serializers.CharField()
    document_id = serializers.CharField(source="block_version.block.document.document_id")
    block_id = serializers.CharField(source="block_version.block.block_id")
    version = serializers.IntegerField(source="block_version.version")
    newest_version = serializers.IntegerField(allow_null=True)
    text = serializers.CharField(source="block_version.text")


class RetrievedSerializer(serializers.Serializer):
    """A passage the answer's retrieval returned, at its rank: in the corpus (its pinned block
    version) or not (``in_corpus`` false: the text as the trace sent it, the document id it
    named). ``score``: the retriever's, for admins only (null for everyone else)."""

    rank = serializers.IntegerField()
    passage_ref = serializers.CharField()
    in_corpus = serializers.BooleanField()
    document_id = serializers.CharField(
        source="block_version.block.document.document_id", allow_null=True, default=None
    )
    block_id = serializers.CharField(source="block_version.block.block_id", default=None)
    version = serializers.IntegerField(source="block_version.version", default=None)
    newest_version = serializers.IntegerField(allow_null=True)
    text = serializers.CharField()
    score = serializers.FloatField(allow_null=True)


class ItemSerializer(serializers.Serializer):
    """The item to label, as the label page shows it (``ItemPacket``): question, answer, gold
    evidence, near misses, citations and the passages retrieved (in the corpus or not); never
    the system, run or model."""

    record = serializers.CharField(source="record.public_id")
    question = QuestionSerializer(source="record.question")
    answer = serializers.CharField(source="record.answer")
    gold = PassageSerializer(many=True)
    near_misses = PassageSerializer(many=True)
    citations = PassageSerializer(many=True)
    retrieved = RetrievedSerializer(many=True)


class ClaimSerializer(serializers.Serializer):
    claimed = serializers.BooleanField()
    reason = serializers.CharField(help_text="claimed, resumed, queue_empty, …")
    message = serializers.CharField()
    slot = serializers.IntegerField(allow_null=True)
    item = ItemSerializer(allow_null=True)


class ReviewSerializer(serializers.Serializer):
    """A review as the triple's page shows it (after resolution) or the reviewer's own."""

    id = serializers.IntegerField()
    triple = serializers.CharField(source="revision.triple.external_id")
    revision = serializers.IntegerField(source="revision.number")
    slot = serializers.IntegerField(source="assignment.slot")
    reviewer = serializers.CharField(source="reviewer.username")
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    flags = serializers.ListField(child=serializers.ChoiceField(choices=Flag.choices))
    entailment_direction = serializers.CharField(allow_blank=True)
    disagreement_category = serializers.CharField(allow_blank=True)
    comment = serializers.CharField(allow_blank=True)
    spot_check = serializers.BooleanField()
    submitted_at = serializers.DateTimeField()


class ReviewRequestSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(
        min_value=1, max_value=2**63 - 1, help_text="Your review assignment (from reviews/claim/)."
    )
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    flags = serializers.ListField(
        child=serializers.ChoiceField(choices=Flag.choices), default=list, max_length=3
    )
    entailment_direction = serializers.ChoiceField(
        choices=EntailmentDirection.choices, allow_blank=True, default=""
    )
    disagreement_category = serializers.ChoiceField(
        choices=DisagreementCategory.choices, allow_blank=True, default=""
    )
    comment = serializers.CharField(allow_blank=True, default="", max_length=10000)


class BlockTextSerializer(serializers.Serializer):
    document_id = serializers.CharField(source="block.document.document_id")
    block_id = serializers.CharField(source="block.block_id")
    version = serializers.IntegerField()
    section = serializers.CharField(allow_blank=True)
    text = serializers.CharField()


class ReviewTaskSerializer(serializers.Serializer):
    """A revision to review, as the review page shows it (no other review, no author)."""

    assignment = serializers.IntegerField(source="pk")
    triple = serializers.CharField(source="revision.triple.external_id")
    revision = serializers.IntegerField(source="revision.number")
    domain = serializers.CharField(source="revision.triple.domain.slug")
    task_type = serializers.CharField(source="revision.triple.task_type")
    question = serializers.CharField(source="revision.question")
    expected_answer = serializers.CharField(source="revision.expected_answer")
    expected_block = BlockTextSerializer(source="revision.expected_block_version")
    spot_check = serializers.BooleanField()


class ReviewClaimSerializer(serializers.Serializer):
    claimed = serializers.BooleanField()
    message = serializers.CharField()
    task = ReviewTaskSerializer(allow_null=True)


class AdjudicationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    record = serializers.CharField(source="record_public_id")
    reason = serializers.ChoiceField(choices=AdjudicationReason.choices)
    lead = serializers.CharField(source="lead_name")
    acceptability = serializers.ChoiceField(choices=Acceptability.choices)
    grounding = serializers.ChoiceField(choices=Grounding.choices)
    severe_safety = serializers.BooleanField()
    primary_failure = serializers.CharField(allow_blank=True)
    secondary_failures = serializers.ListField(child=serializers.CharField())
    rationale = serializers.CharField(allow_blank=True)
    changed_outcome = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class OpenItemSerializer(serializers.Serializer):
    """An item waiting for a lead, with its labels as the adjudication page shows them."""

    record = serializers.CharField(source="public_id")
    status = serializers.CharField()
    reason = serializers.CharField(source="adjudication_reason", allow_blank=True)
    question = serializers.SerializerMethodField()
    answer = serializers.CharField()
    labels = LabelSerializer(many=True, source="blind_labels")
    created_at = serializers.DateTimeField()

    @extend_schema_field(QuestionSerializer)
    def get_question(self, obj) -> dict:
        return QuestionSerializer(answer_selectors.BlindRecord.of(obj).question).data


# ---------------------------------------------------------------- helpers


def _checked_by_form(form_class, data: dict, *, what: str):
    """The page's form over the body (one field policy): a contradiction between axes
    (``goldset.rules.label_consistency``) is a 422 naming the field."""
    values = {**data, "severe_safety": "yes" if data.get("severe_safety") else "no"}
    form = form_class(
        MultiValueDict({k: v if isinstance(v, list) else [v] for k, v in values.items()})
    )
    if not form.is_valid():
        raise Problem(
            status_code=422,
            title="Unprocessable request",
            detail=f"The {what} breaks a rule: "
            + "; ".join(e["message"] for e in form_errors(form)),
            errors=form_errors(form),
        )
    return form


def _busy(exc: SubmitBusy):
    return problem_response(
        status_code=503,
        title="Service Unavailable",
        detail=str(exc),
        headers={"Retry-After": str(exc.retry_after_seconds)},
    )


def _rule_problem(exc: GoldsetError, *, status_code: int = 422) -> Problem:
    field = getattr(exc, "field", None) or ""
    return Problem(
        status_code=status_code,
        title="Conflict" if status_code == 409 else "Unprocessable request",
        detail=str(exc),
        errors=[{"field": field, "message": str(exc)}] if field else None,
    )


BUSY = OpenApiResponse(description="The item is locked elsewhere; retry after Retry-After.")


# ---------------------------------------------------------------- labels


class LabelList(ApiList, generics.CreateAPIView):
    """Labels: GET the labels the pages show you (annotators their own; leads and admins also
    those of the items their adjudication queue opens to them, the labeler named for admins
    only); POST a label on an item you claimed (annotators: ``labels/claim/``)."""

    serializer_class = LabelSerializer
    pagination_class = type("LabelCursor", (Cursor,), {"ordering": "-id"})
    query_filters = ("record",)
    updated_fields = ("created_at",)

    @extend_schema(parameters=[OpenApiParameter("record", str, description="One item's labels.")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return answer_selectors.list_labels_for(
            project=self.request.project,
            user=self.request.user,
            record=self.request.query_params.get("record", ""),
        )

    @extend_schema(
        request=LabelRequestSerializer,
        responses={
            200: OpenApiResponse(LabelSerializer, description="Already labeled: your label."),
            201: OpenApiResponse(LabelSerializer, description="Stored."),
            409: OpenApiResponse(description="The item no longer takes labels."),
            422: OpenApiResponse(description="A label rule (the field is named in errors)."),
            503: BUSY,
        },
    )
    def post(self, request, *args, **kwargs):
        check_query(request, allowed=())
        check_page_role(request, "answers:item", "label items")
        body = LabelRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        assignment = answer_selectors.get_assignment_for(
            project=request.project, annotator=request.user, public_id=data.pop("record")
        )
        form = _checked_by_form(LabelForm, data, what="label")
        existing = answer_selectors.get_own_label(assignment)
        try:
            label = submit_label(assignment=assignment, **form.service_kwargs())
        except LabelRuleViolation as exc:
            raise _rule_problem(exc) from exc
        except LabelingClosed as exc:
            raise _rule_problem(exc, status_code=409) from exc
        except SubmitBusy as exc:
            return _busy(exc)
        shown = answer_selectors.get_label_for(
            project=request.project, user=request.user, pk=label.pk
        )
        if existing is not None:
            return Response(LabelSerializer(shown).data)
        return Response(
            LabelSerializer(shown).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:label", pk=label.pk)},
        )


class LabelDetail(generics.RetrieveAPIView):
    """One label of those ``labels/`` lists for you (404 for any other)."""

    serializer_class = LabelSerializer

    def get_object(self):
        check_query(self.request, allowed=())
        return answer_selectors.get_label_for(
            project=self.request.project, user=self.request.user, pk=self.kwargs["pk"]
        )


@extend_schema(request=None, responses={200: ClaimSerializer})
@api_view(["POST"])
def label_claim(request):
    """Claim your next item to label (the label queue's "next item"): your open claim when
    you hold one, else the next in your seeded order; ``claimed`` false with the reason when
    there is none. The item is blind: question, answer, evidence, never the system."""
    check_query(request, allowed=())
    result = claim_next_item(project=request.project, annotator=request.user)
    assignment = result.assignment
    item = None
    if assignment is not None:
        item = ItemSerializer(
            answer_selectors.get_item_packet(assignment.record, user=request.user)
        ).data
    return Response(
        {
            "claimed": assignment is not None,
            "reason": result.reason,
            "message": result.message,
            "slot": assignment.slot if assignment else None,
            "item": item,
        }
    )


# ---------------------------------------------------------------- reviews


class ReviewList(ApiList, generics.CreateAPIView):
    """Triple reviews: GET the reviews the pages show you (your own, and on the triples you may
    see, those of revisions no longer under review: reviews stay blind until resolution); POST
    a review of a revision assigned to you (annotators: ``reviews/claim/``)."""

    serializer_class = ReviewSerializer
    pagination_class = type("ReviewCursor", (Cursor,), {"ordering": "-id"})
    query_filters = ("triple",)
    updated_fields = ("submitted_at",)

    @extend_schema(parameters=[OpenApiParameter("triple", str, description="One triple's.")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return curation_selectors.list_reviews_for(
            project=self.request.project,
            user=self.request.user,
            triple=self.request.query_params.get("triple", ""),
        )

    @extend_schema(
        request=ReviewRequestSerializer,
        responses={
            200: OpenApiResponse(ReviewSerializer, description="Already reviewed: yours."),
            201: OpenApiResponse(ReviewSerializer, description="Stored."),
            422: OpenApiResponse(description="A review rule, or the revision takes no reviews."),
            503: BUSY,
        },
    )
    def post(self, request, *args, **kwargs):
        check_query(request, allowed=())
        check_page_role(request, "curation:review", "review triples")
        body = ReviewRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        assignment = curation_selectors.get_assignment_for(
            project=request.project, user=request.user, pk=data.pop("assignment")
        )
        form = ReviewForm(
            MultiValueDict({k: v if isinstance(v, list) else [v] for k, v in data.items()})
        )
        if not form.is_valid():
            raise Problem(
                status_code=422,
                title="Unprocessable request",
                detail="The review breaks a rule.",
                errors=form_errors(form),
            )
        existing = curation_selectors.get_own_review(assignment=assignment)
        try:
            review = submit_review(
                reviewer=request.user, revision=assignment.revision, **form.cleaned_data
            )
        except GoldsetError as exc:
            raise _rule_problem(exc) from exc
        except SubmitBusy as exc:
            return _busy(exc)
        shown = curation_selectors.get_review_for(
            project=request.project, user=request.user, pk=review.pk
        )
        if existing is not None:
            return Response(ReviewSerializer(shown).data)
        return Response(
            ReviewSerializer(shown).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:review", pk=review.pk)},
        )


class ReviewDetail(generics.RetrieveAPIView):
    """One review of those ``reviews/`` lists for you (404 for any other)."""

    serializer_class = ReviewSerializer

    def get_object(self):
        check_query(self.request, allowed=())
        return curation_selectors.get_review_for(
            project=self.request.project, user=self.request.user, pk=self.kwargs["pk"]
        )


@extend_schema(request=None, responses={200: ReviewClaimSerializer})
@api_view(["POST"])
def review_claim(request):
    """Claim the next revision to review (the review queue's "next item"); ``claimed`` false
    when nothing waits for you. The revision as the review page shows it: no other review."""
    check_query(request, allowed=())
    assignment = claim_next_assignment(project=request.project, reviewer=request.user)
    task = None
    if assignment is not None:
        shown = curation_selectors.get_assignment_for(
            project=request.project, user=request.user, pk=assignment.pk
        )
        task = ReviewTaskSerializer(shown).data
    message = "Claimed." if task else "Nothing is waiting for your review right now."
    return Response({"claimed": task is not None, "message": message, "task": task})


# ---------------------------------------------------------------- adjudications


class AdjudicationList(ApiList, generics.CreateAPIView):
    """Adjudications (leads and admins): GET those of the items your queue opens to you (never
    an item you labeled); POST the final label of an item waiting in your queue
    (``adjudications/queue/``), a rationale always required."""

    serializer_class = AdjudicationSerializer
    pagination_class = type("AdjudicationCursor", (Cursor,), {"ordering": "-id"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        return answer_selectors.list_adjudications_for(
            project=self.request.project, user=self.request.user
        )

    @extend_schema(
        request=AdjudicationRequestSerializer,
        responses={
            201: OpenApiResponse(AdjudicationSerializer, description="Recorded."),
            409: OpenApiResponse(description="Already adjudicated."),
            422: OpenApiResponse(description="A rule (the field is named in errors)."),
            503: BUSY,
        },
    )
    def post(self, request, *args, **kwargs):
        check_query(request, allowed=())
        check_page_role(request, "answers:adjudicate", "adjudicate items")
        body = AdjudicationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        record = answer_selectors.access_record_for_adjudication(
            user=request.user, project=request.project, public_id=data.pop("record")
        )
        form = _checked_by_form(AdjudicationForm, data, what="adjudication")
        try:
            adjudication = record_adjudication(
                lead=request.user, record=record, **form.service_kwargs()
            )
        except LabelRuleViolation as exc:
            raise _rule_problem(exc) from exc
        except AdjudicationRejected as exc:
            raise _rule_problem(exc, status_code=409) from exc
        except SubmitBusy as exc:
            return _busy(exc)
        shown = answer_selectors.get_adjudication_for(
            project=request.project, user=request.user, pk=adjudication.pk
        )
        return Response(
            AdjudicationSerializer(shown).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:adjudication", pk=adjudication.pk)},
        )


class AdjudicationDetail(generics.RetrieveAPIView):
    serializer_class = AdjudicationSerializer

    def get_object(self):
        check_query(self.request, allowed=())
        return answer_selectors.get_adjudication_for(
            project=self.request.project, user=self.request.user, pk=self.kwargs["pk"]
        )


class AdjudicationQueue(ApiList):
    """The items waiting for you as a lead (no majority, a severe-safety label, or the audit
    sample; never one you labeled), oldest first, each with its question, answer and labels
    by slot (the labeler named for admins only): the adjudication page's view."""

    serializer_class = OpenItemSerializer
    pagination_class = type("OpenItemCursor", (Cursor,), {"ordering": "id"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        return answer_selectors.list_open_items_for_lead(
            user=self.request.user, project=self.request.project
        )
