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
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

from django.db import connection

from goldset.exceptions import GoldsetError
from goldset.imports.bulk import one_of
from goldset.models import (
    BlockVersion,
    ExportFormat,
    GoldVersion,
    GoldVersionFile,
    GoldVersionFileChunk,
)
from goldset.models.exports import FORMAT_FILES
from goldset.selectors.answers import iter_answer_question_packets

CHUNK_SIZE = 1 << 20  # 1 MiB per stored chunk
UNRAG_SCOPE_PREFIX = "eval:goldset:"
UNRAG_DATASET_ID = "goldset"
REDACTED_LOADER_PREFIX = "goldset:block-version:"
BATCH = 1000
PIN_BATCH = 5000


class ChecksumMismatch(GoldsetError):
    """Stored bytes no longer match the checksum recorded at freeze time."""


# One encoder for every call: json.dumps with options builds a new JSONEncoder each time, which a
# freeze of 100k triples does about 700,000 times (issue 26). Same class, same options, same bytes.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(obj) -> str:
    return _CANONICAL.encode(obj)


def canonical_bytes(obj) -> bytes:
    return canonical_json(obj).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- storing a rendered file


class FileSpool:
    """A file being rendered: bytes go to a temporary spool (memory up to one chunk, 1 MiB, then
    disk) and into a running sha256, so the file row can be inserted once with its final
    checksum. A freeze fills ten at once: at 8 MiB each they held about 16 MB of its peak
    (issue 26)."""

    def __init__(self):
        self.digest = hashlib.sha256()
        self.size = 0
        self.spool = tempfile.SpooledTemporaryFile(max_size=CHUNK_SIZE)

    def write(self, piece: bytes) -> None:
        if piece:
            self.digest.update(piece)
            self.spool.write(piece)
            self.size += len(piece)


def store_spool(
    *, version: GoldVersion, fmt: str, redacted: bool, spool: FileSpool
) -> GoldVersionFile:
    """Insert the file row (final checksum and size) and its chunks, then drop the spool.
    Rows are inserted once and never updated (the triggers forbid it)."""
    filename, content_type = FORMAT_FILES[ExportFormat(fmt)]
    stem, _, ext = filename.rpartition(".")
    suffix = "-redacted" if redacted else ""
    stored = GoldVersionFile.objects.create(
        version=version,
        format=fmt,
        redacted=redacted,
        filename=f"goldset-v{version.number}-{stem}{suffix}.{ext}",
        content_type=content_type,
        sha256=spool.digest.hexdigest(),
        size=spool.size,
        chunk_count=(spool.size + CHUNK_SIZE - 1) // CHUNK_SIZE,
    )
    spool.spool.seek(0)
    if connection.vendor == "postgresql":
        _copy_chunks(stored, spool)
    else:
        index, pending = 0, []
        while data := spool.spool.read(CHUNK_SIZE):
            pending.append(GoldVersionFileChunk(file=stored, index=index, data=data))
            index += 1
            if len(pending) >= 8:
                GoldVersionFileChunk.objects.bulk_create(pending)
                pending = []
        GoldVersionFileChunk.objects.bulk_create(pending)
    spool.spool.close()
    return stored


def _copy_chunks(stored: GoldVersionFile, spool: FileSpool) -> None:
    """Binary COPY: bytea goes over the wire as raw bytes (a text INSERT doubles it as hex)."""
    table = GoldVersionFileChunk._meta.db_table
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            f'COPY {table} (file_id, "index", data) FROM STDIN (FORMAT BINARY)'
        ) as copy:
            copy.set_types(["bigint", "integer", "bytea"])
            index = 0
            while data := spool.spool.read(CHUNK_SIZE):
                copy.write_row((stored.pk, index, data))
                index += 1


