"""Freezing the curated gold set: filters, revoked customers, Unrag structure and round trip."""

import json

import pytest

from goldset.models import ExportFormat, Source
from goldset.services import exports
from goldset.services.corpus import import_corpus, parse_corpus_file
from goldset.services.customers import grant_customer_permission, revoke_customer_permission
from goldset.services.freeze import FreezeFilters, freeze_gold_version, preview_freeze
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    CustomerFactory,
    DocumentFactory,
    DomainFactory,
    default_project,
)
from tests.goldset.curation_support import review, write_triple

pytestmark = pytest.mark.django_db


def gold(team, **fields):
    triple = write_triple(team["author"], **fields)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    return triple


@pytest.fixture
def corpus():
    sc, fed = DomainFactory(slug="supply_chain"), DomainFactory(slug="federal_it")
    doc_a = DocumentFactory(document_id="doc-a", domain=sc)
    doc_b = DocumentFactory(document_id="doc-b", domain=fed)
    return [
        BlockVersionFactory(
            block=BlockFactory(block_id=f"blk-{doc.document_id}-{i}", document=doc),
            effective_from="2026-01-01",
        )
        for doc in (doc_a, doc_b)
        for i in range(2)
    ]


def unrag(version):
    return json.loads(
        exports.read_verified_bytes(
            version.files.get(format=ExportFormat.UNRAG_JSON, redacted=False)
        )
    )


def test_preview_counts_and_diff_then_freeze_matches_and_a_revoked_customer_never_returns(
    team, corpus
):
    customer = CustomerFactory(name="Acme", slug="acme")
    grant_customer_permission(customer=customer, actor=team["admin"], note="addendum")
    public = [gold(team, version=bv) for bv in corpus[:3]]
    private = gold(team, version=corpus[3], source=Source.CUSTOMER_PERMISSIONED, customer=customer)
    preview = preview_freeze(project=default_project(), filters=FreezeFilters())
    assert preview.count == 4 and preview.against is None
    assert preview.by_source == {"customer_permissioned": 1, "public_rfp": 3}
    v1 = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    assert v1.row_count == 4 and set(v1.manifest["diff"]["added"]) == {
        t.external_id for t in [*public, private]
    }
    reviews = v1.manifest["agreement"]["triple_reviews"]
    assert reviews["values"] == {"confirm": 8}
    assert reviews["percent_agreement"]["value"] == 1.0

    assert (
        preview_freeze(project=default_project(), filters=FreezeFilters(public_only=True)).count
        == 3
    )
    revoke_customer_permission(customer=customer, actor=team["admin"], note="opt-out")
    after = preview_freeze(project=default_project(), filters=FreezeFilters())
    assert after.count == 3 and after.diff.removed == [private.external_id]
    v2 = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    v3 = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(domain="supply_chain"), actor=team["admin"]
    )
    for later in (v2, v3):
        assert not later.rows.filter(triple_id=private.external_id).exists()
        assert (
            private.external_id
            not in exports.read_verified_bytes(later.files.get(format="gold_jsonl")).decode()
        )
    assert v2.manifest["diff"]["removed"] == [private.external_id]
    assert v1.rows.filter(triple_id=private.external_id).exists()  # frozen past stays frozen
    assert v3.filters["domain"] == "supply_chain" and v3.row_count == 2


def test_unrag_export_has_the_seed_001_structure(team, corpus):
    triples = [gold(team, version=bv) for bv in corpus]
    data = unrag(
        freeze_gold_version(project=default_project(), filters=FreezeFilters(), actor=team["admin"])
    )
    assert list(data) == ["defaults", "description", "documents", "id", "queries", "version"]
    assert data["version"] == "1" and isinstance(data["id"], str) and data["id"]
    assert data["defaults"]["scopePrefix"].startswith("eval:")
    assert data["defaults"]["topK"] == 10 and data["defaults"]["mode"] in (
        "retrieve",
        "retrieve+rerank",
    )
    prefix = data["defaults"]["scopePrefix"]
    source_ids = {d["sourceId"] for d in data["documents"]}
    assert len(source_ids) == len(corpus) and all(s.startswith(prefix) for s in source_ids)
    assert all(isinstance(d["content"], str) and d["content"] for d in data["documents"])
    assert {q["id"] for q in data["queries"]} == {t.external_id for t in triples}
    for q in data["queries"]:
        assert set(q) >= {"id", "query", "relevant"} and q["query"]
        assert q["relevant"]["sourceIds"] and set(q["relevant"]["sourceIds"]) <= source_ids


