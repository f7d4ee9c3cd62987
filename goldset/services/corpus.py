"""Importing the corpus: JSONL document manifests and Unrag dataset JSON v1 files.

The file is read as a stream through the import toolkit (:mod:`goldset.imports`): the whole file
is checked first, then written in one transaction with bulk inserts (see
:func:`goldset.imports.batches.run_import`). A bad file raises
:class:`~goldset.exceptions.ImportRejected` listing every problem as ``line N: field: reason``
(JSONL) or ``documents[i].field: reason`` (Unrag JSON), and stores nothing.

Versions are append-only. For each block version in the file:

* with an explicit ``version``: an existing version with the same text is a no-op, with another
  text an error; a new version must be the next number;
* without ``version``: the same text as the block's latest version is a no-op, a changed text
  becomes the next version.
"""

import datetime as dt
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from goldset.imports import bulk
from goldset.imports.batches import run_import
from goldset.imports.errors import Problems
from goldset.imports.fields import At, column_length
from goldset.imports.reader import (
    ByteSource,
    as_source,
    iter_json_array_items,
    iter_json_lines,
    sniff_single_document,
)
from goldset.models import Block, BlockVersion, Document, Domain
from goldset.services.resolution import mark_superseded_pins
from workbench.services.audit import record_event

DEFAULT_UNRAG_AUTHORITY = Decimal("0.5")
ID_LENGTH = column_length(Document, "document_id")
TITLE_LENGTH = column_length(Document, "title")
SECTION_LENGTH = column_length(BlockVersion, "section")


@dataclass
class VersionSpec:
    where: str
    text: str
    version: int | None = None
    section: str = ""
    page_start: int | None = None
    page_end: int | None = None
    effective_from: dt.date | None = None
    effective_to: dt.date | None = None
    line: int | None = None
    path: str = ""

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)


@dataclass
class BlockSpec:
    where: str
    block_id: str
    position: int
    versions: list[VersionSpec] = field(default_factory=list)
    line: int | None = None
    path: str = ""


@dataclass
class DocumentSpec:
    where: str
    document_id: str
    title: str
    domain: str
    authority: Decimal
    metadata: dict
    blocks: list[BlockSpec] = field(default_factory=list)
    line: int | None = None
    path: str = ""
    # Unrag: a later entry of a document met earlier in the file only adds blocks to it.
    blocks_only: bool = False


@dataclass
class ImportSummary:
    format: str
    documents_created: int = 0
    documents_updated: int = 0
    blocks_created: int = 0
    versions_created: int = 0
    versions_unchanged: int = 0
    superseding_version_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "format": self.format,
            "documents_created": self.documents_created,
            "documents_updated": self.documents_updated,
            "blocks_created": self.blocks_created,
            "versions_created": self.versions_created,
            "versions_unchanged": self.versions_unchanged,
            "superseding_versions": len(self.superseding_version_ids),
        }


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- parsing (no database)


def _where(at: At) -> str:
    return " ".join(filter(None, [f"line {at.line}" if at.line else "", at.prefix])) or "file"


def _pages(obj: dict, at: At) -> tuple[int | None, int | None]:
    value = obj.get("page_range")
    if value in (None, []):
        return None, None
    if (
        isinstance(value, list)
        and 1 <= len(value) <= 2
        and all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 2**31 for p in value)
    ):
        start, end = value[0], value[-1]
        if end < start:
            at.add("page_range", f"end page {end} is before start page {start}")
        return start, end
    at.add("page_range", f"got {value!r}", "[start, end] page numbers")
    return None, None


