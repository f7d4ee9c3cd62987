"""Which block versions a query's words find: the one word rule of the corpus search
(:mod:`goldset.selectors.corpus`) and the triple editor's block picker
(:mod:`goldset.selectors.curation`). A module of its own, importing neither, so both can use it."""

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import IntegerField, OuterRef, Q, Subquery, Value

from goldset.models import Block

SEARCH_CONFIG = "english"


def search_vector():
    """The indexed expression (migration ``0021``: a GIN index on exactly this tsvector)."""
    return SearchVector("text", config=SEARCH_CONFIG)


def search_query(query: str) -> SearchQuery:
    """``query`` as PostgreSQL reads it: English stems, ``websearch`` syntax ("quoted
    phrases", or, -not)."""
    return SearchQuery(query, config=SEARCH_CONFIG, search_type="websearch")


def text_rank(query: str):
    """How well a version's text matches ``query``, as an expression to annotate with:
    ``ts_rank`` on PostgreSQL, 0 on SQLite (which does not rank)."""
    if connection.vendor == "postgresql":
        return SearchRank(search_vector(), search_query(query))
    return Value(0.0)


def text_matches(versions, *, query: str):
    """``versions`` narrowed to those whose text has every word of ``query``, wherever they
    stand and in any case. On PostgreSQL full-text search on the GIN index, each row annotated
    with its ``rank``; on SQLite each word as a case-insensitive substring (``rank`` 0). A query
    of stop words alone matches nothing on PostgreSQL."""
    if connection.vendor == "postgresql":
        return (
            versions.annotate(document_vector=search_vector())
            .filter(document_vector=search_query(query))
            .annotate(rank=text_rank(query))
        )
    words = Q()
    for word in query.split():
        if word.strip('"'):
            words &= Q(text__icontains=word.strip('"'))
    if not words:
        return versions.none()
    return versions.filter(words).annotate(rank=text_rank(query))


def in_project(versions, *, project):
    """``versions`` narrowed to the blocks of ``project``, tested per matching row (a
    correlated look-up of the version's block by primary key) rather than joined: the planner
    then finds the matches on the GIN index first, whatever the number of the project's
    blocks, instead of walking every block of the project and filtering their text."""
    owner = Block.objects.filter(pk=OuterRef("block_id")).values("project_id")[:1]
    return versions.annotate(block_project=Subquery(owner, output_field=IntegerField())).filter(
        block_project=project.pk
    )
