"""Webhooks: emitted in the action's transaction, delivered signed (verified by the independent
``standardwebhooks`` package on a loopback receiver), retried with backoff after a 500, refused
before any connection for private targets, redelivered on request, and ended by the reconciler
when a message or a worker is lost. Tasks run in-process (eager); tests/goldset/worker has the
end-to-end test through a real worker."""

import datetime as dt
import json
import socket

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    DeliveryStatus,
    ImportStatus,
    JobStatus,
    OutboxMessage,
    ScoringJob,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from goldset.rules.webhooks import WEBHOOK_OUTBOX_KIND
from goldset.services import webhooks
from goldset.services.agreement import ratings_frame, spot_check_frame, store_agreement_snapshots
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import submit_import
from goldset.services.jobs import reconcile
from goldset.services.scoring_jobs import create_scoring_job, reconcile_scoring_jobs
from tests.factories import DomainFactory, default_project, gold_row_for, make_gold_corpus
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db
FROZEN = WebhookEvent.GOLD_VERSION_FROZEN


@pytest.fixture
def allow_private(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_RETRY_BASE_SECONDS = 30


@pytest.fixture
def endpoint(admin_user, receiver, allow_private):
    endpoint, secret = webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url=receiver.url,
        events=list(WebhookEvent.values),
    )
    receiver.secret = secret
    return endpoint


def emit_now(callbacks, event=FROZEN, data=None):
    with callbacks(execute=True):
        return webhooks.emit(event, data or {"version": 1}, project=default_project())


def test_a_500_is_retried_with_backoff_and_the_next_attempt_verifies(
    endpoint,
    receiver,
    django_capture_on_commit_callbacks,
):
    receiver.statuses = [500, 200]
    (delivery,) = emit_now(django_capture_on_commit_callbacks, data={"version": 7})
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 2
    assert delivery.last_status_code == 200 and delivery.last_error == ""
    first, second = receiver.requests
    assert first.verified and second.verified  # standardwebhooks checked both signatures
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == delivery.message_id
    assert delivery.message_id.startswith("msg_")
    assert first.headers["content-type"] == "application/json"
    assert first.path == "/hooks/goldset" and first.body == second.body
    assert second.payload == delivery.payload
    assert second.payload["type"] == "gold_version.frozen"
    assert second.payload["data"] == {"version": 7}
    # the retry waited base × 2^0 plus up to 25 % jitter (eager mode runs it at once)
    waited = (delivery.next_attempt_at - delivery.created_at).total_seconds()
    assert 30 <= waited <= 37.5 + 5


def test_attempts_run_out_then_the_delivery_fails_with_the_error_and_the_answer(
    endpoint,
    receiver,
    settings,
    django_capture_on_commit_callbacks,
):
    settings.WEBHOOKS_MAX_ATTEMPTS = 3
    receiver.statuses = [503]
    (delivery,) = emit_now(django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 3
    assert delivery.last_status_code == 503 and delivery.last_error == "HTTP 503"
    assert '"status": 503' in delivery.response_snippet
    assert len(receiver.requests) == 3


def test_an_attempt_that_times_out_is_retried(
    endpoint, receiver, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.2
    receiver.delays = [1.0]  # the first answer comes too late
    (delivery,) = emit_now(django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 2
    assert len(receiver.requests) == 2 and all(r.verified for r in receiver.requests)


def test_only_enabled_subscribed_endpoints_get_deliveries_and_a_rollback_sends_nothing(
    admin_user,
    allow_private,
    receiver,
    django_capture_on_commit_callbacks,
):
    frozen_only, _ = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, url=receiver.url, events=[FROZEN]
    )
    webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url=receiver.url,
        events=[FROZEN],
        enabled=False,
    )
    webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url=receiver.url,
        events=[WebhookEvent.ALERT_RAISED],
    )
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            webhooks.emit(FROZEN, {"version": 1}, project=default_project())
            raise RuntimeError("the action failed")
    assert not WebhookDelivery.objects.exists() and not OutboxMessage.objects.exists()
    assert receiver.requests == []
    with django_capture_on_commit_callbacks(execute=False):
        deliveries = webhooks.emit(FROZEN, {"version": 1}, project=default_project())
    assert [d.endpoint_id for d in deliveries] == [frozen_only.pk]
    assert OutboxMessage.objects.filter(kind=WEBHOOK_OUTBOX_KIND).count() == 1


