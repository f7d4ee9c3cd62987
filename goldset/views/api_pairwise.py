"""Pairwise review through the REST API (issue 30): reviewers claim a pair, read it blind and
submit a judgment; leads and admins list tasks and read a task's judgments and analysis. Thin
over the pages' selectors and services (``goldset.selectors.pairwise``,
``goldset.services.pairwise``): a pair is the pages' blind read model
(``BLIND_PAIR_FIELDS``), systems are named for admins only, reviewers as "Reviewer N" unless the
caller's roles see labelers. Roles: the access table's ``api:pairwise_*`` entries."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from goldset.models import ImportKind, PairJudgment, PairwiseTask
from goldset.rules.pairwise import CHOICES, choice_from_preference
from goldset.rules.time_on_item import ItemTiming, parse_active_ms
from goldset.selectors import pairwise as selectors
from goldset.services.locking import SubmitBusy
from goldset.services.pairwise import claim_next_pair, submit_judgment
from goldset.views import api_serializers as s
from goldset.views.api import ApiList, _queued_import
from goldset.views.api_parsers import DepthLimitedJSONParser
from goldset.views.api_support import Cursor, Problem, api_url, check_query

# ---------------------------------------------------------------- shapes


class BlindFieldsSerializer(serializers.Serializer):
    """The blind pair's fields (``BLIND_PAIR_FIELDS``): the question and the two answers on the
    sides drawn for the caller. No record, run, system or model id (the pages' field policy)."""

    public_id = serializers.CharField()
    question_text = serializers.CharField()
    domain_name = serializers.CharField()
    task_family = serializers.CharField()
    left_answer = serializers.CharField()
    right_answer = serializers.CharField()
    status = serializers.CharField()
    status_display = serializers.CharField()


def blind_fields(pair: selectors.BlindPair) -> dict:
    """A blind read model as the API sends it (its field policy; the internal pk stays)."""
    return {name: getattr(pair, name) for name in selectors.BLIND_PAIR_FIELDS}


class BlindPairSerializer(BlindFieldsSerializer):
    """A pair as its reviewer sees it, with their own judgment."""

    judgment = serializers.ChoiceField(
        choices=list(CHOICES),
        allow_null=True,
        help_text="The caller's own judgment as they chose it on screen (null: not judged yet).",
    )


class JudgmentRequestSerializer(serializers.Serializer):
    choice = serializers.ChoiceField(
        choices=list(CHOICES),
        help_text="left, right (as the pair is shown to you), tie, both_unacceptable",
    )
    strength = serializers.ChoiceField(
        choices=["", "slightly", "clearly"], required=False, default=""
    )
    rationale = serializers.CharField(required=False, default="", allow_blank=True)
    active_ms = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="The time you were active on the pair, in ms, as your tool measured it (the "
        "page's active time): kept up to the server time since your claim plus the allowed "
        "slack; without it only the server time is stored.",
    )


class TaskSerializer(serializers.ModelSerializer):
    pairs = serializers.IntegerField(source="n_pairs")
    judgments = serializers.IntegerField(source="n_judgments")
    decided = serializers.IntegerField(source="n_final")
    split = serializers.IntegerField(source="n_split")

    class Meta:
        model = PairwiseTask
        fields = [
            "id", "name", "design", "comparisons_per_question", "seed", "tier",
            "reviewers_per_pair", "created_at", "pairs", "judgments", "decided", "split",
        ]  # fmt: skip


class TaskJudgmentSerializer(serializers.ModelSerializer):
    """A judgment relative to the pair's records A and B (``left``: which one the reviewer saw
    on the left). ``system_a``/``system_b``: for admins only (null otherwise)."""

    pair = serializers.CharField(source="pair.public_id")
    question_id = serializers.CharField(source="pair.question.question_id")
    reviewer = serializers.SerializerMethodField()
    system_a = serializers.SerializerMethodField()
    system_b = serializers.SerializerMethodField()

    class Meta:
        model = PairJudgment
        fields = [
            "pair", "question_id", "reviewer", "preference", "strength", "rationale", "left",
            "created_at", "system_a", "system_b",
        ]  # fmt: skip

    def get_reviewer(self, obj) -> str:
        return self.context["names"]["reviewers"][obj.reviewer_id]

    def get_system_a(self, obj) -> str | None:
        return self.context["names"]["systems"].get(obj.pair.record_a.run.system_id)

    def get_system_b(self, obj) -> str | None:
        return self.context["names"]["systems"].get(obj.pair.record_b.run.system_id)