def store_file(
    *, version: GoldVersion, fmt: str, redacted: bool, content: Iterable[bytes]
) -> GoldVersionFile:
    """Render ``content`` into a spool and store it (see :func:`store_spool`)."""
    spool = FileSpool()
    for piece in content:
        spool.write(piece)
    return store_spool(version=version, fmt=fmt, redacted=redacted, spool=spool)


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


def version_question_ids(version: GoldVersion) -> frozenset[str]:
    """The question ids a frozen version holds: those of its PROBE question file (checksum
    verified), i.e. its triples' and the answer-labeling area's questions at freeze time.
    GoldsetError when the version has no question file."""
    stored = version.files.filter(format=ExportFormat.PROBE_QUESTIONS, redacted=False).first()
    if stored is None:
        raise GoldsetError(f"gold version v{version.number} has no PROBE question file")
    text = read_verified_bytes(stored).decode("utf-8")
    return frozenset(json.loads(line)["question_id"] for line in text.splitlines() if line.strip())


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


def verified_row_checksums(version: GoldVersion) -> dict[str, str]:
    """``{triple_id: sha256}`` of the version's rows, verified on the way: every row's line
    hashes to its own checksum, and the lines together hash to the recorded rows checksum.
    Raises ChecksumMismatch otherwise (diffs read checksums, so they verify them)."""
    digest = hashlib.sha256()
    checksums: dict[str, str] = {}
    rows = version.rows.order_by("position").values_list("triple_id", "line", "sha256")
    for triple_id, line, sha in rows.iterator(5000):
        encoded = line.encode("utf-8")
        if sha256_bytes(encoded) != sha:
            raise ChecksumMismatch(
                f"row {triple_id} of gold version v{version.number} failed its integrity check"
            )
        digest.update(encoded + b"\n")
        checksums[triple_id] = sha
    if digest.hexdigest() != version.rows_sha256:
        raise ChecksumMismatch(
            f"the rows of gold version v{version.number} failed their integrity check "
            f"(hash {digest.hexdigest()}, recorded {version.rows_sha256})."
        )
    return checksums


# ---------------------------------------------------------------- renderers

_WHITESPACE = re.compile(r"\s")


def trec_id(value: str) -> str:
    """An id as a TREC column: as stored, except whitespace (which would split the column),
    percent-encoded as in a URL (a space is ``%20``)."""
    return _WHITESPACE.sub(lambda m: quote(m.group(0), safe=""), value)


def qrels_line(row: dict) -> bytes:
    """A gold row as one TREC qrels line, ``qid 0 docid rel``: the judgement scoring jobs read
    from the gold JSONL (``scoring.io``'s ``gold`` format: the query is the triple id, its one
    relevant document the expected block id, relevance 1), so ``trec_eval`` on this file and
    a scoring job on the version score a run alike."""
    qid, docid = trec_id(row["id"]), trec_id(row["expected_block"]["block_id"])
    return f"{qid} 0 {docid} 1\n".encode()


def _lines(version: GoldVersion) -> Iterator[str]:
    yield from version.rows.order_by("position").values_list("line", flat=True).iterator(BATCH)


PIN_FIELDS = (
    "block__block_id",
    "version",
    "text",
    "section",
    "page_start",
    "page_end",
    "effective_from",
    "effective_to",
    "sha256",
    "block__document__document_id",
    "block__document__title",
    "block__document__authority",
    "block__document__domain__slug",
)


@dataclass(frozen=True)
class Pinned:
    block_id: str
    version: int
    text: str
    section: str
    page_start: int | None
    page_end: int | None
    effective_from: object
    effective_to: object
    sha256: str
    document_id: str
    title: str
    authority: object
    domain: str

    @property
    def page_range(self):
        if self.page_start is None:
            return None
        return [self.page_start, self.page_end if self.page_end is not None else self.page_start]

    @property
    def effective(self) -> str:
        if self.effective_from is None and self.effective_to is None:
            return ""
        start = self.effective_from.isoformat() if self.effective_from else ""
        end = self.effective_to.isoformat() if self.effective_to else ""
        return f"{start}/{end}" if end else start