def _version_spec(obj, at: At, *, text_field: str = "text") -> VersionSpec | None:
    if not isinstance(obj, dict):
        at.problems.add(at.line, at.prefix, "expected an object")
        return None
    version = at.whole(obj.get("version"), "version", minimum=1)
    page_start, page_end = _pages(obj, at)
    spec = VersionSpec(
        where=_where(at),
        text=at.text(obj, text_field),
        version=version,
        section=at.text(obj, "section", required=False, max_length=SECTION_LENGTH),
        page_start=page_start,
        page_end=page_end,
        effective_from=at.date(obj, "effective_from"),
        effective_to=at.date(obj, "effective_to"),
        line=at.line,
        path=at.prefix,
    )
    if spec.effective_from and spec.effective_to and spec.effective_to < spec.effective_from:
        at.add(
            "effective_to", f"{spec.effective_to} is before effective_from {spec.effective_from}"
        )
    return spec


def _authority(value, at: At, key: str) -> Decimal:
    number = at.number(value, key, minimum=0, maximum=1, places="0.001")
    return number if number is not None else Decimal(0)


def manifest_document(lineno: int, obj: dict, problems: Problems) -> DocumentSpec:
    """One JSONL manifest line as a document spec (problems recorded, never raised)."""
    at = At(problems, lineno)
    if "authority" not in obj:
        at.add("authority", "missing", "a number between 0 and 1")
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        at.add("metadata", f"got {type(metadata).__name__}", "an object")
    doc = DocumentSpec(
        where=f"line {lineno}",
        document_id=at.identifier(obj, "document_id", max_length=ID_LENGTH),
        title=at.text(obj, "title", max_length=TITLE_LENGTH),
        domain=at.text(obj, "domain"),
        authority=_authority(obj.get("authority"), at, "authority")
        if "authority" in obj
        else Decimal(0),
        metadata=metadata if isinstance(metadata, dict) else {},
        line=lineno,
    )
    blocks = obj.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        at.add("blocks", "missing", "a non-empty list of blocks")
        blocks = []
    for b_index, block in enumerate(blocks):
        b_at = at / f"blocks[{b_index}]"
        if not isinstance(block, dict):
            problems.add(lineno, b_at.prefix, "expected an object")
            continue
        position = block.get("position", b_index)
        spec = BlockSpec(
            where=_where(b_at),
            block_id=b_at.identifier(block, "block_id", max_length=ID_LENGTH),
            position=position if isinstance(position, int) and 0 <= position < 2**31 else b_index,
            line=lineno,
            path=b_at.prefix,
        )
        versions = block.get("versions")
        if not isinstance(versions, list) or not versions:
            b_at.add("versions", "missing", "a non-empty list of versions")
            versions = []
        for v_index, version in enumerate(versions):
            v = _version_spec(version, b_at / f"versions[{v_index}]")
            if v is not None:
                spec.versions.append(v)
        doc.blocks.append(spec)
    return doc


def unrag_document(
    index: int, raw, problems: Problems, *, default_domain: str | None, seen: set[str]
) -> DocumentSpec | None:
    """One entry of an Unrag file's ``documents`` as a document spec. ``seen`` holds the
    document ids met so far: a later entry naming the same ``metadata.document_id`` adds a
    block to that document."""
    at = At(problems, None, f"documents[{index}]")
    if not isinstance(raw, dict):
        problems.add(None, at.prefix, "expected an object")
        return None
    source_id = at.identifier(raw, "sourceId", max_length=ID_LENGTH)
    if "content" not in raw and "loaderRef" in raw:
        at.add("content", "missing: loaderRef documents cannot be imported, inline the content")
        return None
    meta = raw.get("metadata") or {}
    if not isinstance(meta, dict):
        at.add("metadata", "expected an object")
        meta = {}
    m_at = at / "metadata"
    domain = meta.get("domain") or default_domain or ""
    if not domain:
        m_at.add("domain", "missing (set it per document or choose a domain for the file)")
    elif not isinstance(domain, str):
        m_at.add("domain", f"got {domain!r}", "a domain slug")
        domain = ""
    version = _version_spec(
        {
            "content": raw.get("content"),
            "section": meta.get("section"),
            "page_range": meta.get("page_range"),
            "effective_from": meta.get("effective_from"),
            "effective_to": meta.get("effective_to"),
        },
        at,
        text_field="content",
    )
    authority = (
        _authority(meta["authority"], m_at, "authority")
        if "authority" in meta
        else DEFAULT_UNRAG_AUTHORITY
    )
    block_id = m_at.identifier(meta, "block_id", max_length=ID_LENGTH, required=False) or source_id
    document_id = (
        m_at.identifier(meta, "document_id", max_length=ID_LENGTH, required=False) or source_id
    )
    title = m_at.text(meta, "title", required=False, max_length=TITLE_LENGTH) or source_id
    kept_meta = {
        k: v
        for k, v in meta.items()
        if k not in {"domain", "authority", "block_id", "document_id", "title"}
    }
    kept_meta["sourceId"] = source_id
    blocks_only = bool(meta.get("document_id")) and document_id in seen
    seen.add(document_id)
    return DocumentSpec(
        where=at.prefix,
        document_id=document_id,
        title=title[:TITLE_LENGTH],
        domain=domain,
        authority=authority,
        metadata=kept_meta,
        blocks=[
            BlockSpec(
                where=at.prefix,
                block_id=block_id,
                position=0,
                versions=[version] if version else [],
                path=at.prefix,
            )
        ],
        blocks_only=blocks_only,
        path=at.prefix,
    )


