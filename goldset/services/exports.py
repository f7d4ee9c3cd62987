"""Rendering and reading the files of a frozen gold version.

Every renderer is a generator of ``bytes`` fed from rows read with ``.iterator()``, so memory
stays constant whatever the version size. Files are stored in the database in chunks of at most
``CHUNK_SIZE`` bytes; :func:`verified_chunks` re-hashes the stored bytes before serving any.

Canonical JSON everywhere: ``sort_keys``, compact separators, UTF-8 (``ensure_ascii=False``).
Renderers emit keys in sorted order too, so a whole Unrag file equals
``canonical_json(json.loads(file))``.
"""

import hashlib
import json
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from goldset.exceptions import GoldsetError
from goldset.models import (
    BlockVersion,
    ExportFormat,
    GoldVersion,
    GoldVersionFile,
    GoldVersionFileChunk,
)
from goldset.models.exports import FORMAT_FILES

CHUNK_SIZE = 1 << 20  # 1 MiB per stored chunk
UNRAG_SCOPE_PREFIX = "eval:goldset:"
UNRAG_DATASET_ID = "goldset"
REDACTED_LOADER_PREFIX = "goldset:block-version:"
SNIPPET_PERMISSION = "goldset.view_snippets"
# Formats holding source snippets: they are stored twice, full and redacted.
SNIPPET_FORMATS = (ExportFormat.UNRAG_JSON, ExportFormat.PROBE_PACKETS)
BATCH = 1000


class ChecksumMismatch(GoldsetError):
    """Stored bytes no longer match the checksum recorded at freeze time."""


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_bytes(obj) -> bytes:
    return canonical_json(obj).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- storing a rendered file


@dataclass(frozen=True)
class StoredFile:
    format: str
    redacted: bool
    sha256: str
    size: int


def store_file(
    *, version: GoldVersion, fmt: str, redacted: bool, content: Iterable[bytes]
) -> GoldVersionFile:
    """Spool ``content`` (hashing as it goes), then insert the file row with its final checksum
    and its chunks. Rows are inserted once and never updated (the trigger forbids it), which is
    why the bytes are spooled first. Memory: one chunk plus the spool's in-memory part."""
    digest = hashlib.sha256()
    size = 0
    with tempfile.SpooledTemporaryFile(max_size=8 * CHUNK_SIZE) as spool:
        for piece in content:
            if piece:
                digest.update(piece)
                spool.write(piece)
                size += len(piece)
        spool.seek(0)
        filename, content_type = FORMAT_FILES[ExportFormat(fmt)]
        stem, _, ext = filename.rpartition(".")
        suffix = "-redacted" if redacted else ""
        stored = GoldVersionFile.objects.create(
            version=version,
            format=fmt,
            redacted=redacted,
            filename=f"goldset-v{version.number}-{stem}{suffix}.{ext}",
            content_type=content_type,
            sha256=digest.hexdigest(),
            size=size,
            chunk_count=(size + CHUNK_SIZE - 1) // CHUNK_SIZE,
        )
        index = 0
        pending = []
        while data := spool.read(CHUNK_SIZE):
            pending.append(GoldVersionFileChunk(file=stored, index=index, data=data))
            index += 1
            if len(pending) >= 8:
                GoldVersionFileChunk.objects.bulk_create(pending)
                pending = []
        GoldVersionFileChunk.objects.bulk_create(pending)
    return stored


def _raw_chunks(stored: GoldVersionFile) -> Iterator[bytes]:
    for pk in stored.chunks.order_by("index").values_list("pk", flat=True):
        # One chunk per query keeps memory at one chunk however large the file.
        yield bytes(GoldVersionFileChunk.objects.values_list("data", flat=True).get(pk=pk))


def verify_file(stored: GoldVersionFile) -> None:
    """Hash the stored bytes; raise ChecksumMismatch when they differ from the frozen sha256."""
    digest = hashlib.sha256()
    size = 0
    for data in _raw_chunks(stored):
        digest.update(data)
        size += len(data)
    if digest.hexdigest() != stored.sha256 or size != stored.size:
        raise ChecksumMismatch(
            f"{stored.filename} of gold version v{stored.version.number} failed its integrity "
            f"check: the stored bytes hash to {digest.hexdigest()} ({size} bytes) but "
            f"{stored.sha256} ({stored.size} bytes) was recorded at freeze time. "
            "Nothing was served; report this to an administrator."
        )


