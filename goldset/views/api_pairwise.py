"""Pairwise review through the REST API (issue 30): reviewers claim a pair, read it blind,
submit a judgment, skip a pair and undo their last judgment; leads and admins list and create
tasks (from the runs as the task form offers them), read a task's judgments and analysis and
adjudicate a split. Thin over the pages' selectors and services (``goldset.selectors.pairwise``,
``goldset.services.pairwise``): a pair is the pages' blind read model
(``BLIND_PAIR_FIELDS``), systems are named for admins only, reviewers as "Reviewer N" unless the
caller's roles see labelers. Roles: the access table's ``api:pairwise_*`` entries."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from goldset.models import (
    ImportKind,
    PairJudgment,
    PairwiseDesign,
    PairwiseTask,
    Strength,
    Tier,
)
from goldset.rules.pairwise import (
    CHOICES,
    DEFAULT_PAIRWISE_SEED,
    MAX_COMPARISONS_PER_QUESTION,
    choice_from_preference,
)
from goldset.rules.time_on_item import ItemTiming, parse_active_ms
from goldset.selectors import pairwise as selectors
from goldset.services.locking import SubmitBusy
from goldset.services.pairwise import (
    PairwiseRejected,
    claim_next_pair,
    create_pairwise_task,
    record_pair_adjudication,
    skip_pair,
    submit_judgment,
    undo_last_judgment,
)
from goldset.services.version_tags import UnknownVersion, resolve_version
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


class DecisionRequestSerializer(serializers.Serializer):
    """What a judgment and an adjudication of a pair send (as the pair is shown to you)."""

    choice = serializers.ChoiceField(
        choices=list(CHOICES),
        help_text="left, right (as the pair is shown to you), tie, both_unacceptable",
    )
    strength = serializers.ChoiceField(
        choices=[("", ""), *Strength.choices], required=False, default=""
    )
    rationale = serializers.CharField(required=False, default="", allow_blank=True)


class JudgmentRequestSerializer(DecisionRequestSerializer):
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
    gold_version = serializers.IntegerField(
        source="gold_version.number",
        allow_null=True,
        help_text="The frozen gold version whose questions the task compares (null: none).",
    )

    class Meta:
        model = PairwiseTask
        fields = [
            "id", "name", "gold_version", "design", "comparisons_per_question", "seed", "tier",
            "reviewers_per_pair", "created_at", "pairs", "judgments", "decided", "split",
        ]  # fmt: skip


class TaskRequestSerializer(serializers.Serializer):
    """A new task, as the task form takes it."""

    name = serializers.CharField(max_length=200)
    runs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
        min_length=2,
        max_length=100,
        help_text="Two or more runs of the project, one per system: their ``id`` as "
        "``pairwise/runs/`` lists them.",
    )
    design = serializers.ChoiceField(
        choices=PairwiseDesign.choices, required=False, default=PairwiseDesign.ALL_PAIRS
    )
    comparisons_per_question = serializers.IntegerField(
        min_value=1,
        max_value=MAX_COMPARISONS_PER_QUESTION,
        required=False,
        allow_null=True,
        help_text="For the balanced design: the comparisons drawn per question.",
    )
    tier = serializers.ChoiceField(
        choices=Tier.choices,
        required=False,
        default=Tier.GOLD,
        help_text="Reviewers per pair: the project's labels per item of this tier.",
    )
    seed = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, default=DEFAULT_PAIRWISE_SEED
    )
    gold_version = serializers.CharField(
        max_length=100,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Compare only the questions of this frozen version: a number (7, v7), a tag "
        "of the project or latest. Empty or null: none.",
    )


class RunChoiceSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="What ``runs`` of a new task names.")
    label = serializers.CharField(
        help_text='"Run N (k answers)" (newest first); the run id too for admins.'
    )


class SkipRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=1000,
        required=False,
        default="",
        allow_blank=True,
        help_text="Why you pass on the pair (required; kept to 200 characters).",
    )


class SkipSerializer(serializers.Serializer):
    pair = serializers.CharField(help_text="The pair you skipped: never offered to you again.")
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class BlindJudgmentSerializer(serializers.Serializer):
    """A reviewer's judgment as the caller's screen reads the pair (their own sides)."""

    reviewer = serializers.CharField(help_text='"Reviewer N" unless your role sees labelers.')
    choice = serializers.ChoiceField(choices=list(CHOICES))
    strength = serializers.CharField(allow_blank=True)
    rationale = serializers.CharField(allow_blank=True)


class PairDecisionSerializer(serializers.Serializer):
    """The final preference on a split pair, as the caller sees the pair."""

    choice = serializers.ChoiceField(choices=list(CHOICES))
    strength = serializers.CharField(allow_blank=True)
    rationale = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class PairAdjudicationSerializer(BlindFieldsSerializer):
    """A split pair as a lead sees it on the adjudication page: blind on the lead's own sides,
    the reviewers' judgments on those sides, the final preference once recorded. No record,
    run, system or model id."""

    task = serializers.CharField(help_text="The task's name.")
    judgments = BlindJudgmentSerializer(many=True)
    adjudication = PairDecisionSerializer(allow_null=True, help_text="null: still waiting.")

    def to_representation(self, instance):
        return super().to_representation(_adjudication_view(instance, self.context["user"]))


class PairAdjudicationRequestSerializer(DecisionRequestSerializer):
    """A final preference on a split pair: a rationale is always required."""


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
        return _busy(exc)
    assignment.refresh_from_db()
    code = status.HTTP_200_OK if already else status.HTTP_201_CREATED
    headers = {"Location": api_url(request, "api:pairwise_pair", public_id=public_id)}
    return Response(_blind(assignment), status=code, headers=headers)


def _busy(exc: SubmitBusy) -> Response:
    return Response(
        {"type": "about:blank", "title": "Busy", "status": 503, "detail": str(exc)},
        status=503,
        content_type="application/problem+json",
        headers={"Retry-After": str(exc.retry_after_seconds)},
    )


@extend_schema(
    request=SkipRequestSerializer,
    responses={
        201: SkipSerializer,
        422: OpenApiResponse(
            description="No reason (``errors`` names ``reason``), or you judged it already."
        ),
    },
)
@api_view(["POST"])
@parser_classes([DepthLimitedJSONParser, FormParser, MultiPartParser])
def pairwise_skip(request, public_id):
    """Hand back a pair you hold but did not judge, with a reason (the page's skip): its slot
    goes back to the pool and it is never offered to you again."""
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=public_id
    )
    body = SkipRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    skip = skip_pair(assignment=assignment, reason=body.validated_data["reason"])
    data = {"pair": public_id, "reason": skip.reason, "created_at": skip.created_at}
    return Response(SkipSerializer(data).data, status=status.HTTP_201_CREATED)


@extend_schema(
    request=None,
    responses={
        200: OpenApiResponse(BlindPairSerializer, description="The pair, open to judge again."),
        422: OpenApiResponse(
            description="Nothing to undo, the undo window has passed, or the pair is decided."
        ),
    },
)
@api_view(["POST"])
def pairwise_undo(request):
    """Withdraw your last judgment (the page's undo: within the project's
    ``LABEL_UNDO_WINDOW_SECONDS`` and while its pair still collects judgments); the answer is
    the pair, blind, to judge again. A pair you claimed since is released."""
    assignment = undo_last_judgment(project=request.project, reviewer=request.user)
    assignment = selectors.get_pair_assignment_for(
        project=request.project, reviewer=request.user, public_id=assignment.pair.public_id
    )
    return Response(_blind(assignment))


# ---------------------------------------------------------------- adjudication (leads, admins)


def _adjudication_view(pair, user) -> dict:
    """A split pair as ``user`` reads it (the adjudication page's read models), as plain data."""
    left = selectors.left_for(pair, user.pk)
    data = blind_fields(selectors.BlindPair.of(pair, left=left))
    data["task"] = pair.task.name
    data["judgments"] = [
        {
            "reviewer": j.reviewer,
            "choice": j.choice,
            "strength": j.strength,
            "rationale": j.rationale,
        }
        for j in selectors.list_blind_judgments(pair, user=user, left=left)
    ]
    adjudication = (
        selectors.get_pair_adjudication(pair)
        if pair.status not in selectors.OPEN_FOR_LEAD
        else None
    )
    data["adjudication"] = adjudication and {
        "choice": choice_from_preference(adjudication.preference, left=left),
        "strength": adjudication.strength,
        "rationale": adjudication.rationale,
        "created_at": adjudication.created_at,
    }
    return data


class PairAdjudicationList(ApiList):
    """The split pairs waiting for you (never a pair you judged), oldest first, each blind on
    your own sides with the reviewers' judgments, as the tasks page lists them
    (``updated_since``: split since, by the judgment that split it)."""

    serializer_class = PairAdjudicationSerializer
    pagination_class = type("PairAdjudicationCursor", (Cursor,), {"ordering": "id"})
    updated_fields = ("split_at",)

    def get_queryset(self):
        return selectors.list_pairs_to_adjudicate_for(
            user=self.request.user, project=self.request.project
        )

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "user": self.request.user}


@extend_schema(methods=["GET"], responses={200: PairAdjudicationSerializer})
@extend_schema(
    methods=["POST"],
    request=PairAdjudicationRequestSerializer,
    responses={
        201: PairAdjudicationSerializer,
        422: OpenApiResponse(
            description="Rejected by a rule (``errors`` names the field), or the pair is not "
            "waiting for you."
        ),
        503: OpenApiResponse(description="The pair is locked elsewhere; retry (Retry-After)."),
    },
)
@api_view(["GET", "POST"])
@parser_classes([DepthLimitedJSONParser, FormParser, MultiPartParser])
def pairwise_adjudication(request, public_id):
    """A split pair you may adjudicate (404 otherwise), as on its adjudication page; POST your
    final preference: ``choice`` as the pair is shown to you, a strength with a preference, a
    rationale always (the page's service and rules)."""
    check_query(request, allowed=())
    pair = selectors.access_pair_for_adjudication(
        user=request.user, project=request.project, public_id=public_id
    )
    if request.method == "GET":
        return Response(PairAdjudicationSerializer(pair, context={"user": request.user}).data)
    body = PairAdjudicationRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        record_pair_adjudication(lead=request.user, pair=pair, **body.validated_data)
    except SubmitBusy as exc:
        return _busy(exc)
    pair = selectors.access_pair_for_adjudication(
        user=request.user, project=request.project, public_id=public_id
    )
    return Response(
        PairAdjudicationSerializer(pair, context={"user": request.user}).data,
        status=status.HTTP_201_CREATED,
        headers={"Location": api_url(request, "api:pairwise_adjudication", public_id=public_id)},
    )


# ---------------------------------------------------------------- leads and admins


class PairwiseTaskList(ApiList, generics.CreateAPIView):
    """The project's pairwise tasks, newest first, with pair, judgment, decided and split
    counts and their gold version; POST creates one as the task form does."""

    serializer_class = TaskSerializer
    pagination_class = type("PairwiseTaskCursor", (Cursor,), {"ordering": "-id"})
    parser_classes = [DepthLimitedJSONParser, FormParser, MultiPartParser]
    updated_fields = ("created_at",)

    def get_queryset(self):
        return selectors.list_task_summaries(project=self.request.project)

    @extend_schema(
        request=TaskRequestSerializer,
        responses={
            201: TaskSerializer,
            422: OpenApiResponse(description="Rejected by a rule; ``errors`` names the field."),
        },
    )
    def post(self, request, *args, **kwargs):
        """Create a task and draw its pairs with the recorded seed (the task form's service):
        ``runs`` as ``pairwise/runs/`` lists them, ``gold_version`` a number or a tag."""
        check_query(request, allowed=())
        body = TaskRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        wanted = set(data.pop("runs"))
        runs = selectors.runs_of(project=request.project, pks=wanted)
        if len(runs) != len(wanted):
            raise PairwiseRejected("No such run in this project.", field="runs")
        task = create_pairwise_task(
            project=request.project,
            actor=request.user,
            runs=runs,
            gold_version=_gold_version(request.project, data.pop("gold_version", None)),
            **data,
        )
        row = selectors.list_task_summaries(project=request.project).get(pk=task.pk)
        headers = {"Location": api_url(request, "api:pairwise_analysis", pk=task.pk)}
        return Response(TaskSerializer(row).data, status=status.HTTP_201_CREATED, headers=headers)


def _gold_version(project, ref):
    """The frozen version a task names (``resolve_version``: a number, v7, a tag, latest), or
    None; a reference that names none is a 422 naming ``gold_version``."""
    if ref is None or not str(ref).strip():
        return None
    try:
        return resolve_version(project=project, ref=ref)
    except UnknownVersion as exc:
        raise PairwiseRejected(str(exc), field="gold_version") from None


@extend_schema(responses={200: RunChoiceSerializer(many=True)})
@api_view(["GET"])
def pairwise_runs(request):
    """The project's runs a task may compare, as the task form offers them: "Run N" with its
    answer count (the run id for admins only). POST their ``id`` as a task's ``runs``."""
    check_query(request, allowed=())
    rows = selectors.runs_for_form(project=request.project, user=request.user)
    data = [{"id": pk, "label": label} for pk, label in rows]
    return Response(RunChoiceSerializer(data, many=True).data)


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