class IntervalSerializer(serializers.Serializer):
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class RankingSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    system = serializers.CharField(help_text='The system id for admins, "System N" otherwise.')
    strength = serializers.FloatField(help_text="Bradley–Terry log-strength (mean 0).")
    ci = IntervalSerializer()
    n_judgments = serializers.IntegerField()


class SystemPairSerializer(serializers.Serializer):
    system_a = serializers.CharField()
    system_b = serializers.CharField()
    n_judgments = serializers.IntegerField()
    wins_a = serializers.IntegerField()
    wins_b = serializers.IntegerField()
    ties = serializers.IntegerField()
    both_unacceptable = serializers.IntegerField()
    win_rate_a = serializers.FloatField(allow_null=True)
    win_rate_a_ci = IntervalSerializer()
    p_b_beats_a = serializers.FloatField()
    p_b_beats_a_ci = IntervalSerializer()


class KappaSerializer(serializers.Serializer):
    reviewer_a = serializers.CharField()
    reviewer_b = serializers.CharField()
    kappa = serializers.FloatField(allow_null=True)
    n_items = serializers.IntegerField()


class AgreementSerializer(serializers.Serializer):
    alpha = serializers.FloatField(allow_null=True)
    alpha_reason = serializers.CharField(allow_blank=True)
    n_items = serializers.IntegerField()
    n_reviewers = serializers.IntegerField()
    kappa = KappaSerializer(many=True)


class PositionBiasSerializer(serializers.Serializer):
    reviewer = serializers.CharField(allow_null=True, help_text="null: all reviewers together")
    n_decisive = serializers.IntegerField()
    n_left = serializers.IntegerField()
    share_left = serializers.FloatField(allow_null=True)
    pvalue = serializers.FloatField(allow_null=True)


class AnalysisSerializer(serializers.Serializer):
    task = serializers.IntegerField()
    reason = serializers.CharField(allow_blank=True, help_text="Why there is no analysis yet.")
    n_judgments = serializers.IntegerField(required=False)
    n_questions = serializers.IntegerField(required=False)
    mle_exists = serializers.BooleanField(required=False)
    settings = serializers.DictField(required=False)
    ranking = RankingSerializer(many=True, required=False)
    pairs = SystemPairSerializer(many=True, required=False)
    agreement = AgreementSerializer(required=False)
    position_bias = PositionBiasSerializer(many=True, required=False)


# ---------------------------------------------------------------- reviewers


def _blind(assignment) -> dict:
    data = blind_fields(selectors.BlindPair.of(assignment.pair, left=assignment.left))
    judgment = selectors.get_own_judgment(assignment)
    data["judgment"] = judgment and choice_from_preference(
        judgment.preference, left=assignment.left
    )
    return BlindPairSerializer(data).data


@extend_schema(
    request=None,
    responses={
        200: BlindPairSerializer,
        204: OpenApiResponse(description="No pair is waiting for you."),
        409: OpenApiResponse(description="Qualify first: pass the calibration pairs."),
    },
)
@api_view(["POST"])
def pairwise_claim(request):
    """Claim your next pair (your open pair first), blind, as the queue's "Next pair" does."""
    if not selectors.is_pair_qualified(project=request.project, reviewer=request.user):
        raise Problem(
            status_code=409,
            title="Conflict",
            detail="Qualify first: judge the project's calibration pairs on the pairwise page.",
        )
    assignment = claim_next_pair(project=request.project, reviewer=request.user)
    if assignment is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=assignment.pair.public_id
    )
    return Response(_blind(assignment))


@extend_schema(responses={200: BlindPairSerializer})
@api_view(["GET"])
def pairwise_pair(request, public_id):
    """One of your pairs, blind (404 when it is not yours)."""
    check_query(request, allowed=())
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=public_id
    )
    return Response(_blind(assignment))