def test_freezing_a_version_sends_ids_checksums_counts_and_links_only(
    endpoint,
    receiver,
    admin_user,
    django_capture_on_commit_callbacks,
):
    blocks = make_gold_corpus(3)
    rows = [
        gold_row_for(bv, triple_id=f"Q-{i}", question=f"Secret question {i}?", added_by="alice")
        for i, bv in enumerate(blocks)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        version = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    (request,) = receiver.requests
    assert request.verified
    data = request.payload["data"]
    assert set(data) == {
        "version",
        "label",
        "parent_version",
        "frozen_at",
        "triples",
        "rows_sha256",
        "manifest_sha256",
        "diff",
        "files",
        "links",
    }
    assert data["version"] == version.number and data["triples"] == 3
    assert data["rows_sha256"] == version.rows_sha256
    assert data["manifest_sha256"] == version.manifest_sha256
    assert data["diff"] == {"added": 3, "removed": 0, "changed": 0}
    assert {f["sha256"] for f in data["files"]} == set(
        version.files.exclude(format="manifest").values_list("sha256", flat=True)
    )
    # links name the project: its pages under /p/<slug>/, its API under /api/v1/projects/<slug>/
    assert request.payload["project"] == {"slug": "default", "name": default_project().name}
    assert data["links"]["page"] == f"/p/default/versions/v{version.number}/"
    assert data["links"]["api"] == f"/api/v1/projects/default/versions/{version.number}/"
    text = request.body.decode()
    assert "Secret question" not in text and "alice" not in text and "admin-test" not in text


def test_scoring_jobs_emit_succeeded_and_failed_without_the_run_name(
    endpoint,
    receiver,
    admin_user,
    settings,
    django_capture_on_commit_callbacks,
):
    blocks = make_gold_corpus(2)
    rows = [gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)]
    version = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    run = "".join(f"Q-{i} Q0 {bv.block.block_id} 1 1.0 sys\n" for i, bv in enumerate(blocks))
    with django_capture_on_commit_callbacks(execute=True):
        job = create_scoring_job(
            version=version,
            name="acme-secret-system",
            data=run.encode(),
            filename="acme.trec",
            actor=admin_user,
        )
    succeeded = receiver.requests[-1].payload
    assert succeeded["type"] == "scoring_job.succeeded"
    assert succeeded["data"]["job_id"] == job.pk and succeeded["data"]["status"] == "succeeded"
    assert succeeded["data"]["gold_version"] == version.number
    assert "acme-secret-system" not in receiver.requests[-1].body.decode()
    # a lost worker with every attempt used: the reconciler fails the job
    settings.JOB_STALE_SECONDS = 60
    ScoringJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        attempts=3,
        max_attempts=3,
        heartbeat_at=timezone.now() - dt.timedelta(seconds=600),
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert reconcile_scoring_jobs()["failed"] == [job.pk]
    failed = receiver.requests[-1].payload
    assert failed["type"] == "scoring_job.failed" and "was lost" in failed["data"]["error"]


def test_a_rejected_import_emits_import_finished_with_its_problem_count(
    endpoint,
    receiver,
    admin_user,
    django_capture_on_commit_callbacks,
):
    DomainFactory(slug="federal_it")
    bad = json.dumps({"document_id": "d1", "title": "T", "domain": "nowhere", "blocks": []})
    upload = SimpleUploadedFile("corpus.jsonl", (bad + "\n").encode())
    with django_capture_on_commit_callbacks(execute=True):
        job = submit_import(
            project=default_project(), kind="corpus", upload=upload, actor=admin_user
        ).job
    job.refresh_from_db()
    assert job.status == ImportStatus.REJECTED
    (request,) = receiver.requests
    data = request.payload["data"]
    assert request.payload["type"] == "import.finished"
    assert data["import_id"] == job.pk and data["status"] == "rejected"
    assert data["problems"] >= 1 and data["sha256"] == job.sha256
    assert data["links"]["page"] == f"/p/default/imports/{job.pk}/"


