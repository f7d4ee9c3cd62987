"""Pairwise qualification through the REST API (issue 30): what the calibration pages do
(``goldset.views.pairwise``: ``calibration``, ``calibration_set``, the tasks page's results),
thin over the same selectors and services, one home for each rule:

* leads and admins list the project's calibration pairs, read the next candidate pair blind
  (on their own seeded sides) and add a pair with their reference
  (``services.pairwise_calibration.add_calibration_pair``), and read the reviewers' results;
* reviewers read their qualification status, take the next calibration pair blind and judge it
  (``submit_calibration_answer``, which scores the attempt when the last pair is answered).

Nothing here names a system, run, model or answer record: pairs and calibration pairs are their
opaque public ids, answers their texts. Roles: the access table's ``api:pairwise_calibration*``
and ``api:pairwise_qualification*`` entries (the pages' roles)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from goldset.models import PairCalibrationItem, PairQualification
from goldset.rules.pairwise import CHOICES, choice_from_preference, preference_from_choice
from goldset.selectors import pairwise as selectors
from goldset.services.pairwise_calibration import add_calibration_pair, submit_calibration_answer
from goldset.views.api import ApiList
from goldset.views.api_pairwise import BlindFieldsSerializer, blind_fields
from goldset.views.api_parsers import DepthLimitedJSONParser
from goldset.views.api_support import Cursor, Problem, api_url, check_query

# ---------------------------------------------------------------- shapes


class DisagreementSerializer(serializers.Serializer):
    item_id = serializers.CharField(help_text="The calibration pair's public id.")
    yours = serializers.CharField(help_text="The reviewer's choice, as they saw the pair.")
    reference = serializers.CharField(help_text="The reference, on the same sides.")


class QualificationResultSerializer(serializers.ModelSerializer):
    """A scored attempt: Cohen κ against the references, the gate then in force, pass/fail,
    and the pairs where the reviewer differed (as they saw them)."""

    disagreements = DisagreementSerializer(many=True)

    class Meta:
        model = PairQualification
        fields = [
            "n_items", "kappa", "kappa_note", "threshold", "passed", "disagreements", "scored_at",
        ]  # fmt: skip


class QualificationStatusSerializer(serializers.Serializer):
    """Where the caller stands on the project's calibration pairs."""

    qualified = serializers.BooleanField(help_text="Passed: real pairs are open to you.")
    total = serializers.IntegerField(help_text="The project's calibration pairs.")
    answered = serializers.IntegerField(help_text="Of them, judged by you.")
    problems = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why the calibration pairs cannot qualify anyone yet (empty: they can).",
    )
    result = QualificationResultSerializer(allow_null=True, help_text="null: not scored yet.")


def _status(project, reviewer) -> dict:
    found = selectors.get_pair_calibration_status(project=project, reviewer=reviewer)
    return {
        "qualified": found.passed,
        "total": found.total,
        "answered": found.answered,
        "problems": list(found.problems),
        "result": found.result,
    }


class CalibrationChoiceSerializer(serializers.Serializer):
    choice = serializers.ChoiceField(
        choices=list(CHOICES),
        help_text="left, right (as the calibration pair is shown to you), tie, both_unacceptable",
    )


class CalibrationAnswerSerializer(serializers.Serializer):
    pair = serializers.CharField(help_text="The calibration pair's public id.")
    choice = serializers.ChoiceField(
        choices=list(CHOICES), help_text="Your judgment as you chose it on screen."
    )
    qualification = QualificationStatusSerializer()


class CalibrationPairSerializer(serializers.ModelSerializer):
    """A calibration pair as a lead's list shows it: its question, its two answers as A and B
    and the reference relative to them (a, b, tie, both_unacceptable), the number of reviewers
    who judged it. No record, run or system."""

    question_text = serializers.CharField(source="question.text")
    domain_name = serializers.CharField(source="question.domain.name")
    answer_a = serializers.CharField(source="record_a.answer")
    answer_b = serializers.CharField(source="record_b.answer")
    answers = serializers.IntegerField(source="n_answers")

    class Meta:
        model = PairCalibrationItem
        fields = [
            "public_id", "question_text", "domain_name", "answer_a", "answer_b", "reference",
            "answers", "created_at",
        ]  # fmt: skip


class CalibrationPairRequestSerializer(serializers.Serializer):
    pair = serializers.CharField(max_length=32, help_text="A pair of the project (public id).")
    choice = serializers.ChoiceField(
        choices=list(CHOICES),
        required=False,
        help_text="Your reference as the pair is shown to you (``calibration/candidate/``); "
        "without it, the pair's final preference (a decided pair only).",
    )


class PairQualificationSerializer(QualificationResultSerializer):
    """A reviewer's result as leads read it (named as the caller's roles allow: "Reviewer N"
    unless they see labelers)."""

    reviewer = serializers.SerializerMethodField()

    class Meta(QualificationResultSerializer.Meta):
        fields = ["reviewer", *QualificationResultSerializer.Meta.fields]

    def get_reviewer(self, obj) -> str:
        return self.context["reviewers"][obj.reviewer_id]


# ---------------------------------------------------------------- leads and admins


