"""Webhook pages (admins): endpoints, their signing secret shown once, the delivery log."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.forms.webhooks import NewWebhookEndpointForm, WebhookEndpointForm
from goldset.selectors import webhooks as selectors
from goldset.services import webhooks as service
from workbench.roles import Role, role_required

PAGE_SIZE = 50


def _save(form, call):
    """Run ``call(**cleaned_data)``; a refused URL or a bad event list becomes a field error."""
    try:
        return call(**form.cleaned_data)
    except GoldsetError as exc:
        form.add_error(getattr(exc, "field", None), str(exc))
        return None


@role_required(Role.ADMIN)
def endpoint_list(request):
    """Endpoints; POST registers one and shows its signing secret this once."""
    form = NewWebhookEndpointForm(request.POST or None)
    created, secret, status = None, "", 200
    if request.method == "POST":
        saved = form.is_valid() and _save(
            form,
            lambda **data: service.create_webhook_endpoint(
                project=request.project, actor=request.user, **data
            ),
        )
        if saved:
            (created, secret), form = saved, NewWebhookEndpointForm()
        else:
            status = 422
    context = {
        "form": form,
        "created": created,
        "secret": secret,
        "endpoints": selectors.list_endpoints(project=request.project),
        "allow_private": tunable("WEBHOOKS_ALLOW_PRIVATE_TARGETS"),
    }
    return render(request, "webhooks/endpoints.html", context, status=status)


@role_required(Role.ADMIN)
def endpoint_detail(request, pk):
    """An endpoint's settings (POST saves them) and its delivery log, newest first."""
    endpoint = selectors.get_endpoint(project=request.project, endpoint_id=pk)
    form = WebhookEndpointForm.for_endpoint(endpoint, data=request.POST or None)
    status = 200
    if request.method == "POST":
        saved = form.is_valid() and _save(
            form,
            lambda **data: service.update_webhook_endpoint(
                actor=request.user, endpoint=endpoint, **data
            ),
        )
        if saved:
            messages.success(request, "The endpoint is saved.")
            return redirect("webhooks:endpoint", pk=endpoint.pk)
        status = 422
    page = Paginator(selectors.list_deliveries(endpoint=endpoint), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"endpoint": endpoint, "form": form, "page": page}
    return render(request, "webhooks/endpoint.html", context, status=status)


@require_POST
@role_required(Role.ADMIN)
def endpoint_enabled(request, pk):
    endpoint = selectors.get_endpoint(project=request.project, endpoint_id=pk)
    enabled = request.POST.get("enabled") == "1"
    service.set_webhook_endpoint_enabled(actor=request.user, endpoint=endpoint, enabled=enabled)
    messages.success(request, f"The endpoint is {'enabled' if enabled else 'disabled'}.")
    return redirect("webhooks:endpoint", pk=endpoint.pk)


@require_POST
@role_required(Role.ADMIN)
def endpoint_test(request, pk):
    endpoint = selectors.get_endpoint(project=request.project, endpoint_id=pk)
    try:
        delivery = service.send_test_event(actor=request.user, endpoint=endpoint)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Test event queued (delivery {delivery.pk}).")
    return redirect("webhooks:endpoint", pk=endpoint.pk)


@require_POST
@role_required(Role.ADMIN)
def redeliver(request, pk):
    delivery = selectors.get_delivery(project=request.project, delivery_id=pk)
    try:
        service.redeliver_webhook(actor=request.user, delivery=delivery)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Delivery {delivery.pk} is queued again.")
    return redirect("webhooks:endpoint", pk=delivery.endpoint_id)