def spot_rows(week, disagree, total):
    return [("triple_review", f"{week}-{i}", week, i >= disagree) for i in range(total)]


def test_an_alert_is_announced_when_raised_and_not_again_while_it_stays(
    endpoint,
    receiver,
    django_capture_on_commit_callbacks,
):
    def store(disagree_second_week):
        rows = spot_rows("2026-W44", 200, 1000) + spot_rows("2026-W45", disagree_second_week, 1000)
        with django_capture_on_commit_callbacks(execute=True):
            store_agreement_snapshots(
                project=default_project(),
                ratings=ratings_frame([]),
                spot_checks=spot_check_frame(rows),
                n_resamples=10,
            )

    store(50)  # one week above the limit: no alert
    assert receiver.requests == []
    store(200)  # two consecutive weeks: raised
    (request,) = receiver.requests
    assert request.verified and request.payload["type"] == "alert.raised"
    data = request.payload["data"]
    assert data["kind"] == "spot_check_disagreement"
    assert data["scope"] == {"protocol": "triple_review", "weeks": ["2026-W44", "2026-W45"]}
    assert data["figures"] == {"limit": 0.12} and len(data["key"]) == 24
    store(300)  # other figures, same alert still raised: not announced again
    assert len(receiver.requests) == 1


# ---------------------------------------------------------------- targets


