"""End to end through a real Celery worker on Redis and PostgreSQL: freezing a gold version
emits ``gold_version.frozen``; the worker posts it to a loopback receiver, which answers 500
once, and the retry (after its backoff) is delivered and verifies with ``standardwebhooks``."""

import pytest

from goldset.models import DeliveryStatus, OutboxMessage, WebhookDelivery, WebhookEvent
from goldset.services import webhooks
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.waiting import wait_until

pytestmark = pytest.mark.worker


@pytest.fixture
def webhook_worker(transactional_db, request, monkeypatch, settings):
    """The worker delivers to the loopback receiver: private targets allowed, a short backoff."""
    monkeypatch.setenv("WEBHOOKS_ALLOW_PRIVATE_TARGETS", "true")
    monkeypatch.setenv("WEBHOOKS_RETRY_BASE_SECONDS", "0.5")
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    return request.getfixturevalue("celery_worker_process")


def test_freezing_a_version_ends_in_a_verified_delivery_after_one_retry(
    webhook_worker, receiver, admin_user
):
    endpoint, receiver.secret = webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url=receiver.url,
        events=[WebhookEvent.GOLD_VERSION_FROZEN],
    )
    receiver.statuses = [500, 200]
    blocks = make_gold_corpus(4)
    rows = [gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)]
    version = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)

    def delivered():
        delivery.refresh_from_db()
        return delivery.finished

    wait_until(
        delivered,
        timeout=60,
        what=lambda: (
            f"the webhook delivery to end: {delivery.status}, {delivery.attempts} attempt(s), "
            f"{delivery.last_error!r}; outbox {list(OutboxMessage.objects.values())}; "
            f"{len(receiver.requests)} request(s) received"
        ),
    )
    assert delivery.status == DeliveryStatus.SUCCEEDED, delivery.last_error
    assert delivery.attempts == 2 and delivery.last_status_code == 200
    first, second = receiver.requests
    assert second.at - first.at >= 0.5  # the retry waited its backoff
    assert first.verified and second.verified
    assert second.headers["webhook-id"] == delivery.message_id
    assert second.payload["type"] == "gold_version.frozen"
    assert second.payload["data"]["version"] == version.number
    assert second.payload["data"]["rows_sha256"] == version.rows_sha256
