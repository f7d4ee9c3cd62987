import json

import pytest

from goldset.exceptions import ImportRejected
from goldset.models import Block, BlockVersion, Document
from goldset.services.corpus import import_corpus, sha256_text
from tests.factories import DomainFactory, default_project
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def domains():
    return [DomainFactory(slug="security_questionnaire"), DomainFactory(slug="federal_it")]


def manifest_line(document_id="doc-a", *, blocks=None, **overrides):
    row = {
        "document_id": document_id,
        "title": f"Title of {document_id}",
        "domain": "security_questionnaire",
        "authority": 0.9,
        "blocks": blocks
        if blocks is not None
        else [
            {
                "block_id": f"{document_id}-b1",
                "versions": [
                    {
                        "version": 1,
                        "text": "Data is encrypted at rest with AES-256.",
                        "section": "4.2",
                        "page_range": [12, 13],
                        "effective_from": "2024-01-01",
                    }
                ],
            }
        ],
    }
    row.update(overrides)
    return json.dumps(row)


def jsonl(*lines):
    return "\n".join(lines) + "\n"


def counts():
    return (Document.objects.count(), Block.objects.count(), BlockVersion.objects.count())


def test_good_manifest_creates_documents_blocks_and_versions(domains):
    summary = import_corpus(
        project=default_project(),
        source=jsonl(manifest_line("doc-a"), manifest_line("doc-b")),
        actor=None,
    )
    assert (summary.documents_created, summary.blocks_created, summary.versions_created) == (
        2,
        2,
        2,
    )
    version = BlockVersion.objects.get(block__block_id="doc-a-b1")
    assert version.version == 1
    assert version.page_range == [12, 13]
    assert version.section == "4.2"
    assert version.sha256 == sha256_text("Data is encrypted at rest with AES-256.")
    assert str(version.block.document.authority) == "0.900"
    assert AuditEvent.objects.filter(verb="corpus_imported").count() == 1


def test_same_file_again_is_a_no_op(domains):
    text = jsonl(manifest_line("doc-a"))
    import_corpus(project=default_project(), source=text, actor=None)
    summary = import_corpus(project=default_project(), source=text, actor=None)
    assert summary.versions_created == 0
    assert summary.versions_unchanged == 1
    assert counts() == (1, 1, 1)


def test_changed_text_without_version_number_becomes_the_next_version(domains):
    import_corpus(project=default_project(), source=jsonl(manifest_line("doc-a")), actor=None)
    changed = manifest_line(
        "doc-a",
        blocks=[
            {
                "block_id": "doc-a-b1",
                "versions": [
                    {
                        "text": "Data is encrypted at rest with AES-256-GCM.",
                        "effective_from": "2025-07-01",
                    }
                ],
            }
        ],
    )
    summary = import_corpus(project=default_project(), source=jsonl(changed), actor=None)
    versions = list(BlockVersion.objects.filter(block__block_id="doc-a-b1").order_by("version"))
    assert [v.version for v in versions] == [1, 2]
    assert versions[0].text.endswith("AES-256.")  # the old version is untouched
    assert summary.superseding_version_ids == [versions[1].pk]


def test_unrag_dataset_documents_become_documents_with_one_block(domains):
    dataset = {
        "version": "1",
        "id": "support-faq-eval",
        "defaults": {"topK": 10, "scopePrefix": "eval:support:", "mode": "retrieve"},
        "documents": [
            {
                "sourceId": "eval:support:doc:refund-policy",
                "content": "Returns within 30 days.",
                "metadata": {"category": "returns"},
            },
            {
                "sourceId": "eval:support:doc:shipping",
                "content": "Standard shipping takes 5-7 business days.",
                "metadata": {"domain": "federal_it", "authority": 0.7},
            },
        ],
        "queries": [
            {
                "id": "q1",
                "query": "How long to return?",
                "relevant": {"sourceIds": ["eval:support:doc:refund-policy"]},
            }
        ],
    }
    summary = import_corpus(
        project=default_project(),
        source=json.dumps(dataset, indent=2),
        actor=None,
        default_domain="security_questionnaire",
    )
    assert summary.format == "unrag"
    refund = Document.objects.get(document_id="eval:support:doc:refund-policy")
    assert refund.domain.slug == "security_questionnaire"
    assert refund.metadata["category"] == "returns"
    assert refund.blocks.get().block_id == "eval:support:doc:refund-policy"
    shipping = Document.objects.get(document_id="eval:support:doc:shipping")
    assert (shipping.domain.slug, str(shipping.authority)) == ("federal_it", "0.700")
    assert BlockVersion.objects.get(block__block_id="eval:support:doc:shipping").text.startswith(
        "Standard shipping"
    )