@pytest.mark.parametrize(
    "url,why",
    [
        ("http://127.0.0.1:9/x", "loopback"),
        ("http://localhost:8000/x", "names this machine"),
        ("http://hooks.localhost/x", "names this machine"),
        ("http://[::1]/x", "loopback"),
        ("http://2130706433/x", "loopback"),  # 127.0.0.1 written as a number
        ("http://10.0.0.8/x", "private"),
        ("http://172.16.4.4/x", "private"),
        ("http://192.168.0.10/x", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/x", "link-local"),
        ("http://[::ffff:192.168.0.1]/x", "private"),
        ("http://[2002:7f00:1::]/x", "6to4 address embedding 127.0.0.1"),
        ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", "Teredo address embedding 127.0.0.1"),
        ("http://[64:ff9b::a00:8]/x", "NAT64 address embedding 10.0.0.8"),
        ("http://[64:ff9b:1::5db8:d822]/x", "local-use NAT64"),
        ("http://0.0.0.0/x", "unspecified"),
        ("http://224.0.0.251/x", "multicast"),
        ("ftp://93.184.216.34/x", "https://"),
        ("http://user:pw@93.184.216.34/x", "credentials"),
    ],
)
def test_private_targets_are_refused_at_registration_before_any_connection(
    admin_user,
    no_outside_connections,
    url,
    why,
):
    with pytest.raises(webhooks.TargetRefused, match=why):
        webhooks.create_webhook_endpoint(
            project=default_project(), actor=admin_user, url=url, events=[FROZEN]
        )
    assert no_outside_connections == [] and not WebhookEndpoint.objects.exists()


def test_a_target_turned_private_is_refused_at_delivery_without_a_connection(
    endpoint,
    receiver,
    settings,
    no_outside_connections,
    django_capture_on_commit_callbacks,
):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False  # the admin setting was switched off
    (delivery,) = emit_now(django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1
    assert (
        delivery.last_error.startswith("refused: 127.0.0.1") and "loopback" in delivery.last_error
    )
    assert receiver.requests == [] and no_outside_connections == []


def test_dns_rebinding_to_a_private_address_is_refused_at_delivery(
    admin_user,
    monkeypatch,
    no_outside_connections,
    django_capture_on_commit_callbacks,
):
    answers = {"address": "93.184.216.34"}

    def fake_dns(host, port, *args, **kwargs):
        assert host == "hooks.example.test"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers["address"], port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url="https://hooks.example.test/in",
        events=[FROZEN],
    )
    answers["address"] = "10.0.0.7"  # the name now points inside the network
    (delivery,) = emit_now(django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert "10.0.0.7 is a private address" in delivery.last_error
    assert no_outside_connections == []


# ---------------------------------------------------------------- redeliver and the reconciler


def test_redeliver_makes_one_more_attempt_with_the_same_message_and_is_audited(
    endpoint,
    receiver,
    settings,
    admin_user,
    django_capture_on_commit_callbacks,
):
    settings.WEBHOOKS_MAX_ATTEMPTS = 1
    receiver.statuses = [500, 200]
    (delivery,) = emit_now(django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        webhooks.redeliver_webhook(actor=admin_user, delivery=delivery)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 2
    assert [r.headers["webhook-id"] for r in receiver.requests] == [delivery.message_id] * 2
    event = AuditEvent.objects.get(verb="webhook_redelivered")
    assert event.actor == admin_user and event.detail == {"was": "failed", "attempt": 2}
    with django_capture_on_commit_callbacks(execute=False):
        (open_delivery,) = webhooks.emit(FROZEN, {"version": 2}, project=default_project())
    with pytest.raises(GoldsetError, match="still pending"):
        webhooks.redeliver_webhook(actor=admin_user, delivery=open_delivery)


def test_the_reconciler_sends_deliveries_whose_message_or_worker_was_lost(
    endpoint,
    receiver,
    django_capture_on_commit_callbacks,
):
    long_ago = timezone.now() - dt.timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=False):
        published_lost, no_message, worker_lost = (
            webhooks.emit(FROZEN, {"version": n}, project=default_project())[0] for n in (1, 2, 3)
        )
    messages = {m.payload["delivery_id"]: m for m in OutboxMessage.objects.all()}
    # 1: published to the broker, which lost it
    OutboxMessage.objects.filter(pk=messages[published_lost.pk].pk).update(
        dispatched_at=long_ago, available_at=long_ago
    )
    # 2: its message is gone (closed without a worker claiming the delivery)
    OutboxMessage.objects.filter(pk=messages[no_message.pk].pk).update(
        dispatched_at=long_ago, started_at=long_ago, done_at=long_ago
    )
    WebhookDelivery.objects.filter(pk=no_message.pk).update(next_attempt_at=long_ago)
    # 3: a worker claimed an attempt and died mid-request
    OutboxMessage.objects.filter(pk=messages[worker_lost.pk].pk).update(
        dispatched_at=long_ago, started_at=long_ago, done_at=long_ago
    )
    WebhookDelivery.objects.filter(pk=worker_lost.pk).update(
        status=DeliveryStatus.DELIVERING, attempts=1, attempt_started_at=long_ago
    )
    with django_capture_on_commit_callbacks(execute=True):
        summary = reconcile(trigger="command")
    assert summary["webhooks"] == {
        "lost_attempts": [worker_lost.pk],
        "redispatched": [no_message.pk],
    }
    assert summary["outbox"]["lost_messages"] == 1
    statuses = dict(WebhookDelivery.objects.values_list("pk", "status"))
    assert set(statuses.values()) == {DeliveryStatus.SUCCEEDED}
    assert sorted(r.payload["data"]["version"] for r in receiver.requests) == [1, 2, 3]
    assert all(r.verified for r in receiver.requests)
    lost = WebhookDelivery.objects.get(pk=worker_lost.pk)
    assert lost.attempts == 2


def test_the_attempt_connects_to_the_address_it_checked_with_the_names_host_header(
    admin_user,
    allow_private,
    receiver,
    monkeypatch,
    no_outside_connections,
    django_capture_on_commit_callbacks,
):
    lookups = []

    def fake_dns(host, port, *args, **kwargs):
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    url = f"http://hooks.example.test:{receiver.port}/in?team=qa"
    _, receiver.secret = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, url=url, events=[FROZEN]
    )
    (delivery,) = emit_now(django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED
    (request,) = receiver.requests
    assert request.verified and request.path == "/in?team=qa"
    assert request.headers["host"] == f"hooks.example.test:{receiver.port}"
    # the name is looked up at registration and checked before the attempt; the connection
    # itself only "resolves" the literal address it was given (no DNS between check and use)
    assert lookups == ["hooks.example.test", "hooks.example.test", "127.0.0.1"]
    assert no_outside_connections == [("127.0.0.1", receiver.port)]
