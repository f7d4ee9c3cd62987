import json

import pytest

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.models import Source, TaskType, Tier, Triple, TripleState
from goldset.selectors.curation import gold_row, list_gold_triples
from goldset.services.triples import import_triples
from tests.factories import CustomerFactory, CustomerPermissionFactory, default_project
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def author(make_user):
    return make_user(Role.ANNOTATOR, username="r-patel")


@pytest.mark.parametrize(
    "fields,tier,rule",
    [
        ({"task_type": TaskType.RAG_SYNTHESIS}, Tier.GOLD, "task_type:rag_synthesis"),
        (
            {"task_type": TaskType.SUMMARIZATION, "model_uncertainty": 0.7},
            Tier.GOLD,
            "uncertainty>=0.65",
        ),
        ({"task_type": TaskType.RETRIEVAL, "adversarial": True}, Tier.GOLD, "adversarial"),
        ({"task_type": TaskType.RETRIEVAL, "model_uncertainty": 0.2}, Tier.TRIAGE, "default"),
    ],
)
def test_a_new_triple_is_routed_and_stores_the_rule_that_fired(author, fields, tier, rule):
    triple = write_triple(author, **fields)
    assert (triple.tier, triple.rules_version) == (tier, 1)
    assert triple.routing_rule.startswith(rule)
    assert triple.state == TripleState.PENDING_REVIEW
    triple.project.refresh_from_db()
    assert triple.external_id == f"gt-{triple.project.last_triple_number:05d}"
    event = AuditEvent.objects.get(verb="triple_created", object_id=str(triple.pk))
    assert event.detail["routing_rule"] == rule


def test_rejects_an_empty_question_and_a_stray_customer(author):
    with pytest.raises(GoldsetError, match="question is empty"):
        write_triple(author, question="  ")
    with pytest.raises(GoldsetError, match="Only customer-permissioned"):
        write_triple(author, customer=CustomerFactory())
    with pytest.raises(GoldsetError, match="between 0 and 1"):
        write_triple(author, model_uncertainty=1.5)
    assert not Triple.objects.exists()


def _line(version, **meta):
    row = {
        "id": meta.pop("id", "imp-1"),
        "question": "How long are backups retained?",
        "expected_block": {
            "block_id": version.block.block_id,
            "document_id": version.block.document.document_id,
            "version": version.version,
            "page_range": None,
            "sha256": version.sha256,
        },
        "expected_answer": "35 days.",
        "metadata": {
            "domain": version.block.document.domain.slug,
            "difficulty": "standard",
            "task_type": "factual_qa",
            "tier": "tier_b",
            "source": "public_rfp",
            "added_by": "r-patel",
            "added_at": "2025-06-04",
            "reviewed_by": ["a-chen", "m-okoro"],
            "resolution": "consensus",
            **meta,
        },
    }
    return json.dumps(row)


def test_import_accepts_the_gold_jsonl_shape_and_routes_each_triple(author, admin_user):
    v = block_version()
    summary = import_triples(
        project=default_project(),
        source=_line(v) + "\n\n" + _line(v, id="imp-2", task_type="summarization") + "\n",
        actor=admin_user,
        on_behalf=True,
        source_name="batch.jsonl",
    )
    assert summary.created == ["imp-1", "imp-2"]
    assert summary.by_tier == {Tier.GOLD: 1, Tier.TRIAGE: 1}
    first = Triple.objects.get(external_id="imp-1")
    assert (first.author, first.state, first.added_at.date().isoformat()) == (
        author,
        TripleState.PENDING_REVIEW,
        "2025-06-04",
    )


def test_export_row_re_imports_to_the_same_content(author, admin_user, make_user):
    triple = write_triple(author)
    review(make_user(Role.ANNOTATOR, username="a-chen"), triple, "confirm")
    review(make_user(Role.ANNOTATOR, username="m-okoro"), triple, "confirm")
    row = gold_row(list_gold_triples().get())
    row["id"] = "copy-1"
    import_triples(
        project=default_project(), source=json.dumps(row), actor=admin_user, on_behalf=True
    )
    copy = gold_row(Triple.objects.select_related("current_revision").get(external_id="copy-1"))
    for key in ("question", "expected_block", "expected_answer"):
        assert copy[key] == row[key]
    assert copy["metadata"]["domain"] == row["metadata"]["domain"]


def test_import_rejects_the_whole_file_with_line_numbered_errors(author, admin_user):
    v = block_version()
    bad_sha = json.loads(_line(v, id="x-2"))
    bad_sha["expected_block"]["sha256"] = "0" * 64
    lines = [
        _line(v),
        json.dumps(bad_sha),
        "{not json",
        _line(v, id="x-4", source="customer_permissioned"),
        _line(v, id="x-5", added_by="nobody", task_type="poetry"),
        _line(v, id="imp-1"),
    ]
    with pytest.raises(ImportRejected) as caught:
        import_triples(
            project=default_project(), source="\n".join(lines), actor=admin_user, on_behalf=True
        )
    errors = caught.value.errors
    assert any(e.startswith("line 2: expected_block.sha256: does not match") for e in errors)
    assert any(e.startswith("line 3: not valid JSON") for e in errors)
    assert any(e.startswith("line 4: metadata.customer: required") for e in errors)
    assert any(
        e.startswith("line 5: metadata.task_type: got 'poetry' (expected one of") for e in errors
    )
    assert any(e.startswith("line 5: metadata.added_by: unknown user 'nobody'") for e in errors)
    assert any(e.startswith("line 6: id: 'imp-1' also appears at line 1") for e in errors)
    assert not Triple.objects.exists()


def test_import_needs_an_active_grant_for_customer_lines(author, admin_user):
    v = block_version()
    granted = CustomerPermissionFactory(customer=CustomerFactory(slug="acme")).customer
    CustomerFactory(slug="globex")
    ok = _line(v, source="customer_permissioned", customer=granted.slug)
    refused = _line(v, id="imp-2", source="customer_permissioned", customer="globex")
    with pytest.raises(ImportRejected) as caught:
        import_triples(
            project=default_project(), source=ok + "\n" + refused, actor=admin_user, on_behalf=True
        )
    assert caught.value.errors == [
        "line 2: metadata.customer: 'globex' has no active permission grant"
    ]
    import_triples(project=default_project(), source=ok, actor=admin_user, on_behalf=True)
    assert Triple.objects.get().source == Source.CUSTOMER_PERMISSIONED
