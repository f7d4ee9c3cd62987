"""Traces sent to the receiver are mapped by a real Celery worker on Redis and PostgreSQL: the
request answers once the spans are stored, the worker maps the trace through the outbox, and
its message ends done."""

import pytest
from django.test import Client

from goldset.models import AnswerRecord, OutboxMessage, ReceivedTrace, TraceStatus
from goldset.rules.jobs import TRACES_OUTBOX_KIND
from tests.factories import DomainFactory, default_project
from tests.goldset.otlp_support import (
    partial_success,
    pipeline_spans,
    post,
    protobuf_body,
    write_token,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.worker


def test_a_received_trace_is_mapped_by_the_worker(celery_worker_process, admin_user):
    DomainFactory(slug="controls")
    spans, run = pipeline_spans("openinference")
    response = post(
        Client(), default_project(), protobuf_body(spans), token=write_token(admin_user)
    )
    assert response.status_code == 200 and partial_success(response) == (0, "")
    trace = ReceivedTrace.objects.get()

    def mapped():
        trace.refresh_from_db()
        return trace.status == TraceStatus.MAPPED

    wait_until(mapped, timeout=60, what=lambda: f"the trace to be mapped ({trace.status})")
    assert AnswerRecord.objects.get().answer == run.answer
    message = OutboxMessage.objects.get(kind=TRACES_OUTBOX_KIND)
    wait_until(
        lambda: OutboxMessage.objects.filter(pk=message.pk, done_at__isnull=False).exists(),
        timeout=30,
        what="the mapping message to be done",
    )