def verified_chunks(stored: GoldVersionFile) -> Iterator[bytes]:
    """Verify first (whole file, streamed), then return an iterator over the same bytes.
    Raises ChecksumMismatch before yielding anything."""
    verify_file(stored)
    return _raw_chunks(stored)


def read_verified_bytes(stored: GoldVersionFile) -> bytes:
    return b"".join(verified_chunks(stored))


def verify_rows(version: GoldVersion) -> None:
    """The frozen rows still hash to the recorded rows checksum (the gold JSONL bytes)."""
    digest = hashlib.sha256()
    for line in version.rows.order_by("position").values_list("line", flat=True).iterator(5000):
        digest.update(line.encode("utf-8") + b"\n")
    if digest.hexdigest() != version.rows_sha256:
        raise ChecksumMismatch(
            f"the rows of gold version v{version.number} failed their integrity check "
            f"(hash {digest.hexdigest()}, recorded {version.rows_sha256})."
        )


def pick_file(version: GoldVersion, *, fmt: str, user) -> GoldVersionFile:
    """The variant a user may download: the full file with the view-snippets permission (or
    for formats without snippets), otherwise the redacted one. ``user=None`` (commands) gets
    the full file."""
    files = {(f.format, f.redacted): f for f in version.files.all()}
    full = user is None or user.has_perm(SNIPPET_PERMISSION)
    if (fmt, not full) in files:
        return files[(fmt, not full)]
    if (fmt, False) in files and fmt not in SNIPPET_FORMATS:
        return files[(fmt, False)]
    raise GoldsetError(f"gold version v{version.number} has no {fmt} export")


# ---------------------------------------------------------------- renderers


def _lines(version: GoldVersion) -> Iterator[str]:
    yield from version.rows.order_by("position").values_list("line", flat=True).iterator(BATCH)


def render_gold_jsonl(version: GoldVersion) -> Iterator[bytes]:
    buffer = []
    for line in _lines(version):
        buffer.append(line)
        if len(buffer) >= BATCH:
            yield ("\n".join(buffer) + "\n").encode("utf-8")
            buffer = []
    if buffer:
        yield ("\n".join(buffer) + "\n").encode("utf-8")


def _pinned_versions(version: GoldVersion) -> list[tuple[str, int]]:
    """The distinct (block_id, version) pairs the rows pin, sorted."""
    pins = set()
    for line in _lines(version):
        block = json.loads(line)["expected_block"]
        pins.add((block["block_id"], int(block["version"])))
    return sorted(pins)


def _block_versions(pins: list[tuple[str, int]]) -> Iterator[BlockVersion]:
    """The BlockVersion of every pin, in the pins' order, fetched in batches."""
    for start in range(0, len(pins), BATCH):
        batch = pins[start : start + BATCH]
        wanted = set(batch)
        found = {
            (bv.block.block_id, bv.version): bv
            for bv in BlockVersion.objects.filter(
                block__block_id__in={b for b, _ in batch}
            ).select_related("block__document__domain")
            if (bv.block.block_id, bv.version) in wanted
        }
        for pin in batch:
            if pin not in found:
                raise GoldsetError(f"block {pin[0]} v{pin[1]} is not in the corpus")
            yield found[pin]


def source_id(block_id: str, number: int) -> str:
    return f"{UNRAG_SCOPE_PREFIX}{block_id}@v{number}"


def _effective(bv: BlockVersion) -> str:
    if bv.effective_from is None and bv.effective_to is None:
        return ""
    start = bv.effective_from.isoformat() if bv.effective_from else ""
    end = bv.effective_to.isoformat() if bv.effective_to else ""
    return f"{start}/{end}" if end else start


