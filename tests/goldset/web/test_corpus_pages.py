import io

import pytest
from django.urls import reverse

from goldset.models import Document
from tests.factories import BlockFactory, BlockVersionFactory, DocumentFactory, DomainFactory

pytestmark = pytest.mark.django_db


def make_documents(n, domain):
    for _ in range(n):
        doc = DocumentFactory(domain=domain)
        for _ in range(3):
            block = BlockFactory(document=doc)
            BlockVersionFactory(block=block)


def test_document_list_filters_by_domain(client_for, annotator):
    sq, fed = DomainFactory(slug="security_questionnaire"), DomainFactory(slug="federal_it")
    DocumentFactory(domain=sq, document_id="doc-sq")
    DocumentFactory(domain=fed, document_id="doc-fed")
    html = (
        client_for(annotator)
        .get(reverse("corpus:documents"), {"domain": "federal_it"})
        .content.decode()
    )
    assert "doc-fed" in html and "doc-sq" not in html


@pytest.mark.parametrize("n", [5, 60])
def test_document_list_query_count_is_constant_and_paginated(
    client_for, annotator, django_assert_max_num_queries, n
):
    make_documents(n, DomainFactory(slug="sq"))
    c = client_for(annotator)
    with django_assert_max_num_queries(8):
        response = c.get(reverse("corpus:documents"))
    assert len(response.context["page"].object_list) == min(n, 25)


@pytest.mark.parametrize("n", [3, 40])
def test_document_page_query_count_is_constant(
    client_for, annotator, django_assert_max_num_queries, n
):
    doc = DocumentFactory(document_id="doc-big")
    for _ in range(n):
        block = BlockFactory(document=doc)
        BlockVersionFactory(block=block)
        BlockVersionFactory(block=block, version=2, text=f"changed {block.block_id}")
    c = client_for(annotator)
    with django_assert_max_num_queries(9):
        response = c.get(reverse("corpus:document", args=["doc-big"]))
    assert response.status_code == 200
    assert len(response.context["rows"]) == min(n, 25)
    assert all(latest.version == 2 for _, latest in response.context["rows"])


def test_block_page_shows_versions_dates_authority_and_a_word_diff(client_for, annotator):
    block = BlockFactory(block_id="blk-x", document=DocumentFactory(authority="0.950"))
    BlockVersionFactory(
        block=block,
        version=1,
        text="Keys rotate every 90 days.",
        effective_from="2024-01-01",
        effective_to="2025-06-30",
    )
    BlockVersionFactory(
        block=block, version=2, text="Keys rotate every 30 days.", effective_from="2025-07-01"
    )
    html = client_for(annotator).get(reverse("corpus:block", args=["blk-x"])).content.decode()
    assert "<del>90</del>" in html and "<ins>30</ins>" in html
    assert "0.950" in html and "2025-07-01" in html and "superseded" in html


def test_block_diff_escapes_html_in_block_text(client_for, annotator):
    block = BlockFactory(block_id="blk-xss")
    BlockVersionFactory(block=block, version=1, text="safe text")
    BlockVersionFactory(block=block, version=2, text="<script>alert(1)</script> text")
    html = client_for(annotator).get(reverse("corpus:block", args=["blk-xss"])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html


def test_unknown_document_or_block_is_404(client_for, annotator):
    c = client_for(annotator)
    assert c.get(reverse("corpus:document", args=["nope"])).status_code == 404
    assert c.get(reverse("corpus:block", args=["nope"])).status_code == 404


def test_admin_uploads_a_manifest(client_for, admin_user, django_capture_on_commit_callbacks):
    DomainFactory(slug="federal_it")
    data = b'{"document_id": "d1", "title": "T", "domain": "federal_it", "authority": 0.5, "blocks": [{"block_id": "b1", "versions": [{"text": "x"}]}]}\n'
    upload = io.BytesIO(data)
    upload.name = "m.jsonl"
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("corpus:import"), {"file": upload})
    page = client.get(response.url).content.decode()
    assert "Imported" in page and "documents_created" in page
    assert Document.objects.filter(document_id="d1").exists()


def test_a_bad_upload_shows_every_error_and_stores_nothing(
    client_for, admin_user, django_capture_on_commit_callbacks
):
    upload = io.BytesIO(
        b'{"document_id": "d1", "title": "T", "domain": "nope", "authority": 0.5, "blocks": [{"block_id": "b1", "versions": [{"text": "x"}]}]}\n{oops\n'
    )
    upload.name = "bad.jsonl"
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("corpus:import"), {"file": upload})
    response = client.get(response.url)
    html = response.content.decode()
    assert response.status_code == 422
    assert "nothing was imported" in html and "line 2: not valid JSON" in html
    assert Document.objects.count() == 0


def test_a_non_utf8_upload_is_refused_at_once_with_422(client_for, admin_user):
    upload = io.BytesIO(b"\xff\xfe\x00bad")
    upload.name = "bad.jsonl"
    response = client_for(admin_user).post(reverse("corpus:import"), {"file": upload})
    assert response.status_code == 422
    assert "line 1: not valid UTF-8 text" in response.content.decode()


def test_document_list_pages_by_keyset(client_for, annotator):
    make_documents(60, DomainFactory(slug="keyset"))
    c = client_for(annotator)
    seen, cursor = [], None
    for _ in range(3):
        response = c.get(reverse("corpus:documents"), {"after": cursor} if cursor else {})
        seen += [d.document_id for d in response.context["page"]]
        cursor = response.context["page"].next_cursor
    assert cursor is None and len(seen) == len(set(seen)) == 60 and seen == sorted(seen)
    assert 'rel="first"' in response.content.decode()
    assert c.get(reverse("corpus:documents"), {"after": "not-a-cursor"}).status_code == 404
