"""Importing the corpus: JSONL document manifests and Unrag dataset JSON v1 files.

The whole file is parsed and checked before anything is written; the write is one transaction.
A bad file raises :class:`~goldset.exceptions.ImportRejected` listing every problem as
``line N: field: reason`` (JSONL) or ``documents[i].field: reason`` (Unrag JSON), and stores nothing.

Versions are append-only. For each block version in the file:

* with an explicit ``version``: an existing version with the same text is a no-op, with another
  text an error; a new version must be the next number;
* without ``version``: the same text as the block's latest version is a no-op, a changed text
  becomes the next version.
"""

import datetime as dt
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db import transaction

from goldset.exceptions import ImportRejected
from goldset.models import Block, BlockVersion, Document, Domain
from goldset.services.resolution import mark_superseded_pins
from workbench.services.audit import record_event

MAX_REPORTED_ERRORS = 50
DEFAULT_UNRAG_AUTHORITY = Decimal("0.5")


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

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)


@dataclass
class BlockSpec:
    where: str
    block_id: str
    position: int
    versions: list[VersionSpec] = field(default_factory=list)


@dataclass
class DocumentSpec:
    where: str
    document_id: str
    title: str
    domain: str
    authority: Decimal
    metadata: dict
    blocks: list[BlockSpec] = field(default_factory=list)


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


class _Problems:
    def __init__(self):
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def __bool__(self):
        return bool(self.items)


# ---------------------------------------------------------------- parsing (no database)


def _text(obj: dict, key: str, where: str, problems: _Problems, *, required=True) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            problems.add(f"{where}{key}", "missing (expected a non-empty string)")
        return ""
    if not isinstance(value, str):
        problems.add(f"{where}{key}", f"expected a string, got {type(value).__name__}")
        return ""
    return value


def _date(obj: dict, key: str, where: str, problems: _Problems) -> dt.date | None:
    value = obj.get(key)
    if value in (None, ""):
        return None
    try:
        return dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        problems.add(f"{where}{key}", f"expected a date YYYY-MM-DD, got {value!r}")
        return None


def _pages(obj: dict, where: str, problems: _Problems) -> tuple[int | None, int | None]:
    value = obj.get("page_range")
    if value in (None, []):
        return None, None
    if (
        isinstance(value, list)
        and 1 <= len(value) <= 2
        and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in value)
    ):
        start, end = value[0], value[-1]
        if end < start:
            problems.add(f"{where}page_range", f"end page {end} is before start page {start}")
        return start, end
    problems.add(f"{where}page_range", f"expected [start, end] page numbers, got {value!r}")
    return None, None


def _version_spec(
    obj, where: str, problems: _Problems, *, text_field: str = "text"
) -> VersionSpec | None:
    if not isinstance(obj, dict):
        problems.add(where.rstrip("."), "expected an object")
        return None
    text = _text(obj, text_field, where, problems)
    version = obj.get("version")
    if version is not None and (
        not isinstance(version, int) or isinstance(version, bool) or version < 1
    ):
        problems.add(f"{where}version", f"expected a whole number ≥ 1, got {version!r}")
        version = None
    page_start, page_end = _pages(obj, where, problems)
    spec = VersionSpec(
        where=where.rstrip("."),
        text=text,
        version=version,
        section=_text(obj, "section", where, problems, required=False),
        page_start=page_start,
        page_end=page_end,
        effective_from=_date(obj, "effective_from", where, problems),
        effective_to=_date(obj, "effective_to", where, problems),
    )
    if spec.effective_from and spec.effective_to and spec.effective_to < spec.effective_from:
        problems.add(
            f"{where}effective_to",
            f"{spec.effective_to} is before effective_from {spec.effective_from}",
        )
    return spec


def _authority(value, where: str, problems: _Problems) -> Decimal:
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        problems.add(where, f"expected a number between 0 and 1, got {value!r}")
        return Decimal(0)
    if isinstance(value, bool) or not (0 <= number <= 1):
        problems.add(where, f"expected a number between 0 and 1, got {value!r}")
    return number.quantize(Decimal("0.001"))


