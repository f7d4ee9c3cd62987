"""The triple editor's block picker (write, revise, split): words of the query match wherever
they stand in the text and in any case (full-text search on PostgreSQL, every word as a
substring on SQLite); block and document ids still match; the page costs the same queries
whatever the corpus size; every role reaches it."""

import pytest
from django.db import connection
from django.urls import reverse

from goldset.selectors.curation import search_block_versions
from tests.factories import BlockVersionFactory, default_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocks():
    return {
        "apart": BlockVersionFactory(
            text="Encrypted backups are taken every 24 hours and retained for 35 days."
        ),
        "other": BlockVersionFactory(text="Access reviews happen monthly."),
        "half": BlockVersionFactory(text="Backups are encrypted with AES-256."),
    }


def _found(query):
    return {v.pk for v in search_block_versions(project=default_project(), query=query)}


def test_words_apart_in_the_text_find_the_block(blocks):
    assert _found("backups retained") == {blocks["apart"].pk}
    assert _found("RETAINED Backups") == {blocks["apart"].pk}  # any order, any case
    assert _found("backups") == {blocks["apart"].pk, blocks["half"].pk}
    assert _found("backups monthly") == set()  # every word must appear


def test_postgres_lists_the_best_text_match_first(blocks):
    dense = BlockVersionFactory(text="Backups retained. Backups are retained; backups retained.")
    found = [
        v.pk for v in search_block_versions(project=default_project(), query="backups retained")
    ]
    assert set(found) == {blocks["apart"].pk, dense.pk}
    if connection.vendor == "postgresql":
        assert found == [dense.pk, blocks["apart"].pk]


def test_block_and_document_ids_still_match(blocks):
    v = blocks["other"]
    assert v.pk in _found(v.block.block_id)
    assert v.pk in _found(v.block.document.document_id)


@pytest.mark.parametrize(
    "target", ["id_block_version", "id_block_version_0", "auto"], ids=["write", "revise", "split"]
)
def test_the_picker_fragment_lists_words_apart(client_for, annotator, blocks, target):
    response = client_for(annotator).get(
        reverse("curation:blocks"),
        {"q": "backups retained", "target": target},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="block-results",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="block-results">')
    apart = blocks["apart"]
    assert f'data-fill-value="{apart.block.block_id}@1"' in html
    assert f'data-fill-target="{target}"' in html
    assert blocks["half"].block.block_id not in html and blocks["other"].block.block_id not in html


def test_the_picker_answers_every_role(client, client_for, annotator, lead, admin_user, blocks):
    url = reverse("curation:blocks") + "?q=backups+retained"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    for user in (annotator, lead, admin_user):
        body = client_for(user).get(url).content.decode()
        assert blocks["apart"].block.block_id in body


def test_postgres_picker_uses_the_gin_index(blocks):
    if connection.vendor != "postgresql":
        assert _found("backups retained")
        return
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = search_block_versions(project=default_project(), query="backups retained").explain()
    assert "blockversion_text_fts" in plan


@pytest.mark.parametrize("n", [2, 30])
def test_the_picker_costs_the_same_queries_as_the_corpus_grows(
    client_for, annotator, django_assert_max_num_queries, n
):
    for i in range(n):
        BlockVersionFactory(text=f"Backups of system {i} are kept and later retained.")
    c = client_for(annotator)
    with django_assert_max_num_queries(4):  # session, user, roles, the results
        body = c.get(reverse("curation:blocks"), {"q": "retained backups"}).content.decode()
    assert body.count("data-fill-value=") == min(n, 20)
