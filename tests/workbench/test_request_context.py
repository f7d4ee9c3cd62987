"""The request context: set by the middleware and by the Celery task base, read by the audit log."""

import pytest
from django.urls import reverse

from workbench import request_context
from workbench.celery import app
from workbench.dispatch import enqueue
from workbench.models import AuditEvent
from workbench.services.audit import record_event

pytestmark = pytest.mark.django_db

CONTEXT_PROBE = "tests.request_context_probe"


@app.task(name=CONTEXT_PROBE)
def request_context_probe() -> str:
    """The request id the task runs under, as the audit log would record it."""
    return request_context.current_request_id()


def test_a_service_called_by_a_view_records_the_request_id_of_that_request(client_for, admin_user):
    response = client_for(admin_user).post(
        reverse("curation:customers"),
        {"name": "Acme Freight", "slug": "acme"},
        HTTP_X_REQUEST_ID="trace-customer-0001",
    )
    assert response.status_code == 302 and response["X-Request-ID"] == "trace-customer-0001"
    assert AuditEvent.objects.get(verb="customer_created").request_id == "trace-customer-0001"


def test_a_malformed_incoming_id_is_replaced_and_each_request_gets_its_own(client_for, admin_user):
    client = client_for(admin_user)
    for slug in ("one", "two"):
        client.post(
            reverse("curation:customers"), {"name": slug, "slug": slug}, HTTP_X_REQUEST_ID="bad id!"
        )
    ids = list(
        AuditEvent.objects.filter(verb="customer_created").values_list("request_id", flat=True)
    )
    assert len(set(ids)) == 2 and all(len(i) == 32 and i != "bad id!" for i in ids)


def test_outside_a_request_or_task_events_carry_no_request_id(annotator):
    assert request_context.current_request_id() == ""
    assert record_event(actor=annotator, verb="viewed", obj=annotator).request_id == ""


def test_the_context_is_restored_after_a_block_even_when_it_raises():
    with pytest.raises(RuntimeError):
        with request_context.bound(request_context.RequestContext(request_id="outer-req-1")):
            with request_context.bound(request_context.RequestContext(request_id="inner-req-2")):
                assert request_context.current_request_id() == "inner-req-2"
            assert request_context.current_request_id() == "outer-req-1"
            raise RuntimeError
    assert request_context.current_request_id() == ""


def test_a_task_runs_under_the_id_of_the_request_that_queued_it():
    with request_context.bound(request_context.RequestContext(request_id="queued-by-req-7")):
        result = enqueue(CONTEXT_PROBE)
    assert result.get() == "queued-by-req-7"
    assert request_context.current_request_id() == ""


def test_a_task_takes_the_id_from_its_message_header_not_from_where_it_runs():
    header = {request_context.REQUEST_ID_HEADER: "from-the-header-9"}
    with request_context.bound(request_context.RequestContext(request_id="worker-side-ctx")):
        result = request_context_probe.apply_async(headers=header)
    assert result.get() == "from-the-header-9"


def test_a_task_queued_outside_any_request_runs_with_no_request_id():
    assert enqueue(CONTEXT_PROBE).get() == ""