def parse_manifest_lines(lines, problems: _Problems) -> list[DocumentSpec]:
    documents = []
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"line {lineno}: "
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"line {lineno}", f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            problems.add(f"line {lineno}", "expected a JSON object (one document per line)")
            continue
        doc = DocumentSpec(
            where=f"line {lineno}",
            document_id=_text(obj, "document_id", where, problems),
            title=_text(obj, "title", where, problems),
            domain=_text(obj, "domain", where, problems),
            authority=_authority(obj.get("authority"), f"{where}authority", problems)
            if "authority" in obj
            else Decimal(0),
            metadata=obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {},
        )
        if "authority" not in obj:
            problems.add(f"{where}authority", "missing (expected a number between 0 and 1)")
        blocks = obj.get("blocks")
        if not isinstance(blocks, list) or not blocks:
            problems.add(f"{where}blocks", "missing (expected a non-empty list of blocks)")
            blocks = []
        for b_index, block in enumerate(blocks):
            b_where = f"{where}blocks[{b_index}]."
            if not isinstance(block, dict):
                problems.add(b_where.rstrip("."), "expected an object")
                continue
            spec = BlockSpec(
                where=b_where.rstrip("."),
                block_id=_text(block, "block_id", b_where, problems),
                position=block.get("position", b_index)
                if isinstance(block.get("position", b_index), int)
                else b_index,
            )
            versions = block.get("versions")
            if not isinstance(versions, list) or not versions:
                problems.add(
                    f"{b_where}versions", "missing (expected a non-empty list of versions)"
                )
                versions = []
            for v_index, version in enumerate(versions):
                v = _version_spec(version, f"{b_where}versions[{v_index}].", problems)
                if v is not None:
                    spec.versions.append(v)
            doc.blocks.append(spec)
        documents.append(doc)
    if not documents and not problems:
        problems.add("line 1", "the file holds no documents")
    return documents


def parse_unrag(
    obj: dict, problems: _Problems, *, default_domain: str | None
) -> list[DocumentSpec]:
    if obj.get("version") != "1":
        problems.add("version", f'expected "1" (Unrag dataset JSON v1), got {obj.get("version")!r}')
    docs = obj.get("documents")
    if not isinstance(docs, list) or not docs:
        problems.add("documents", "missing (expected a non-empty list of documents)")
        return []
    documents = []
    by_document_id: dict[str, DocumentSpec] = {}
    for index, raw in enumerate(docs):
        where = f"documents[{index}]."
        if not isinstance(raw, dict):
            problems.add(where.rstrip("."), "expected an object")
            continue
        source_id = _text(raw, "sourceId", where, problems)
        if "content" not in raw and "loaderRef" in raw:
            problems.add(
                f"{where}content",
                "missing: loaderRef documents cannot be imported, inline the content",
            )
            continue
        meta = raw.get("metadata") or {}
        if not isinstance(meta, dict):
            problems.add(f"{where}metadata", "expected an object")
            meta = {}
        domain = meta.get("domain") or default_domain or ""
        if not domain:
            problems.add(
                f"{where}metadata.domain",
                "missing (set it per document or choose a domain for the file)",
            )
        version = _version_spec(
            {
                "content": raw.get("content"),
                "section": meta.get("section"),
                "page_range": meta.get("page_range"),
                "effective_from": meta.get("effective_from"),
                "effective_to": meta.get("effective_to"),
            },
            where,
            problems,
            text_field="content",
        )
        authority = (
            _authority(meta["authority"], f"{where}metadata.authority", problems)
            if "authority" in meta
            else DEFAULT_UNRAG_AUTHORITY
        )
        block_id = meta.get("block_id") or source_id
        document_id = meta.get("document_id") or source_id
        kept_meta = {
            k: v
            for k, v in meta.items()
            if k not in {"domain", "authority", "block_id", "document_id", "title"}
        }
        kept_meta["sourceId"] = source_id
        same_document = by_document_id.get(document_id)
        if same_document is not None and meta.get("document_id"):
            # Several blocks of one document (e.g. a gold-version export): one document spec.
            same_document.blocks.append(
                BlockSpec(
                    where=where.rstrip("."),
                    block_id=block_id,
                    position=len(same_document.blocks),
                    versions=[version] if version else [],
                )
            )
            continue
        documents.append(
            DocumentSpec(
                where=where.rstrip("."),
                document_id=document_id,
                title=meta.get("title") or source_id,
                domain=domain,
                authority=authority,
                metadata=kept_meta,
                blocks=[
                    BlockSpec(
                        where=where.rstrip("."),
                        block_id=block_id,
                        position=0,
                        versions=[version] if version else [],
                    )
                ],
            )
        )
        by_document_id.setdefault(document_id, documents[-1])
    return documents