def _pinned_data(pins: list[tuple[str, int]], *, project_id: int) -> dict[tuple[str, int], Pinned]:
    """Block version fields for a batch of pins in the project's corpus (one query, plain
    tuples; block ids are per project). Raises GoldsetError for a pin missing from it."""
    wanted = set(pins)
    found = {}
    rows = BlockVersion.objects.filter(
        block__project_id=project_id, block__block_id__in=one_of({b for b, _ in pins})
    ).values_list(*PIN_FIELDS)
    for values in rows:
        pinned = Pinned(*values)
        if (pinned.block_id, pinned.version) in wanted:
            found[(pinned.block_id, pinned.version)] = pinned
    for pin in pins:
        if pin not in found:
            raise GoldsetError(f"block {pin[0]} v{pin[1]} is not in the corpus")
    return found


def source_id(block_id: str, number: int) -> str:
    return f"{UNRAG_SCOPE_PREFIX}{block_id}@v{number}"


def _unrag_document(p: Pinned, *, redacted: bool) -> dict:
    metadata = {
        "block_id": p.block_id,
        "document_id": p.document_id,
        "title": p.title,
        "domain": p.domain,
        "authority": float(p.authority),
        "block_version": p.version,
        "sha256": p.sha256,
        "section": p.section,
        "page_range": p.page_range,
        "effective_from": p.effective_from.isoformat() if p.effective_from else None,
        "effective_to": p.effective_to.isoformat() if p.effective_to else None,
    }
    entry = {"sourceId": source_id(p.block_id, p.version), "metadata": metadata}
    if redacted:
        entry["loaderRef"] = f"{REDACTED_LOADER_PREFIX}{p.block_id}@v{p.version}"
    else:
        entry["content"] = p.text
    return entry


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


def _passage(p: Pinned, *, redacted: bool) -> dict:
    passage = {
        "passage_id": p.block_id,
        "block_version": p.version,
        "document_id": p.document_id,
        "role": "expected_block",
        "authority": float(p.authority),
        "effective": p.effective,
        "label": "sufficient",
        "sha256": p.sha256,
        "text": None if redacted else p.text,
    }
    if redacted:
        passage["text_redacted"] = True
    return passage


def _packet_line(row: dict, evidence: str) -> str:
    """The canonical JSON of a gold row's packet, ``{"question_id", "domain", "gold_evidence":
    [passage], "near_miss": [], "prohibited_answer_behavior": []}``, around its evidence
    already encoded (``canonical_json([_passage(…)])``, once per pin and variant: the block
    text is most of a packet, and a batch's rows share pins); keys in sorted order, as
    :func:`canonical_json` writes them."""
    domain = canonical_json((row.get("metadata") or {}).get("domain"))
    return (
        f'{{"domain":{domain},"gold_evidence":{evidence},"near_miss":[],'
        f'"prohibited_answer_behavior":[],"question_id":{canonical_json(row["id"])}}}'
    )


