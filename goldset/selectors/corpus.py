"""Reads: every non-trivial query, with its joins applied. ``get_*_for`` fetch and authorize."""

import difflib
import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchHeadline
from django.db import connection
from django.db.models import Count, Max, Prefetch, Q, Subquery
from django.shortcuts import get_object_or_404
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from goldset.models import Block, BlockVersion, Document, Domain
from goldset.selectors.curation import newest_version_of
from goldset.selectors.keyset import keyset_page
from goldset.selectors.text_search import (
    SEARCH_CONFIG,
    in_project,
    search_query,
    text_matches,
)


def list_domains(*, project):
    """The project's domains, by slug."""
    return Domain.objects.filter(project=project).order_by("slug")


def list_documents(*, project, domain: str = "", query: str = ""):
    """The project's documents (optionally of one domain, or whose title or id contains
    ``query``), each with ``block_count``, by id."""
    qs = (
        Document.objects.filter(project=project)
        .select_related("domain")
        .annotate(block_count=Count("blocks"))
    )
    if domain:
        qs = qs.filter(domain__slug=domain)
    if query:
        qs = qs.filter(Q(title__icontains=query) | Q(document_id__icontains=query))
    return qs.order_by("document_id")


def documents_page(*, project, domain: str = "", query: str = "", cursor: str | None, size: int):
    """One keyset page of :func:`list_documents` in ``document_id`` order, each document with
    ``block_count`` counted for that page's documents only (two queries at any corpus size)."""
    qs = Document.objects.filter(project=project).select_related("domain")
    if domain:
        qs = qs.filter(domain__slug=domain)
    if query:
        qs = qs.filter(Q(title__icontains=query) | Q(document_id__icontains=query))
    page = keyset_page(qs, fields=("document_id",), cursor=cursor, size=size)
    counts = dict(
        Block.objects.filter(document__in=[d.pk for d in page.items])
        .order_by()
        .values_list("document")
        .annotate(n=Count("id"))
    )
    for document in page.items:
        document.block_count = counts.get(document.pk, 0)
    return page


def get_document(*, project, document_id: str) -> Document:
    """A document of ``project`` by its id; Http404 for another project's or an unknown one."""
    return get_object_or_404(
        Document.objects.select_related("domain"), project=project, document_id=document_id
    )


def list_blocks_of(*, document: Document):
    """A document's blocks, each with its latest version prefetched (as ``latest``), a count,
    and ``changed_at`` (when its newest version was created)."""
    return (
        Block.objects.filter(document=document)
        .annotate(
            version_count=Count("versions"),
            latest_version=Subquery(newest_version_of("pk")),
            changed_at=Max("versions__created_at"),
        )
        .order_by("position", "block_id")
    )


def latest_versions_for(blocks) -> dict[int, BlockVersion]:
    wanted = Q()
    for block in blocks:
        wanted |= Q(block_id=block.pk, version=block.latest_version)
    if not wanted:
        return {}
    return {v.block_id: v for v in BlockVersion.objects.filter(wanted)}


def get_block(*, project, block_id: str) -> Block:
    """A block of ``project`` with its document and versions; Http404 for another project's."""
    return get_object_or_404(
        Block.objects.select_related("document__domain").prefetch_related(
            Prefetch("versions", queryset=BlockVersion.objects.order_by("version"))
        ),
        project=project,
        block_id=block_id,
    )


def list_versions_of(*, project, block_id: str):
    """A block's versions, oldest first; Http404 for an unknown block or another project's."""
    block = get_object_or_404(Block.objects.only("pk"), project=project, block_id=block_id)
    return BlockVersion.objects.filter(block=block).select_related("block__document")


def get_block_version(*, project, block_id: str, version: int) -> BlockVersion:
    """One version of a block of ``project``; Http404 for another project's."""
    return get_object_or_404(
        BlockVersion.objects.select_related("block__document"),
        block__project=project,
        block__block_id=block_id,
        version=version,
    )


@dataclass(frozen=True)
class VersionDiff:
    old: BlockVersion
    new: BlockVersion
    html: SafeString
    changed: bool


def diff_versions(old: BlockVersion, new: BlockVersion) -> VersionDiff:
    """A word-level diff of two versions as escaped HTML with ``<del>``/``<ins>`` marks."""
    a, b = old.text.split(), new.text.split()
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            parts.append(f"<del>{escape(' '.join(a[i1:i2]))}</del>")
        if j2 > j1:
            parts.append(f"<ins>{escape(' '.join(b[j1:j2]))}</ins>")
    return VersionDiff(old=old, new=new, html=mark_safe(" ".join(parts)), changed=a != b)


# ---------------------------------------------------------------- full-text search

# ts_headline marks matches with these (never in corpus text); the headline is escaped, then
# they become <mark> tags, so block text can never inject markup.
_START, _STOP = "\x02", "\x03"


@dataclass(frozen=True)
class SearchHit:
    version: BlockVersion
    headline: SafeString
    rank: float | None


def _marked(text: str) -> SafeString:
    return mark_safe(escape(text).replace(_START, "<mark>").replace(_STOP, "</mark>"))


def search_blocks(*, project, query: str):
    """Block versions matching ``query``: on PostgreSQL full-text search (words stemmed in
    English, ``websearch`` syntax: "quoted phrases", or, -not) on a GIN index, ranked by
    ``ts_rank``; elsewhere (SQLite) every word as a case-insensitive substring, by id. A
    queryset to paginate; :func:`search_hits` highlights one page. Only ``project``'s blocks."""
    query = query.strip()
    if not query:
        return BlockVersion.objects.none()
    versions = text_matches(
        in_project(BlockVersion.objects.all(), project=project).select_related(
            "block__document__domain"
        ),
        query=query,
    )
    if connection.vendor == "postgresql":
        return versions.order_by("-rank", "pk")
    return versions.order_by("pk")


def search_hits(versions, *, query: str) -> list[SearchHit]:
    """One page of :func:`search_blocks` with highlighted, escaped excerpts (one query on
    PostgreSQL: ``ts_headline`` for the page's rows only)."""
    versions = list(versions)
    if not versions:
        return []
    if connection.vendor == "postgresql":
        search = search_query(query)
        headlines = dict(
            BlockVersion.objects.filter(pk__in=[v.pk for v in versions])
            .annotate(
                headline=SearchHeadline(
                    "text",
                    search,
                    config=SEARCH_CONFIG,
                    start_sel=_START,
                    stop_sel=_STOP,
                    max_fragments=2,
                    max_words=30,
                    min_words=12,
                    fragment_delimiter=" … ",
                )
            )
            .values_list("pk", "headline")
        )
        return [
            SearchHit(v, _marked(headlines.get(v.pk, "")), getattr(v, "rank", None))
            for v in versions
        ]
    words = [re.escape(w.strip('"')) for w in query.split() if w.strip('"')]
    pattern = re.compile("(" + "|".join(words) + ")", re.IGNORECASE) if words else None
    hits = []
    for v in versions:
        text = v.text
        first = pattern.search(text) if pattern else None
        start = max(0, first.start() - 80) if first else 0
        excerpt = ("… " if start else "") + text[start : start + 240]
        if pattern:
            excerpt = pattern.sub(lambda m: f"{_START}{m.group(0)}{_STOP}", excerpt)
        hits.append(SearchHit(v, _marked(excerpt), None))
    return hits