def parse_corpus_file(
    text: str, *, default_domain: str | None = None
) -> tuple[str, list[DocumentSpec]]:
    """Detect the format and parse it. Raises ImportRejected with every structural problem."""
    problems = _Problems()
    stripped = text.lstrip()
    documents: list[DocumentSpec] = []
    fmt = "jsonl"
    if stripped.startswith("{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and "documents" in whole and "document_id" not in whole:
            fmt = "unrag"
            documents = parse_unrag(whole, problems, default_domain=default_domain)
    if fmt == "jsonl":
        documents = parse_manifest_lines(text.splitlines(), problems)
    if problems:
        raise ImportRejected(problems.items[:MAX_REPORTED_ERRORS])
    return fmt, documents


# ---------------------------------------------------------------- checking against the database


def _check_against_database(documents: list[DocumentSpec], problems: _Problems):
    domains = {d.slug: d for d in Domain.objects.filter(slug__in={doc.domain for doc in documents})}
    doc_ids = {doc.document_id for doc in documents}
    block_ids = [b.block_id for doc in documents for b in doc.blocks]
    existing_docs = {d.document_id: d for d in Document.objects.filter(document_id__in=doc_ids)}
    existing_blocks = {
        b.block_id: b
        for b in Block.objects.filter(block_id__in=block_ids).select_related("document")
    }
    stored: dict[str, dict[int, str]] = defaultdict(dict)
    for block_id, version, sha in BlockVersion.objects.filter(
        block__block_id__in=block_ids
    ).values_list("block__block_id", "version", "sha256"):
        stored[block_id][version] = sha

    seen_docs: dict[str, str] = {}
    seen_blocks: dict[str, str] = {}
    plan: list[
        tuple[DocumentSpec, BlockSpec, VersionSpec, int]
    ] = []  # (doc, block, version, number)
    unchanged = 0
    for doc in documents:
        if doc.domain not in domains:
            problems.add(
                f"{doc.where}: domain",
                f"unknown domain {doc.domain!r} (known: {', '.join(sorted(Domain.objects.values_list('slug', flat=True))) or 'none'})",
            )
        if doc.document_id in seen_docs:
            problems.add(
                f"{doc.where}: document_id",
                f"{doc.document_id!r} also appears at {seen_docs[doc.document_id]}",
            )
        seen_docs[doc.document_id] = doc.where
        current = existing_docs.get(doc.document_id)
        if (
            current is not None
            and doc.domain in domains
            and current.domain_id != domains[doc.domain].pk
        ):
            problems.add(
                f"{doc.where}: domain",
                f"document {doc.document_id!r} is in domain {current.domain.slug!r}; import cannot move it",
            )
        for block in doc.blocks:
            if block.block_id in seen_blocks:
                problems.add(
                    f"{block.where}: block_id",
                    f"{block.block_id!r} also appears at {seen_blocks[block.block_id]}",
                )
                continue
            seen_blocks[block.block_id] = block.where
            owner = existing_blocks.get(block.block_id)
            if owner is not None and owner.document.document_id != doc.document_id:
                problems.add(
                    f"{block.where}: block_id",
                    f"{block.block_id!r} belongs to document {owner.document.document_id!r}",
                )
                continue
            versions = dict(stored.get(block.block_id, {}))
            in_file: dict[int, str] = {}
            for v in block.versions:
                latest = max(versions) if versions else 0
                if v.version is not None:
                    if v.version in in_file:
                        problems.add(
                            f"{v.where}: version",
                            f"duplicate block version: {block.block_id} v{v.version} also at {in_file[v.version]}",
                        )
                        continue
                    in_file[v.version] = v.where
                    if v.version in versions:
                        if versions[v.version] == v.sha256:
                            unchanged += 1
                        else:
                            problems.add(
                                f"{v.where}: text",
                                f"{block.block_id} v{v.version} already exists with a different text; versions are append-only (omit 'version' to add the next one)",
                            )
                        continue
                    if v.version != latest + 1:
                        problems.add(
                            f"{v.where}: version",
                            f"expected version {latest + 1} for {block.block_id} (versions are consecutive), got {v.version}",
                        )
                        continue
                    number = v.version
                else:
                    if versions and versions[latest] == v.sha256:
                        unchanged += 1
                        continue
                    number = latest + 1
                versions[number] = v.sha256
                plan.append((doc, block, v, number))
    return domains, existing_docs, existing_blocks, plan, unchanged


# ---------------------------------------------------------------- the service


@transaction.atomic
def import_corpus(
    *, text: str, actor, source_name: str = "", default_domain: str | None = None
) -> ImportSummary:
    """Import a manifest or Unrag file all-or-nothing. Raises ImportRejected (nothing stored).

    Re-importing the same file is a no-op. Returns counts and the ids of versions that supersede
    an older version of the same block (later protocols mark pinned triples for re-review)."""
    fmt, documents = parse_corpus_file(text, default_domain=default_domain)
    problems = _Problems()
    domains, existing_docs, existing_blocks, plan, unchanged = _check_against_database(
        documents, problems
    )
    if problems:
        raise ImportRejected(problems.items[:MAX_REPORTED_ERRORS], source=source_name)

    summary = ImportSummary(format=fmt, versions_unchanged=unchanged)
    docs_by_id = dict(existing_docs)
    for doc in documents:
        current = docs_by_id.get(doc.document_id)
        if current is None:
            docs_by_id[doc.document_id] = Document.objects.create(
                document_id=doc.document_id,
                title=doc.title,
                domain=domains[doc.domain],
                authority=doc.authority,
                metadata=doc.metadata,
            )
            summary.documents_created += 1
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
            current.save(update_fields=["title", "authority", "metadata"])
            summary.documents_updated += 1

    blocks_by_id = dict(existing_blocks)
    new_versions = []
    for doc, block, v, number in plan:
        target = blocks_by_id.get(block.block_id)
        if target is None:
            target = Block.objects.create(
                block_id=block.block_id,
                document=docs_by_id[doc.document_id],
                position=block.position,
            )
            blocks_by_id[block.block_id] = target
            summary.blocks_created += 1
        new_versions.append(
            BlockVersion(
                block=target,
                version=number,
                text=v.text,
                section=v.section,
                page_start=v.page_start,
                page_end=v.page_end,
                effective_from=v.effective_from,
                effective_to=v.effective_to,
                sha256=v.sha256,
            )
        )
    created = BlockVersion.objects.bulk_create(new_versions)
    summary.versions_created = len(created)
    summary.superseding_version_ids = [v.pk for v in created if v.version > 1]
    mark_superseded_pins(superseding_version_ids=summary.superseding_version_ids, actor=actor)
    record_event(
        actor=actor,
        verb="corpus_imported",
        object_type="corpus",
        object_id=source_name[:128],
        detail={**summary.as_dict(), "file_sha256": sha256_text(text)},
    )
    return summary
