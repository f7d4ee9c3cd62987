"""The triples importer writes in bulk and stores exactly what the per-row path
(:func:`create_triple` per line, as it did before) stores: the same triples, revisions and
``triple_created`` audit events, with a statement count that does not grow with the file."""

import datetime as dt
import json
import re

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from goldset.imports.errors import Problems
from goldset.imports.reader import as_source
from goldset.models import BlockVersion, Tier, Triple
from goldset.services.triples import TripleImporter, create_triple, import_triples
from tests.factories import (
    BlockVersionFactory,
    CustomerFactory,
    CustomerPermissionFactory,
    default_project,
)
from tests.goldset.curation_support import block_version
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(make_user, admin_user):
    author = make_user(Role.ANNOTATOR, username="r-patel")
    v1 = block_version()
    v2 = BlockVersionFactory(block=v1.block, version=2, text="Clause: now 45 days.")
    granted = CustomerPermissionFactory(customer=CustomerFactory(slug="acme")).customer
    return {"author": author, "admin": admin_user, "v1": v1, "v2": v2, "customer": granted}


def _line(version: BlockVersion, n: int, **meta):
    row_id = meta.pop("id", f"bulk-{n}")
    row = {
        "question": f"  How long are backups retained, case {n}?  ",
        "expected_block": {
            "block_id": version.block.block_id,
            "document_id": version.block.document.document_id,
            "version": version.version,
            "sha256": version.sha256,
        },
        "expected_answer": f"{30 + n} days.",
        "metadata": {
            "domain": version.block.document.domain.slug,
            "task_type": "retrieval",
            "source": "public_rfp",
            **meta,
        },
    }
    if row_id:
        row["id"] = row_id
    return json.dumps(row)


def _file(c, n_plain: int) -> str:
    admin, v1, v2 = c["admin"].username, c["v1"], c["v2"]
    lines = [
        _line(v2, 0, added_by="r-patel", added_at="2025-06-04"),
        _line(v2, 1, task_type="factual_qa", difficulty="hard"),  # GOLD by task type
        _line(v2, 2, model_uncertainty=0.8),  # GOLD by uncertainty
        _line(v2, 3, adversarial=True, added_by="r-patel"),
        _line(v2, 4, source="customer_permissioned", customer="acme"),
        _line(v2, 5, source="llm_generated", human_verified_by=admin),
        _line(v2, 6, source="llm_generated", human_verified_by=admin, added_by="r-patel"),
        _line(v1, 7, superseded_reason="The audit covered the old text."),
        _line(v2, 8, id=""),  # no id: named gt-<pk>
    ]
    lines += [_line(v2, 100 + i, model_uncertainty=(i % 10) / 10) for i in range(n_plain)]
    return "\n".join(lines) + "\n"


def _per_row(text: str, actor):
    """The importer's write step as it was before it went bulk: create_triple per line."""
    importer = TripleImporter(
        project=default_project(), actor=actor, source_name="t.jsonl", on_behalf=True
    )
    importer.begin(writing=True)
    problems = Problems()
    batch = list(importer.records(as_source(text), problems, lambda _: None))
    plan = importer.check(batch, problems)
    assert not problems.items
    for ln, author, pinned, domain, customer, _reason in plan:
        added_at = (
            dt.datetime.combine(ln.added_at, dt.time(), tzinfo=dt.UTC) if ln.added_at else None
        )
        triple = create_triple(
            project=default_project(),
            author=author,
            question=ln.question,
            block_version=pinned,
            expected_answer=ln.expected_answer,
            task_type=ln.task_type,
            source=ln.source,
            domain=domain,
            difficulty=ln.difficulty,
            customer=customer,
            adversarial=ln.adversarial,
            model_uncertainty=ln.model_uncertainty,
            llm_verified=bool(ln.human_verified_by) and author.pk == actor.pk,
            external_id=ln.external_id,
            added_at=added_at,
            imported_by=actor,
            superseded_reason=ln.superseded_reason,
        )
        if ln.human_verified_by and author.pk != actor.pk:
            triple.human_verified_by = actor
            triple.human_verified_at = timezone.now()
            triple.save(update_fields=["human_verified_by", "human_verified_at", "updated_at"])


