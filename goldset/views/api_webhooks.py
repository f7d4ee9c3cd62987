"""REST API v1: webhook endpoints (admins, issue 29), through the services the Webhooks pages
call (``goldset.services.webhooks``): the target checks, the event list and the audit are
theirs. The signing secret is in the answer to the POST that registers an endpoint, and never
again (send an ``Idempotency-Key``: a retried POST gets that same answer and registers
nothing)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response
from rest_framework.views import APIView

from goldset.exceptions import GoldsetError
from goldset.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from goldset.selectors import webhooks as selectors
from goldset.services import webhooks as service
from goldset.views.api import ApiList
from goldset.views.api_support import Cursor, Problem, api_url, check_query


class WebhookEndpointSerializer(serializers.ModelSerializer):
    events = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEvent.choices))

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "description", "events", "enabled", "created_at", "updated_at"]


class CreatedWebhookEndpointSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(
        help_text="The Standard Webhooks signing secret (whsec_…): shown in this answer only."
    )

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]


class WebhookEndpointRequestSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=2000)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEvent.choices), allow_empty=False
    )
    description = serializers.CharField(max_length=200, allow_blank=True, default="")
    enabled = serializers.BooleanField(default=True)


class WebhookEndpointPatchSerializer(WebhookEndpointRequestSerializer):
    url = serializers.URLField(max_length=2000, required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEvent.choices),
        allow_empty=False,
        required=False,
    )
    description = serializers.CharField(max_length=200, allow_blank=True, required=False)
    enabled = serializers.BooleanField(required=False)


class WebhookEndpointList(ApiList, generics.CreateAPIView):
    """The project's webhook endpoints (admins); POST registers one: 201 with its signing secret,
    shown this once. A refused URL (private addresses, unless the installation allows them) is a
    422 naming ``url``."""

    serializer_class = WebhookEndpointSerializer
    pagination_class = type("WebhookCursor", (Cursor,), {"ordering": "id"})
    updated_fields = ("created_at", "updated_at")

    def get_queryset(self):
        return selectors.list_endpoints(project=self.request.project)

    @extend_schema(
        request=WebhookEndpointRequestSerializer,
        responses={201: CreatedWebhookEndpointSerializer},
    )
    def post(self, request, *args, **kwargs):
        check_query(request, allowed=())
        body = WebhookEndpointRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint, secret = service.create_webhook_endpoint(
            project=request.project, actor=request.user, **body.validated_data
        )
        endpoint.secret = secret
        return Response(
            CreatedWebhookEndpointSerializer(endpoint).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:webhook", pk=endpoint.pk)},
        )


class WebhookEndpointDetail(APIView):
    """One endpoint (admins): read it, change it (PUT: every field; PATCH: those sent; the URL
    is checked again), or delete it with its delivery log (204). Audited as on the pages."""

    def _endpoint(self, request, pk):
        check_query(request, allowed=())
        return selectors.get_endpoint(project=request.project, endpoint_id=pk)

    @extend_schema(responses={200: WebhookEndpointSerializer})
    def get(self, request, pk):
        return Response(WebhookEndpointSerializer(self._endpoint(request, pk)).data)

    def _update(self, request, pk, serializer_class):
        endpoint = self._endpoint(request, pk)
        body = serializer_class(data=request.data)
        body.is_valid(raise_exception=True)
        if set(body.validated_data) == {"enabled"}:
            # the page's switch: no URL check, so disabling always works
            updated = service.set_webhook_endpoint_enabled(
                actor=request.user, endpoint=endpoint, enabled=body.validated_data["enabled"]
            )
            return Response(WebhookEndpointSerializer(updated).data)
        current = {
            "url": endpoint.url,
            "events": endpoint.events,
            "description": endpoint.description,
            "enabled": endpoint.enabled,
        }
        updated = service.update_webhook_endpoint(
            actor=request.user, endpoint=endpoint, **{**current, **body.validated_data}
        )
        return Response(WebhookEndpointSerializer(updated).data)

    @extend_schema(
        request=WebhookEndpointRequestSerializer,
        responses={200: WebhookEndpointSerializer},
    )
    def put(self, request, pk):
        return self._update(request, pk, WebhookEndpointRequestSerializer)

    @extend_schema(
        request=WebhookEndpointPatchSerializer,
        responses={200: WebhookEndpointSerializer},
    )
    def patch(self, request, pk):
        return self._update(request, pk, WebhookEndpointPatchSerializer)

    @extend_schema(responses={204: OpenApiResponse(description="Deleted.")})
    def delete(self, request, pk):
        endpoint = self._endpoint(request, pk)
        service.delete_webhook_endpoint(actor=request.user, endpoint=endpoint)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliverySerializer(serializers.ModelSerializer):
    """One delivery of the endpoint's log (the page's columns, and the payload sent)."""

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_type",
            "message_id",
            "status",
            "attempts",
            "max_attempts",
            "last_status_code",
            "last_error",
            "response_snippet",
            "payload",
            "created_at",
            "next_attempt_at",
            "last_attempt_at",
            "finished_at",
        ]


class WebhookDeliveryList(ApiList):
    """An endpoint's delivery log, newest first (admins; ``updated_since``: created or attempted
    since)."""

    serializer_class = WebhookDeliverySerializer
    pagination_class = type("DeliveryCursor", (Cursor,), {"ordering": "-id"})
    updated_fields = ("created_at", "last_attempt_at", "finished_at")

    def get_queryset(self):
        endpoint = selectors.get_endpoint(
            project=self.request.project, endpoint_id=self.kwargs["pk"]
        )
        return selectors.list_deliveries(endpoint=endpoint)


QUEUED = OpenApiResponse(WebhookDeliverySerializer, description="Queued.")


@extend_schema(
    request=None,
    responses={202: QUEUED, 409: OpenApiResponse(description="The endpoint is disabled.")},
)
@api_view(["POST"])
def webhook_test(request, pk):
    """Queue a ``webhook.test`` event to this endpoint alone (the page's button; audited)."""
    check_query(request, allowed=())
    endpoint = selectors.get_endpoint(project=request.project, endpoint_id=pk)
    try:
        delivery = service.send_test_event(actor=request.user, endpoint=endpoint)
    except GoldsetError as exc:
        raise Problem(status_code=409, title="Conflict", detail=str(exc)) from exc
    return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    request=None,
    responses={202: QUEUED, 409: OpenApiResponse(description="The delivery is still open.")},
)
@api_view(["POST"])
def webhook_redeliver(request, pk):
    """One more attempt of a finished delivery, same message id (the page's Redeliver; audited)."""
    check_query(request, allowed=())
    delivery = selectors.get_delivery(project=request.project, delivery_id=pk)
    try:
        delivery = service.redeliver_webhook(actor=request.user, delivery=delivery)
    except GoldsetError as exc:
        raise Problem(status_code=409, title="Conflict", detail=str(exc)) from exc
    return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
