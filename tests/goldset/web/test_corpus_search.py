"""Corpus search: full-text on PostgreSQL (stemmed words, ranked by ts_rank, highlighted by
ts_headline and escaped, paginated, on a GIN index), a case-insensitive fallback on SQLite."""

import pytest
from django.db import connection
from django.urls import reverse

from goldset.selectors.corpus import search_blocks
from tests.factories import BlockVersionFactory, default_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocks():
    return [
        BlockVersionFactory(
            text="Encrypted backups are taken every 24 hours and retained for 35 days. <b>x</b>"
        ),
        BlockVersionFactory(text="Backups are retained. Backups retained, backups retained."),
        BlockVersionFactory(text="Access reviews happen monthly."),
    ]


def test_words_match_apart_ranked_highlighted_and_escaped(client_for, annotator, blocks):
    response = client_for(annotator).get(reverse("corpus:search"), {"q": "backups retained"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "2 block versions match" in body and "Access reviews" not in body
    assert "<mark>" in body and "<b>x</b>" not in body  # block text is escaped
    if connection.vendor == "postgresql":
        assert "<mark>backups</mark> are taken" in body.replace("Backups", "backups")
        first = body.index(blocks[1].block.block_id)
        assert first < body.index(blocks[0].block.block_id)  # the denser match ranks first
    empty = client_for(annotator).get(reverse("corpus:search"), {"q": "nothing-like-this"})
    assert "No block text matches" in empty.content.decode()


def test_the_search_page_answers_each_role(client, client_for, annotator, lead, admin_user):
    url = reverse("corpus:search") + "?q=backups"
    assert client.get(url).status_code == 302
    for user in (annotator, lead, admin_user):
        assert client_for(user).get(url).status_code == 200


def test_postgres_uses_the_gin_index(blocks):
    if connection.vendor != "postgresql":
        assert list(
            search_blocks(project=default_project(), query="backups retained")
        )  # the SQLite fallback finds it
        return
    # with plain scans of the table and its btree indexes priced out, the only cheap way to find
    # the matches is a bitmap scan of the GIN index, whatever statistics earlier tests left
    # behind (a full scan of the primary key looked cheaper on a few analysed rows)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
    plan = search_blocks(project=default_project(), query="backups retained").explain()
    assert "blockversion_text_fts" in plan


@pytest.mark.parametrize("n", [3, 40])
def test_the_search_page_costs_the_same_queries_as_the_corpus_grows(
    client_for, annotator, django_assert_max_num_queries, n
):
    for i in range(n):
        BlockVersionFactory(text=f"Backups of system {i} are retained for {i} days.")
    c = client_for(annotator)
    with django_assert_max_num_queries(6):  # session, user, roles, count, page, headlines
        body = c.get(reverse("corpus:search"), {"q": "backups retained"}).content.decode()
    assert body.count('<p class="snippet">') == min(n, 25)
    if n > 25:
        assert "Page 1 of 2" in body
