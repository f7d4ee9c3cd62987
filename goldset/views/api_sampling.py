"""REST API v1: a project's sampling rules (admins, issue 28), through the services the Sampling
rules pages call (``goldset.services.sampling``): the rule checks, the versions and the audit are
theirs. A rule is created (POST), read, and changed (PATCH: the fields sent; each change is the
rule's next version, ``enabled`` alone enables or disables it). Rules are never deleted.

The request shapes check types and ranges only (a 400 naming the field); what a kind of rule
needs (a percentage, a threshold, a domain of the project, a free name) is the service's to say
(a 422 naming the field)."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from goldset.forms.sampling import SamplingRuleForm
from goldset.models import SamplingRule, SamplingRuleKind
from goldset.selectors import traces as selectors
from goldset.services.sampling import create_sampling_rule, sampling_day, update_sampling_rule
from goldset.views.api import ApiList
from goldset.views.api_support import Cursor, api_url, check_query, checked_body

COUNTS = ("sampled_today", "capped_today", "sampled_total", "capped_total")


class SamplingRuleSerializer(serializers.ModelSerializer):
    """A rule with its version and the traces it sampled and capped (today: the UTC day)."""

    sampled_today = serializers.IntegerField(read_only=True)
    capped_today = serializers.IntegerField(read_only=True)
    sampled_total = serializers.IntegerField(read_only=True)
    capped_total = serializers.IntegerField(read_only=True)

    class Meta:
        model = SamplingRule
        fields = [
            "id",
            "name",
            "kind",
            "percentage",
            "seed",
            "threshold",
            "value",
            "daily_cap",
            "position",
            "enabled",
            "version",
            "note",
            *COUNTS,
            "created_at",
            "updated_at",
        ]


def _help(name: str) -> str:
    return str(SamplingRuleForm.base_fields[name].help_text)


def _decimal(name: str) -> serializers.DecimalField:
    """The page's form field ``name`` (its digits, range and help) as an optional decimal."""
    form_field = SamplingRuleForm.base_fields[name]
    return serializers.DecimalField(
        max_digits=form_field.max_digits,
        decimal_places=form_field.decimal_places,
        min_value=form_field.min_value,
        max_value=form_field.max_value,
        required=False,
        allow_null=True,
        help_text=str(form_field.help_text),
    )


class SamplingRuleRequestSerializer(serializers.Serializer):
    """A new rule: the Sampling rules page's form."""

    name = serializers.SlugField(max_length=64)
    kind = serializers.ChoiceField(choices=SamplingRuleKind.choices)
    percentage = _decimal("percentage")
    seed = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, default=0, help_text=_help("seed")
    )
    threshold = _decimal("threshold")
    value = serializers.CharField(
        max_length=64,
        allow_blank=True,
        default="",
        help_text=_help("value"),
    )
    daily_cap = serializers.IntegerField(
        min_value=0,
        required=False,
        allow_null=True,
        help_text=_help("daily_cap"),
    )
    position = serializers.IntegerField(min_value=0, max_value=10_000, default=0)
    note = serializers.CharField(max_length=300, allow_blank=True, default="")


class SamplingRulePatchSerializer(SamplingRuleRequestSerializer):
    """A change: only the fields sent change (``enabled`` alone enables or disables the rule);
    ``note`` says why."""

    name = serializers.SlugField(max_length=64, required=False)
    kind = serializers.ChoiceField(choices=SamplingRuleKind.choices, required=False)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    value = serializers.CharField(max_length=64, allow_blank=True, required=False)
    position = serializers.IntegerField(min_value=0, max_value=10_000, required=False)
    enabled = serializers.BooleanField(required=False)


def _body(request, serializer_class, **kwargs) -> dict:
    """The checked body; a member no rule has is a 400 naming it."""
    return checked_body(request, serializer_class, what="a sampling rule", **kwargs)


def _rule(request, pk: int) -> SamplingRule:
    return selectors.get_sampling_rule_with_counts(
        project=request.project, rule_id=pk, today=sampling_day()
    )


class SamplingRuleList(ApiList, generics.CreateAPIView):
    """The project's sampling rules in evaluation order (admins); POST creates one (version 1,
    enabled, audited as ``sampling_rule_created``): 201. A value the kind cannot take or a name
    in use is a 422 naming the field."""

    serializer_class = SamplingRuleSerializer
    pagination_class = type("SamplingRuleCursor", (Cursor,), {"ordering": ("position", "id")})
    updated_fields = ("created_at", "updated_at")

    def get_queryset(self):
        return selectors.query_sampling_rules(project=self.request.project, today=sampling_day())

    @extend_schema(request=SamplingRuleRequestSerializer, responses={201: SamplingRuleSerializer})
    def post(self, request, *args, **kwargs):
        check_query(request, allowed=())
        body = _body(request, SamplingRuleRequestSerializer)
        rule = create_sampling_rule(project=request.project, actor=request.user, **body)
        return Response(
            SamplingRuleSerializer(_rule(request, rule.pk)).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:sampling_rule", pk=rule.pk)},
        )


class SamplingRuleDetail(APIView):
    """One rule (admins): read it, or change it (PATCH: the fields sent), as the rule's page
    does: the next version, audited as ``sampling_rule_changed`` with before and after. A
    change that changes nothing, or a value the kind cannot take, is a 422."""

    @extend_schema(responses={200: SamplingRuleSerializer})
    def get(self, request, pk):
        check_query(request, allowed=())
        return Response(SamplingRuleSerializer(_rule(request, pk)).data)

    @extend_schema(request=SamplingRulePatchSerializer, responses={200: SamplingRuleSerializer})
    def patch(self, request, pk):
        check_query(request, allowed=())
        rule = _rule(request, pk)
        changes = _body(request, SamplingRulePatchSerializer, partial=True)
        note = changes.pop("note", "")
        update_sampling_rule(
            project=request.project, actor=request.user, rule_id=rule.pk, note=note, **changes
        )
        return Response(SamplingRuleSerializer(_rule(request, pk)).data)