@extend_schema_view(
    post=extend_schema(
        request=CalibrationPairRequestSerializer,
        responses={
            201: CalibrationPairSerializer,
            200: OpenApiResponse(
                CalibrationPairSerializer, description="Already a calibration pair: unchanged."
            ),
            422: OpenApiResponse(description="Rejected by a rule; ``errors`` names the field."),
        },
    )
)
class CalibrationPairList(ApiList, generics.CreateAPIView):
    """The project's calibration pairs (GET, oldest first); POST makes a pair of the project a
    calibration pair with your reference (as the calibration pairs page does)."""

    serializer_class = CalibrationPairSerializer
    pagination_class = type("CalibrationPairCursor", (Cursor,), {"ordering": "id"})
    parser_classes = [DepthLimitedJSONParser, FormParser, MultiPartParser]
    updated_fields = ("created_at",)

    def get_queryset(self):
        return selectors.list_calibration_pair_rows(project=self.request.project)

    def post(self, request, *args, **kwargs):
        check_query(request, allowed=())
        body = CalibrationPairRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project, user = request.project, request.user
        pair = selectors.access_pair_for_calibration(
            user=user, project=project, public_id=body.validated_data["pair"]
        )
        choice = body.validated_data.get("choice")
        reference = choice and preference_from_choice(
            choice, left=selectors.left_for(pair, user.pk)
        )
        before = selectors.count_calibration_pairs(project=project)
        item = add_calibration_pair(project=project, actor=user, pair=pair, reference=reference)
        created = selectors.count_calibration_pairs(project=project) > before
        row = selectors.list_calibration_pair_rows(project=project).get(pk=item.pk)
        return Response(
            CalibrationPairSerializer(row).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


@extend_schema(
    responses={
        200: BlindFieldsSerializer,
        204: OpenApiResponse(description="Every pair of the project is a calibration pair."),
    }
)
@api_view(["GET"])
def pairwise_calibration_candidate(request):
    """The project's next pair (seeded queue order) that is not yet a calibration pair, blind on
    your own sides: POST its ``public_id`` with your ``choice`` to ``calibration/pairs/``."""
    check_query(request, allowed=())
    pair = selectors.next_calibration_candidate(user=request.user, project=request.project)
    if pair is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    blind = selectors.BlindPair.of(pair, left=selectors.left_for(pair, request.user.pk))
    return Response(BlindFieldsSerializer(blind_fields(blind)).data)


class PairQualificationList(ApiList):
    """The reviewers' scored attempts at the project's calibration pairs (κ, gate, pass/fail),
    reviewers named as your roles allow."""

    serializer_class = PairQualificationSerializer
    pagination_class = type("PairQualificationCursor", (Cursor,), {"ordering": "reviewer_id"})
    updated_fields = ("scored_at",)

    def get_queryset(self):
        return selectors.list_qualification_results(project=self.request.project)

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["reviewers"] = selectors.qualification_reviewer_names(
            project=self.request.project, user=self.request.user
        )
        return context


# ---------------------------------------------------------------- reviewers


@extend_schema(responses={200: QualificationStatusSerializer})
@api_view(["GET"])
def pairwise_qualification(request):
    """Your qualification status: calibration pairs answered, the scored result, and whether
    real pairs are open to you."""
    check_query(request, allowed=())
    return Response(QualificationStatusSerializer(_status(request.project, request.user)).data)


@extend_schema(
    request=None,
    responses={
        200: BlindFieldsSerializer,
        204: OpenApiResponse(description="No calibration pair is waiting for you."),
        409: OpenApiResponse(description="The calibration pairs cannot qualify anyone yet."),
    },
)
@api_view(["POST"])
def pairwise_calibration_claim(request):
    """Your next calibration pair, blind on your own seeded sides (the calibration page's
    pair); 204 once you have judged them all (your result: ``qualification/``)."""
    check_query(request, allowed=())
    found = selectors.get_pair_calibration_status(project=request.project, reviewer=request.user)
    if found.problems and found.result is None:
        raise Problem(status_code=409, title="Conflict", detail=" ".join(found.problems))
    item = found.next_item
    if item is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    blind = selectors.blind_calibration_pair(
        item, left=selectors.calibration_left_for(item, request.user.pk)
    )
    return Response(BlindFieldsSerializer(blind_fields(blind)).data)


@extend_schema(
    request=CalibrationChoiceSerializer,
    responses={
        201: CalibrationAnswerSerializer,
        200: OpenApiResponse(
            CalibrationAnswerSerializer, description="Already judged: your first judgment."
        ),
        422: OpenApiResponse(description="Rejected by a rule; ``errors`` names the field."),
    },
)
@api_view(["POST"])
@parser_classes([DepthLimitedJSONParser, FormParser, MultiPartParser])
def pairwise_calibration_judge(request, public_id):
    """Judge one of the project's calibration pairs: ``choice`` as it is shown to you. The last
    one scores your attempt (the answer's ``qualification`` carries the result); 404 once your
    attempt is scored."""
    check_query(request, allowed=())
    project, reviewer = request.project, request.user
    item = selectors.access_calibration_item_for(
        project=project, reviewer=reviewer, public_id=public_id
    )
    body = CalibrationChoiceSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    already = selectors.get_calibration_answer(item=item, reviewer=reviewer) is not None
    answer = submit_calibration_answer(
        project=project, reviewer=reviewer, item=item, choice=body.validated_data["choice"]
    )
    data = {
        "pair": item.public_id,
        "choice": choice_from_preference(answer.preference, left=answer.left),
        "qualification": _status(project, reviewer),
    }
    return Response(
        CalibrationAnswerSerializer(data).data,
        status=status.HTTP_200_OK if already else status.HTTP_201_CREATED,
        headers={"Location": api_url(request, "api:pairwise_qualification")},
    )