def test_unrag_export_round_trips_through_the_corpus_importer(team, corpus, admin_user):
    for bv in corpus:
        gold(team, version=bv)
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    text = exports.read_verified_bytes(
        version.files.get(format="unrag_json", redacted=False)
    ).decode()
    fmt, documents = parse_corpus_file(text)
    assert fmt == "unrag"
    parsed = {
        (
            doc.document_id,
            doc.domain,
            block.block_id,
            block.versions[0].text,
            block.versions[0].sha256,
            str(block.versions[0].effective_from),
        )
        for doc in documents
        for block in doc.blocks
    }
    assert parsed == {
        (
            bv.block.document.document_id,
            bv.block.document.domain.slug,
            bv.block.block_id,
            bv.text,
            bv.sha256,
            bv.effective_from,
        )
        for bv in corpus
    }
    summary = import_corpus(
        project=default_project(), source=text, actor=admin_user, source_name="roundtrip.json"
    )
    assert (summary.documents_created, summary.blocks_created, summary.versions_created) == (
        0,
        0,
        0,
    )
    assert summary.versions_unchanged == len(corpus)


def test_a_double_clicked_freeze_page_makes_one_version_and_says_so(team, corpus, client_for):
    from django.urls import reverse

    from goldset.models import GoldVersion

    for bv in corpus[:2]:
        gold(team, version=bv)
    admin = client_for(team["admin"])
    first = admin.post(reverse("exports:freeze"), {"action": "freeze"})
    second = admin.post(reverse("exports:freeze"), {"action": "freeze"}, follow=True)
    assert first.status_code == 302 and first["Location"] == reverse("exports:version", args=[1])
    assert second.status_code == 200
    assert "nothing to freeze: the selection is identical to v1" in second.content.decode()
    assert list(GoldVersion.objects.values_list("number", flat=True)) == [1]


def test_a_freeze_commits_with_the_broker_and_the_cache_down_and_its_webhook_waits(
    team, corpus, client_for, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """Issue 10: a freeze is one of the actions that must commit when Redis is down; the work
    it triggers (the version.frozen webhook) waits in the outbox for the broker."""
    from celery.app.task import Task
    from django.urls import reverse
    from kombu.exceptions import OperationalError

    from goldset.models import GoldVersion, OutboxMessage, WebhookEvent
    from goldset.services import webhooks
    from workbench.celery import app

    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=team["admin"],
        url="http://127.0.0.1:9/hook",
        events=[WebhookEvent.GOLD_VERSION_FROZEN],
    )
    for bv in corpus[:2]:
        gold(team, version=bv)
    admin = client_for(team["admin"])
    settings.CACHES = {  # a Redis cache nobody answers
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }

    def broker_down(*args, **kwargs):  # the boundary: Redis refusing connections
        raise OperationalError("Error 111 connecting to redis:6379. Connection refused.")

    monkeypatch.setattr(Task, "apply_async", broker_down)
    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin.post(reverse("exports:freeze"), {"action": "freeze"})
    finally:
        app.conf.task_always_eager = eager
    assert response.status_code == 302 and response["Location"] == reverse(
        "exports:version", args=[1]
    )
    assert GoldVersion.objects.get().sealed
    waiting = OutboxMessage.objects.get(done_at__isnull=True, kind="webhooks.deliver")
    assert waiting.dispatched_at is None and "Connection refused" in waiting.last_error