def _unrag_document(bv: BlockVersion, *, redacted: bool) -> dict:
    doc = bv.block.document
    metadata = {
        "block_id": bv.block.block_id,
        "document_id": doc.document_id,
        "title": doc.title,
        "domain": doc.domain.slug,
        "authority": float(doc.authority),
        "block_version": bv.version,
        "sha256": bv.sha256,
        "section": bv.section,
        "page_range": bv.page_range,
        "effective_from": bv.effective_from.isoformat() if bv.effective_from else None,
        "effective_to": bv.effective_to.isoformat() if bv.effective_to else None,
    }
    entry = {"sourceId": source_id(bv.block.block_id, bv.version), "metadata": metadata}
    if redacted:
        entry["loaderRef"] = f"{REDACTED_LOADER_PREFIX}{bv.block.block_id}@v{bv.version}"
    else:
        entry["content"] = bv.text
    return entry


def render_unrag(version: GoldVersion, *, redacted: bool, description: str) -> Iterator[bytes]:
    """Unrag dataset JSON v1 (seed 001): documents are the pinned block versions (content, or
    a loaderRef when redacted), queries carry ``relevant.sourceIds``. Keys in sorted order."""
    defaults = {"mode": "retrieve", "scopePrefix": UNRAG_SCOPE_PREFIX, "topK": 10}
    yield (
        f'{{"defaults":{canonical_json(defaults)},"description":{canonical_json(description)},'
        '"documents":['
    ).encode()
    for index, bv in enumerate(_block_versions(_pinned_versions(version))):
        prefix = "," if index else ""
        yield (prefix + canonical_json(_unrag_document(bv, redacted=redacted))).encode("utf-8")
    yield f'],"id":{canonical_json(UNRAG_DATASET_ID)},"queries":['.encode()
    for index, line in enumerate(_lines(version)):
        row = json.loads(line)
        block = row["expected_block"]
        query = {
            "id": row["id"],
            "query": row["question"],
            "relevant": {"sourceIds": [source_id(block["block_id"], int(block["version"]))]},
        }
        yield (("," if index else "") + canonical_json(query)).encode("utf-8")
    yield b'],"version":"1"}'


def _question(row: dict) -> dict:
    meta = row.get("metadata") or {}
    return {
        "question_id": row["id"],
        "question": row["question"],
        "domain": meta.get("domain"),
        "task_family": meta.get("task_type"),
        "difficulty": meta.get("difficulty"),
        "tier": meta.get("tier"),
        "source": meta.get("source"),
        "flags": meta.get("flags") or [],
    }


def render_probe_questions(version: GoldVersion) -> Iterator[bytes]:
    """The PROBE question file (seed 004 A.3 / Table 9): id, domain, task family, flags."""
    for line in _lines(version):
        yield (canonical_json(_question(json.loads(line))) + "\n").encode("utf-8")


def render_probe_packets(version: GoldVersion, *, redacted: bool) -> Iterator[bytes]:
    """Gold evidence packets (seed 004 A.4): the expected block version is the sufficient gold
    passage, with its authority and effective window; its text unless redacted."""
    for start_rows in _row_batches(version):
        pins = sorted(
            {
                (r["expected_block"]["block_id"], int(r["expected_block"]["version"]))
                for r in start_rows
            }
        )
        by_pin = {(bv.block.block_id, bv.version): bv for bv in _block_versions(pins)}
        out = []
        for row in start_rows:
            block = row["expected_block"]
            bv = by_pin[(block["block_id"], int(block["version"]))]
            passage = {
                "passage_id": block["block_id"],
                "block_version": bv.version,
                "document_id": bv.block.document.document_id,
                "role": "expected_block",
                "authority": float(bv.block.document.authority),
                "effective": _effective(bv),
                "label": "sufficient",
                "sha256": bv.sha256,
                "text": None if redacted else bv.text,
            }
            if redacted:
                passage["text_redacted"] = True
            packet = {
                "question_id": row["id"],
                "domain": (row.get("metadata") or {}).get("domain"),
                "gold_evidence": [passage],
                "near_miss": [],
                "prohibited_answer_behavior": [],
            }
            out.append(canonical_json(packet))
        yield ("\n".join(out) + "\n").encode("utf-8")


def _row_batches(version: GoldVersion) -> Iterator[list[dict]]:
    batch = []
    for line in _lines(version):
        batch.append(json.loads(line))
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def iter_rows(version: GoldVersion) -> Iterator[dict]:
    for batch in _row_batches(version):
        yield from batch