def detect_format(source: ByteSource) -> str:
    """``unrag`` for one Unrag dataset JSON document, else ``jsonl``."""
    return (
        "unrag" if sniff_single_document(source, key="documents", unless="document_id") else "jsonl"
    )


class _CorpusFile:
    """Reads a corpus file as document specs: one per manifest line or per Unrag entry."""

    def __init__(self, *, default_domain: str | None):
        self.default_domain = default_domain
        self.fmt = "jsonl"
        self.seen_unrag: set[str] = set()

    def records(self, source: ByteSource, problems: Problems, progress=None):
        self.fmt = detect_format(source)
        if self.fmt == "jsonl":
            for lineno, obj in iter_json_lines(
                source, problems, what="document", progress=progress
            ):
                yield manifest_document(lineno, obj, problems)
            return
        self.seen_unrag = set()
        header: dict = {}
        count = 0
        for index, raw in iter_json_array_items(
            source, problems, array="documents", header=header, progress=progress
        ):
            count += 1
            spec = unrag_document(
                index,
                raw,
                problems,
                default_domain=self.default_domain,
                seen=self.seen_unrag,
            )
            if spec is not None:
                yield spec
        if header.get("version") != "1":
            problems.add(
                None,
                "version",
                f'expected "1" (Unrag dataset JSON v1), got {header.get("version")!r}',
            )
        if not count and not problems:
            problems.add(None, "documents", "missing", "a non-empty list of documents")


def parse_corpus_file(
    source, *, default_domain: str | None = None
) -> tuple[str, list[DocumentSpec]]:
    """Detect the format and parse the whole file into specs (no database). Raises
    ImportRejected with every structural problem. For small files: it holds every spec."""
    source = as_source(source)
    problems = Problems()
    reader = _CorpusFile(default_domain=default_domain)
    documents = list(reader.records(source, problems))
    problems.raise_if_any(source.name)
    return reader.fmt, documents


# ---------------------------------------------------------------- checking and writing


@dataclass
class _Plan:
    new_documents: list[Document]
    changed_documents: list[Document]
    new_blocks: list[tuple[str, Block]]  # (document_id, block)
    versions: list[tuple[str, VersionSpec, int]]  # (block_id, spec, number)