@extend_schema(
    request=JudgmentRequestSerializer,
    responses={
        201: BlindPairSerializer,
        200: OpenApiResponse(
            BlindPairSerializer, description="Already judged: your first judgment."
        ),
        422: OpenApiResponse(description="Rejected by a rule; ``errors`` names the field."),
        503: OpenApiResponse(description="The pair is locked elsewhere; retry (Retry-After)."),
    },
)
@api_view(["POST"])
@parser_classes([DepthLimitedJSONParser, FormParser, MultiPartParser])
def pairwise_judge(request, public_id):
    """Judge one of your pairs: ``choice`` as the pair is shown to you (left/right), the same
    rules as the page (strength with a preference, a rationale when a rule requires one). Time
    on item is recorded as for the page: server time since your claim, ``active_ms`` if sent."""
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=public_id
    )
    body = JudgmentRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    already = selectors.get_own_judgment(assignment) is not None
    data = dict(body.validated_data)
    # time on item as for the pages: the server time runs from the claim (the API has no page
    # opening), the client's active time is parsed and capped by the same rules
    timing = ItemTiming(active_ms=parse_active_ms(data.pop("active_ms", None)))
    try:
        submit_judgment(assignment=assignment, **data, timing=timing)
    except SubmitBusy as exc:
        return Response(
            {"type": "about:blank", "title": "Busy", "status": 503, "detail": str(exc)},
            status=503,
            content_type="application/problem+json",
            headers={"Retry-After": str(exc.retry_after_seconds)},
        )
    assignment.refresh_from_db()
    code = status.HTTP_200_OK if already else status.HTTP_201_CREATED
    headers = {"Location": api_url(request, "api:pairwise_pair", public_id=public_id)}
    return Response(_blind(assignment), status=code, headers=headers)


# ---------------------------------------------------------------- leads and admins


class PairwiseTaskList(ApiList):
    """The project's pairwise tasks, newest first, with pair, judgment, decided and split
    counts."""

    serializer_class = TaskSerializer
    pagination_class = type("PairwiseTaskCursor", (Cursor,), {"ordering": "-id"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        return selectors.list_task_summaries(project=self.request.project)


class PairwiseJudgmentList(ApiList):
    """A task's judgments in the order they were made; reviewers and systems named as the
    caller's roles allow (systems: admins only)."""

    serializer_class = TaskJudgmentSerializer
    pagination_class = type("PairwiseJudgmentCursor", (Cursor,), {"ordering": "id"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        self.task = selectors.get_task_for(project=self.request.project, pk=self.kwargs["pk"])
        return selectors.list_task_judgments(task=self.task)

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if hasattr(self, "task"):
            context["names"] = selectors.judgment_names(task=self.task, user=self.request.user)
        return context


@extend_schema(responses={200: AnalysisSerializer})
@api_view(["GET"])
def pairwise_analysis(request, pk):
    """The task's analysis, as on its page: Bradley–Terry ranking with bootstrap CIs, win rates
    per pair of systems, agreement on preferences, position bias."""
    check_query(request, allowed=())
    task = selectors.get_task_for(project=request.project, pk=pk)
    analysis = selectors.get_pairwise_analysis(task=task, user=request.user)
    data = selectors.analysis_data(analysis) or {}
    return Response(AnalysisSerializer({"task": task.pk, "reason": analysis.reason, **data}).data)


@extend_schema(
    request={"multipart/form-data": s.FileUploadSerializer},
    responses={202: s.ImportJobSerializer},
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def pairwise_judgments_import(request, pk):
    """Import judgments into a task (JSONL: pair, reviewer, preference, strength, rationale,
    left; see the README) in the background, all or nothing: 202 with the import job; poll
    ``Location`` for status and errors with line and field. Admins only (the file names
    reviewers)."""
    task = selectors.get_task_for(project=request.project, pk=pk)
    body = s.FileUploadSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    return _queued_import(
        request,
        kind=ImportKind.PAIRWISE,
        upload=body.validated_data["file"],
        options={"task": task.pk},
    )
