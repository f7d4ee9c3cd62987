"""The mapping of received traces as a job that always ends (goldset.services.traces): a
re-delivered mapping creates nothing more; traces left pending by a lost message are mapped
again by the reconciler; the outbox merges the requests of one project into one open message."""

import datetime as dt

import pytest
from django.utils import timezone

from goldset.models import AnswerRecord, OutboxMessage, ReceivedTrace, TraceStatus
from goldset.rules.jobs import TRACES_OUTBOX_KIND
from goldset.services.traces import map_pending_traces, receive_spans, reconcile_traces
from goldset.traces.decode import decode_export_request
from tests.factories import DomainFactory, default_project
from tests.goldset.otlp_support import PROTOBUF, pipeline_spans, protobuf_body

pytestmark = pytest.mark.django_db


def decoded(*kinds):
    spans = [span for kind in kinds for span in pipeline_spans(kind)[0]]
    return decode_export_request(protobuf_body(spans), content_type=PROTOBUF)


@pytest.fixture
def project():
    DomainFactory(slug="controls")
    return default_project()


def test_requests_of_one_project_share_one_open_mapping_message(
    project, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        receive_spans(project=project, decoded=decoded("openinference"))
        receive_spans(project=project, decoded=decoded("genai"))
    messages = OutboxMessage.objects.filter(kind=TRACES_OUTBOX_KIND)
    assert [m.payload for m in messages] == [{"project_id": project.pk}]
    assert ReceivedTrace.objects.filter(status=TraceStatus.PENDING).count() == 2


def test_a_redelivered_mapping_creates_nothing_more(project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        receive_spans(project=project, decoded=decoded("openinference", "genai"))
    message = OutboxMessage.objects.get(kind=TRACES_OUTBOX_KIND)
    first = map_pending_traces(project_id=project.pk, message_id=message.pk)
    again = map_pending_traces(project_id=project.pk, message_id=message.pk)
    nothing = {"mapped": 0, "incomplete": 0, "rejected": 0, "dropped": 0, "capped": 0}
    assert first == {**nothing, "mapped": 2}
    assert again == nothing
    assert AnswerRecord.objects.count() == 2
    message.refresh_from_db()
    assert message.done_at is not None


def test_the_reconciler_maps_traces_whose_message_was_lost(
    project, settings, django_capture_on_commit_callbacks
):
    settings.OUTBOX_REDISPATCH_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        receive_spans(project=project, decoded=decoded("openinference"))
    OutboxMessage.objects.filter(kind=TRACES_OUTBOX_KIND).delete()  # lost with its broker
    now = timezone.now()
    assert reconcile_traces(now=now)["projects_requeued"] == 0  # not waited long enough
    with django_capture_on_commit_callbacks(execute=True):
        summary = reconcile_traces(now=now + dt.timedelta(seconds=61))
    assert summary == {"projects_requeued": 1, "incomplete_rejected": 0, "unsampled_purged": 0}
    assert ReceivedTrace.objects.get().status == TraceStatus.MAPPED
    assert AnswerRecord.objects.count() == 1


def test_a_trace_whose_root_never_arrives_is_rejected_after_the_wait(
    project, settings, django_capture_on_commit_callbacks
):
    settings.OTLP_INCOMPLETE_SECONDS = 600
    spans, _ = pipeline_spans("openinference")
    children = decode_export_request(protobuf_body(spans[:-1]), content_type=PROTOBUF)
    with django_capture_on_commit_callbacks(execute=True):
        receive_spans(project=project, decoded=children)
    trace = ReceivedTrace.objects.get()
    assert trace.status == TraceStatus.INCOMPLETE
    now = timezone.now()
    assert reconcile_traces(now=now + dt.timedelta(seconds=599))["incomplete_rejected"] == 0
    assert reconcile_traces(now=now + dt.timedelta(seconds=601))["incomplete_rejected"] == 1
    trace.refresh_from_db()
    assert trace.status == TraceStatus.REJECTED
    assert trace.reason.startswith("still incomplete 600 s after its last span: no root span")
    root = decode_export_request(protobuf_body(spans[-1:]), content_type=PROTOBUF)
    with django_capture_on_commit_callbacks(execute=True):
        receive_spans(project=project, decoded=root)  # too late: not stored, not mapped
    assert not AnswerRecord.objects.exists()
    assert ReceivedTrace.objects.get().status == TraceStatus.REJECTED