class CorpusImporter:
    """Documents, blocks and versions of one project: existing ones are looked up by
    (project, id), new ones are created in the project, and the domains are the project's."""

    def __init__(self, *, project, actor, default_domain: str | None, source_name: str):
        self.project = project
        self.actor, self.source_name = actor, source_name
        self.file = _CorpusFile(default_domain=default_domain)
        self.domains = {d.slug: d for d in Domain.objects.filter(project=project)}

    def begin(self, *, writing: bool) -> None:
        self.writing = writing
        self.seen_docs: dict[str, str] = {}
        self.seen_blocks: dict[str, str] = {}
        self.summary = ImportSummary(format="jsonl")

    def records(self, source, problems, progress):
        return self.file.records(source, problems, progress)

    def check(self, documents: list[DocumentSpec], problems: Problems) -> _Plan:
        """Check one batch against the database and the file so far; the plan writes it."""
        self.summary.format = self.file.fmt
        doc_ids = {doc.document_id for doc in documents}
        block_ids = [b.block_id for doc in documents for b in doc.blocks]
        project = self.project
        existing_docs = {
            d.document_id: d
            for d in Document.objects.filter(
                project=project, document_id__in=doc_ids
            ).select_related("domain")
        }
        existing_blocks = {
            b.block_id: b
            for b in Block.objects.filter(project=project, block_id__in=block_ids).select_related(
                "document"
            )
        }
        stored: dict[str, dict[int, str]] = defaultdict(dict)
        for block_id, version, sha in BlockVersion.objects.filter(
            block__project=project, block__block_id__in=block_ids
        ).values_list("block__block_id", "version", "sha256"):
            stored[block_id][version] = sha
        plan = _Plan([], [], [], [])
        for doc in documents:
            self._check_document(doc, existing_docs, problems, plan)
            for block in doc.blocks:
                self._check_block(doc, block, existing_blocks, stored, problems, plan)
        return plan

    def _check_document(self, doc, existing_docs, problems, plan) -> None:
        domain = self.domains.get(doc.domain)
        if doc.domain and domain is None:
            known = ", ".join(sorted(self.domains)) or "none"
            problems.add(
                doc.line, _field(doc, "domain"), f"unknown domain {doc.domain!r}", f"one of {known}"
            )
        if doc.blocks_only:
            return
        if doc.document_id in self.seen_docs:
            problems.add(
                doc.line,
                _field(doc, "document_id"),
                f"{doc.document_id!r} also appears at {self.seen_docs[doc.document_id]}",
            )
        self.seen_docs[doc.document_id] = doc.where
        current = existing_docs.get(doc.document_id)
        if current is not None and domain is not None and current.domain_id != domain.pk:
            problems.add(
                doc.line,
                _field(doc, "domain"),
                f"document {doc.document_id!r} is in domain {current.domain.slug!r}; "
                "import cannot move it",
            )
        if domain is None or not doc.document_id:
            return
        if current is None:
            plan.new_documents.append(
                Document(
                    project=self.project,
                    document_id=doc.document_id,
                    title=doc.title,
                    domain=domain,
                    authority=doc.authority,
                    metadata=doc.metadata,
                )
            )
        elif (current.title, current.authority, current.metadata) != (
            doc.title,
            doc.authority,
            doc.metadata,
        ):
            current.title, current.authority, current.metadata = (
                doc.title,
                doc.authority,
                doc.metadata,
            )
            plan.changed_documents.append(current)

    def _check_block(self, doc, block, existing_blocks, stored, problems, plan) -> None:
        if block.block_id in self.seen_blocks:
            problems.add(
                block.line,
                _field(block, "block_id"),
                f"{block.block_id!r} also appears at {self.seen_blocks[block.block_id]}",
            )
            return
        self.seen_blocks[block.block_id] = block.where
        owner = existing_blocks.get(block.block_id)
        if owner is not None and owner.document.document_id != doc.document_id:
            problems.add(
                block.line,
                _field(block, "block_id"),
                f"{block.block_id!r} belongs to document {owner.document.document_id!r}",
            )
            return
        if owner is None and block.block_id:
            plan.new_blocks.append(
                (
                    doc.document_id,
                    Block(project=self.project, block_id=block.block_id, position=block.position),
                )
            )
        versions = dict(stored.get(block.block_id, {}))
        in_file: dict[int, str] = {}
        for v in block.versions:
            latest = max(versions) if versions else 0
            if v.version is not None:
                if v.version in in_file:
                    problems.add(
                        v.line,
                        _field(v, "version"),
                        f"duplicate block version: {block.block_id} v{v.version} also at "
                        f"{in_file[v.version]}",
                    )
                    continue
                in_file[v.version] = v.where
                if v.version in versions:
                    if versions[v.version] == v.sha256:
                        self.summary.versions_unchanged += 1
                    else:
                        problems.add(
                            v.line,
                            _field(v, "text"),
                            f"{block.block_id} v{v.version} already exists with a different "
                            "text; versions are append-only (omit 'version' to add the next one)",
                        )
                    continue
                if v.version != latest + 1:
                    problems.add(
                        v.line,
                        _field(v, "version"),
                        f"expected version {latest + 1} for {block.block_id} (versions are "
                        f"consecutive), got {v.version}",
                    )
                    continue
                number = v.version
            else:
                if versions and versions[latest] == v.sha256:
                    self.summary.versions_unchanged += 1
                    continue
                number = latest + 1
            versions[number] = v.sha256
            plan.versions.append((block.block_id, v, number))

    def write(self, plan: _Plan) -> None:
        summary = self.summary
        bulk.insert(Document, plan.new_documents)
        summary.documents_created += len(plan.new_documents)
        Document.objects.bulk_update(plan.changed_documents, ["title", "authority", "metadata"])
        summary.documents_updated += len(plan.changed_documents)
        doc_ids = {document_id for document_id, _ in plan.new_blocks}
        documents = dict(
            Document.objects.filter(project=self.project, document_id__in=doc_ids).values_list(
                "document_id", "pk"
            )
        )
        for document_id, block in plan.new_blocks:
            block.document_id = documents[document_id]
        bulk.insert(Block, [block for _, block in plan.new_blocks])
        summary.blocks_created += len(plan.new_blocks)
        blocks = dict(
            Block.objects.filter(
                project=self.project, block_id__in={block_id for block_id, _, _ in plan.versions}
            ).values_list("block_id", "pk")
        )
        created = bulk.insert(
            BlockVersion,
            [
                BlockVersion(
                    block_id=blocks[block_id],
                    version=number,
                    text=v.text,
                    section=v.section,
                    page_start=v.page_start,
                    page_end=v.page_end,
                    effective_from=v.effective_from,
                    effective_to=v.effective_to,
                    sha256=v.sha256,
                )
                for block_id, v, number in plan.versions
            ],
            ids=True,
        )
        summary.versions_created += len(created)
        superseding = [v.pk for v in created if v.version > 1]
        summary.superseding_version_ids.extend(superseding)
        if superseding:
            mark_superseded_pins(superseding_version_ids=superseding, actor=self.actor)

    def finish(self, *, source) -> ImportSummary:
        record_event(
            actor=self.actor,
            verb="corpus_imported",
            object_type="corpus",
            object_id=self.source_name[:128],
            project=self.project,
            detail={**self.summary.as_dict(), "file_sha256": getattr(source, "sha256", "")},
        )
        return self.summary


def _field(spec, key: str) -> str:
    return f"{spec.path}.{key}" if spec.path else key


def import_corpus(
    *,
    project,
    source,
    actor,
    source_name: str = "",
    default_domain: str | None = None,
    progress=None,
    on_written=None,
) -> ImportSummary:
    """Import a manifest or Unrag file into ``project`` all or nothing, streaming (see the
    module docstring). Documents and blocks are the project's: an id another project uses is
    another document there.

    ``source`` is bytes, text, a Path or a stored upload. Raises ImportRejected (nothing
    stored). Re-importing the same file is a no-op. Returns counts and the ids of versions that
    supersede an older version of the same block (their pinned triples are marked for
    re-review in the same transaction)."""
    source = as_source(source, name=source_name)
    importer = CorpusImporter(
        project=project,
        actor=actor,
        default_domain=default_domain,
        source_name=source_name or source.name,
    )
    return run_import(importer=importer, source=source, progress=progress, on_written=on_written)