class SnippetFiles:
    """Unrag dataset JSON v1 (seed 001) and PROBE evidence packets (seed 004 A.4), each full
    and redacted, and the PROBE question file, rendered batch by batch of gold rows (in row
    order) with one block-version query per batch: :meth:`add` each batch, then :meth:`finish`.

    Unrag: documents are the pinned block versions in order of first use (content, or a
    loaderRef when redacted); queries carry ``relevant.sourceIds``; keys in sorted order
    (canonical). Packets: the expected block version is the sufficient gold passage with its
    authority and effective window, and its text unless redacted. The freeze feeds the rows as
    it stores them (issue 26: no second read and parse of 100k stored rows); the files are the
    same bytes either way, every value going through :func:`canonical_json`."""

    def __init__(self, version: GoldVersion, *, description: str):
        self.version = version
        defaults = {"mode": "retrieve", "scopePrefix": UNRAG_SCOPE_PREFIX, "topK": 10}
        head = (
            f'{{"defaults":{canonical_json(defaults)},"description":{canonical_json(description)},'
            '"documents":['
        ).encode()
        self.unrag = {False: FileSpool(), True: FileSpool()}
        self.packets = {False: FileSpool(), True: FileSpool()}
        self.questions = FileSpool()
        self.queries = FileSpool()
        self.queries.write(f'],"id":{canonical_json(UNRAG_DATASET_ID)},"queries":['.encode())
        for spool in self.unrag.values():
            spool.write(head)
        self.seen: set[tuple[str, int]] = set()
        self.wrote_queries = False

    def add(self, rows: list[dict]) -> None:
        if not rows:
            return
        pins = [
            (r["expected_block"]["block_id"], int(r["expected_block"]["version"])) for r in rows
        ]
        data = _pinned_data(sorted(set(pins)), project_id=self.version.project_id)
        new = [pin for pin in dict.fromkeys(pins) if pin not in self.seen]
        for redacted, spool in self.unrag.items():
            if new:
                docs = ",".join(
                    canonical_json(_unrag_document(data[pin], redacted=redacted)) for pin in new
                )
                spool.write((("," if self.seen else "") + docs).encode("utf-8"))
        self.seen.update(new)
        for redacted, spool in self.packets.items():
            evidence = {
                pin: canonical_json([_passage(data[pin], redacted=redacted)])
                for pin in dict.fromkeys(pins)
            }
            lines = [_packet_line(row, evidence[pin]) for row, pin in zip(rows, pins, strict=True)]
            spool.write(("\n".join(lines) + "\n").encode("utf-8"))
        self.questions.write(
            "".join(canonical_json(_question(row)) + "\n" for row in rows).encode("utf-8")
        )
        query_lines = [
            canonical_json(
                {
                    "id": row["id"],
                    "query": row["question"],
                    "relevant": {"sourceIds": [source_id(*pin)]},
                }
            )
            for row, pin in zip(rows, pins, strict=True)
        ]
        self.queries.write(
            (("," if self.wrote_queries else "") + ",".join(query_lines)).encode("utf-8")
        )
        self.wrote_queries = True

    def finish(self) -> dict:
        """Append the answer-labeling area's questions and close the Unrag files; returns
        ``{(format, redacted): FileSpool}``."""
        packets, questions, queries = self.packets, self.questions, self.queries
        # The answer-labeling area's questions (seed 004 A.3/A.4) follow the triples' packets.
        for packet in iter_answer_question_packets(project=self.version.project_id):
            line = (canonical_json(packet) + "\n").encode("utf-8")
            packets[False].write(line)
            packets[True].write(line)  # answers' packets carry passage ids, never source text
            question = {k: packet[k] for k in ("question_id", "question", "domain", "task_family")}
            question["flags"] = packet["flags"]
            questions.write((canonical_json(question) + "\n").encode("utf-8"))
        queries.write(b'],"version":"1"}')
        for spool in self.unrag.values():
            queries.spool.seek(0)
            while data_bytes := queries.spool.read(CHUNK_SIZE):
                spool.write(data_bytes)
        queries.spool.close()
        return {
            **{(ExportFormat.UNRAG_JSON, r): spool for r, spool in self.unrag.items()},
            **{(ExportFormat.PROBE_PACKETS, r): spool for r, spool in packets.items()},
            (ExportFormat.PROBE_QUESTIONS, False): questions,
        }


def render_snippet_files(version: GoldVersion, *, description: str) -> dict:
    """:class:`SnippetFiles` of the version's stored rows, read back in batches."""
    files = SnippetFiles(version, description=description)
    for rows in _row_batches(version, size=PIN_BATCH):
        files.add(rows)
    return files.finish()


def _row_batches(version: GoldVersion, *, size: int = BATCH) -> Iterator[list[dict]]:
    batch = []
    for line in _lines(version):
        batch.append(json.loads(line))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