BAD_INPUTS = [
    pytest.param(
        lambda: jsonl(
            manifest_line("doc-a"), '{"document_id": "doc-b", "title": ', manifest_line("doc-c")
        ),
        "line 2: not valid JSON",
        id="bad-json-on-line-2",
    ),
    pytest.param(
        lambda: jsonl(
            manifest_line("doc-a"),
            json.dumps(
                {k: v for k, v in json.loads(manifest_line("doc-b")).items() if k != "title"}
            ),
        ),
        "line 2: title: missing",
        id="missing-field",
    ),
    pytest.param(
        lambda: jsonl(
            manifest_line(
                "doc-a",
                blocks=[
                    {
                        "block_id": "x1",
                        "versions": [{"version": 1, "text": "one"}, {"version": 1, "text": "two"}],
                    }
                ],
            )
        ),
        "line 1: blocks[0].versions[1].version: duplicate block version: x1 v1",
        id="duplicate-block-version",
    ),
    pytest.param(
        lambda: jsonl(
            manifest_line(
                "doc-a",
                blocks=[
                    {
                        "block_id": "x1",
                        "versions": [
                            {
                                "text": "one",
                                "effective_from": "2020-09-23",
                                "effective_to": "2015-01-22",
                            }
                        ],
                    }
                ],
            )
        ),
        "line 1: blocks[0].versions[0].effective_to: 2015-01-22 is before effective_from 2020-09-23",
        id="effective-to-before-from",
    ),
    pytest.param(
        lambda: jsonl(manifest_line("doc-a"), manifest_line("doc-b", domain="astrology")),
        "line 2: domain: unknown domain 'astrology'",
        id="unknown-domain",
    ),
    pytest.param(
        lambda: jsonl(manifest_line("doc-a", authority=1.5)),
        "line 1: authority: got 1.5 (expected a number between 0 and 1)",
        id="authority-out-of-range",
    ),
    pytest.param(
        lambda: jsonl(manifest_line("doc-a"), manifest_line("doc-a")),
        "line 2: document_id: 'doc-a' also appears at line 1",
        id="duplicate-document",
    ),
    pytest.param(
        lambda: jsonl(
            manifest_line(
                "doc-a",
                blocks=[{"block_id": "x1", "versions": [{"text": "t", "page_range": [5, 2]}]}],
            )
        ),
        "page_range: end page 2 is before start page 5",
        id="page-range-reversed",
    ),
    pytest.param(
        lambda: json.dumps({"version": "2", "documents": [{"sourceId": "eval:a", "content": "x"}]}),
        'version: expected "1"',
        id="unrag-wrong-version",
    ),
    pytest.param(
        lambda: json.dumps(
            {"version": "1", "documents": [{"sourceId": "eval:a", "loaderRef": "notion:1"}]}
        ),
        "documents[0].content: missing: loaderRef",
        id="unrag-loader-ref",
    ),
    pytest.param(
        lambda: json.dumps({"version": "1", "documents": [{"sourceId": "eval:a"}]}),
        "documents[0].content: missing",
        id="unrag-no-content",
    ),
    pytest.param(lambda: "", "line 1: the file is empty", id="empty-file"),
]


@pytest.mark.parametrize("make_text,expected", BAD_INPUTS)
def test_bad_input_is_rejected_with_line_and_field_and_nothing_is_stored(
    domains, make_text, expected
):
    before = counts()
    with pytest.raises(ImportRejected) as rejected:
        import_corpus(
            project=default_project(),
            source=make_text(),
            actor=None,
            default_domain="security_questionnaire",
        )
    assert any(expected in e for e in rejected.value.errors), rejected.value.errors
    assert counts() == before
    assert not AuditEvent.objects.filter(verb="corpus_imported").exists()


def test_one_bad_line_rejects_the_good_lines_too(domains):
    text = jsonl(
        manifest_line("doc-a"), manifest_line("doc-b"), manifest_line("doc-c", domain="nope")
    )
    with pytest.raises(ImportRejected):
        import_corpus(project=default_project(), source=text, actor=None)
    assert counts() == (0, 0, 0)


def test_an_existing_version_with_different_text_is_refused_as_append_only(domains):
    import_corpus(project=default_project(), source=jsonl(manifest_line("doc-a")), actor=None)
    tampered = manifest_line(
        "doc-a",
        blocks=[
            {"block_id": "doc-a-b1", "versions": [{"version": 1, "text": "Rewritten history."}]}
        ],
    )
    with pytest.raises(ImportRejected) as rejected:
        import_corpus(project=default_project(), source=jsonl(tampered), actor=None)
    assert (
        "already exists with a different text; versions are append-only" in rejected.value.errors[0]
    )
    assert BlockVersion.objects.get().text == "Data is encrypted at rest with AES-256."


def test_version_numbers_must_be_consecutive(domains):
    gap = manifest_line(
        "doc-a",
        blocks=[
            {
                "block_id": "x1",
                "versions": [{"version": 1, "text": "a"}, {"version": 3, "text": "c"}],
            }
        ],
    )
    with pytest.raises(ImportRejected) as rejected:
        import_corpus(project=default_project(), source=jsonl(gap), actor=None)
    assert "expected version 2 for x1" in rejected.value.errors[0]


def test_a_block_cannot_move_to_another_document(domains):
    import_corpus(project=default_project(), source=jsonl(manifest_line("doc-a")), actor=None)
    moved = manifest_line("doc-b", blocks=[{"block_id": "doc-a-b1", "versions": [{"text": "x"}]}])
    with pytest.raises(ImportRejected) as rejected:
        import_corpus(project=default_project(), source=jsonl(moved), actor=None)
    assert "belongs to document 'doc-a'" in rejected.value.errors[0]


def test_every_problem_in_the_file_is_reported_at_once(domains):
    text = jsonl(
        manifest_line("doc-a", domain="x"), "not json", manifest_line("doc-c", authority=-1)
    )
    with pytest.raises(ImportRejected) as rejected:
        import_corpus(project=default_project(), source=text, actor=None)
    joined = "\n".join(rejected.value.errors)
    assert "line 2: not valid JSON" in joined and "line 3: authority" in joined