def _snapshot() -> dict:
    """Every stored triple, its revision and its creation event, without ids and clocks."""
    rows = {}
    for t in Triple.objects.select_related("current_revision").order_by("pk"):
        r = t.current_revision
        key = "unnamed" if re.fullmatch(r"gt-\d{5}", t.external_id) else t.external_id
        event = AuditEvent.objects.get(verb="triple_created", object_id=str(t.pk))
        rows[key] = {
            "triple": (
                t.state,
                t.tier,
                t.routing_rule,
                t.rules_version,
                t.source,
                t.customer_id,
                t.adversarial,
                t.model_uncertainty,
                t.domain_id,
                t.task_type,
                t.difficulty,
                t.author_id,
                t.human_verified_by_id,
                t.human_verified_at is not None,
                t.parent_id,
                t.added_at.date() if key == "bulk-0" else None,
            ),
            "revision": (
                r.number,
                r.question,
                r.expected_block_version_id,
                r.expected_answer,
                r.superseded_reason,
                r.created_by_id,
                r.reviewers_needed,
                r.assigned_count,
            ),
            "event": (event.actor_id, event.object_type, event.detail),
            "revisions": t.revisions.count(),
        }
    return rows


class _RolledBack(Exception):
    pass


def _stored_by(write) -> dict:
    try:
        with transaction.atomic():
            write()
            snapshot = _snapshot()
            raise _RolledBack
    except _RolledBack:
        return snapshot


def test_bulk_triple_import_stores_what_the_per_row_path_stored(corpus):
    admin, text = corpus["admin"], _file(corpus, 20)
    bulk = _stored_by(
        lambda: import_triples(
            project=default_project(),
            source=text,
            actor=admin,
            on_behalf=True,
            source_name="t.jsonl",
        )
    )
    per_row = _stored_by(lambda: _per_row(text, admin))
    assert len(bulk) == 29 and bulk.keys() == per_row.keys()
    for key in bulk:
        assert bulk[key] == per_row[key], key
    # The cases the file covers really happened (not 29 identical rows).
    assert bulk["bulk-1"]["triple"][1] == Tier.GOLD
    assert bulk["bulk-100"]["triple"][1] == Tier.TRIAGE
    assert bulk["bulk-7"]["event"][2]["superseded_pin"] is True
    assert bulk["bulk-0"]["event"][2]["on_behalf_of"] == "r-patel"
    assert bulk["bulk-6"]["triple"][12] == admin.pk  # verified by the importing admin
    assert bulk["bulk-1"]["revision"][1] == "How long are backups retained, case 1?"


def test_bulk_triple_import_statements_do_not_grow_with_the_file(corpus):
    admin = corpus["admin"]
    # A first import creates the default routing rules and warms per-process caches.
    import_triples(project=default_project(), source=_file(corpus, 0), actor=admin, on_behalf=True)
    counts = []
    for n_plain in (10, 200):
        text = _file(corpus, n_plain).replace('"bulk-', f'"n{n_plain}-')
        with CaptureQueriesContext(connection) as queries:
            summary = import_triples(
                project=default_project(), source=text, actor=admin, on_behalf=True
            )
        assert len(summary.created) == 9 + n_plain
        inserts = [q for q in queries.captured_queries if q["sql"].startswith("INSERT")]
        counts.append((len(queries.captured_queries), len(inserts)))
    assert counts[0] == counts[1], counts
    assert counts[1][1] <= 5, counts  # triples, revisions, events, the import's event, routing
    assert Triple.objects.count() == 3 * 9 + 210
