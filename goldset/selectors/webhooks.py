"""Reads for the webhook pages (admins only; the access table and the views check the role)."""

from django.db.models import Count, Max, Q
from django.shortcuts import get_object_or_404

from goldset.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint


def list_endpoints(*, project):
    """The endpoints of ``project`` with their delivery counts and last delivery time (one
    query)."""
    return (
        WebhookEndpoint.objects.filter(project=project)
        .annotate(
            delivery_count=Count("deliveries"),
            failed_count=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.FAILED)),
            open_count=Count(
                "deliveries",
                filter=Q(
                    deliveries__status__in=[DeliveryStatus.PENDING, DeliveryStatus.DELIVERING]
                ),
            ),
            last_delivery_at=Max("deliveries__created_at"),
        )
        .order_by("id")
    )


def get_endpoint(*, project, endpoint_id: int) -> WebhookEndpoint:
    """An endpoint of ``project``; Http404 for another project's."""
    return get_object_or_404(
        WebhookEndpoint.objects.select_related("created_by", "project"),
        project=project,
        pk=endpoint_id,
    )


def list_deliveries(*, endpoint: WebhookEndpoint):
    """The endpoint's delivery log, newest first (paginate it; index ``webhook_delivery_log``)."""
    return WebhookDelivery.objects.filter(endpoint=endpoint).order_by("-id")


def get_delivery(*, project, delivery_id: int) -> WebhookDelivery:
    """A delivery to an endpoint of ``project``; Http404 for another project's."""
    return get_object_or_404(
        WebhookDelivery.objects.select_related("endpoint"),
        endpoint__project=project,
        pk=delivery_id,
    )
