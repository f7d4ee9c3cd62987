"""What validating and scoring a run share across run kinds (retrieval runs in
:mod:`goldset.services.scoring_jobs`, answer logs in :mod:`goldset.services.answer_scoring`): the
rejection error, the validation and scoring results, and the run's bytes on their way in and out.

A run is never held whole in memory (a 200 MiB upload is 4.8 M TREC lines): it is checked from a
file on disk in blocks (:func:`inspect_run_file`), stored in ``ScoringRunChunk`` rows from that
file (:func:`store_run_chunks`), and read back chunk by chunk into a temporary file for scoring
(:func:`stored_run_file`), so the scoring library reads it from a path with its columnar reader."""

import codecs
import hashlib
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection

from goldset.exceptions import ImportRejected
from goldset.models import Block, ScoreAggregate, ScoringJob, ScoringRunChunk
from goldset.services import exports

RUN_CHUNK = exports.CHUNK_SIZE
# Bytes read at a time while a run file is checked or split into lines.
BLOCK = 1 << 18
# str.splitlines' line boundaries: the first line of a run ends at the first of these.
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class RunRejected(ImportRejected):
    """An uploaded run was rejected as a whole; no job was created."""


@dataclass(frozen=True)
class ValidatedRun:
    kind: str
    fmt: str
    n_queries: int
    n_rows: int


def known_block_ids(wanted: list[str], *, project) -> set[str]:
    """Which of ``wanted`` are block ids of ``project``'s corpus (another project's blocks are
    unknown here)."""
    blocks = Block.objects.filter(project=project)
    if len(wanted) <= 20_000:
        return set(blocks.filter(block_id__in=wanted).values_list("block_id", flat=True))
    return set(blocks.values_list("block_id", flat=True).iterator(10_000))


@dataclass(frozen=True)
class RunFacts:
    """What one pass over an uploaded run file finds: its size and sha256, and its first line
    of text after any leading whitespace (``text.lstrip().splitlines()[0]``; ``None`` when the
    file holds only whitespace)."""

    size: int
    sha256: str
    first_line: str | None


def inspect_run_file(path: Path, name: str) -> RunFacts:
    """Hash the file and check that it is UTF-8 text, one block at a time. Raises RunRejected
    naming the line of the first byte that is not UTF-8 (as decoding it whole would)."""
    digest, size, newlines = hashlib.sha256(), 0, 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    head: list[str] = []  # the text from the first non-whitespace character on
    first_line = None
    with path.open("rb") as stream:
        while True:
            block = stream.read(BLOCK)
            final = not block
            pending = decoder.getstate()[0]  # an unfinished character from the last block
            # An ASCII block is UTF-8 as it is (a run is mostly ASCII): nothing to decode.
            if first_line is None or pending or not block.isascii():
                try:
                    text = decoder.decode(block, final=final)
                except UnicodeDecodeError as exc:
                    # pending holds no newline (bytes >= 0x80 only), so the line is counted
                    # from the newlines before the bad byte within this block.
                    at = max(0, exc.start - len(pending))
                    line = newlines + block[:at].count(b"\n") + 1
                    raise RunRejected(
                        [f"{name}, line {line}: not valid UTF-8 text"], source=name
                    ) from None
                if first_line is None:
                    first_line = _first_line(head, text, final=final)
                    if first_line is not None:
                        head.clear()
            digest.update(block)
            size += len(block)
            newlines += block.count(b"\n")
            if final:
                break
    return RunFacts(size=size, sha256=digest.hexdigest(), first_line=first_line)


def _first_line(head: list[str], text: str, *, final: bool) -> str | None:
    """Feed decoded text; the first line once it is known (its end or the file's end seen)."""
    if not head:
        text = text.lstrip()
        if not text:
            return None
    head.append(text)
    if _LINE_BREAK.search(text) or final:
        return "".join(head).splitlines()[0]
    return None


def text_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 file exactly as ``text.splitlines()`` gives them (every line
    boundary ``str`` knows, a CRLF split across blocks included), one block in memory at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    carry = ""
    with path.open("rb") as stream:
        while block := stream.read(BLOCK):
            pieces = (carry + decoder.decode(block)).splitlines(keepends=True)
            # The last piece may continue in the next block (or be a CR before its LF).
            carry = pieces.pop() if pieces else ""
            for piece in pieces:
                yield piece[:-2] if piece.endswith("\r\n") else piece[:-1]
    yield from (carry + decoder.decode(b"", final=True)).splitlines()


@contextmanager
def spooled_run(chunks: Iterable[bytes]) -> Iterator[Path]:
    """The bytes written to a temporary file as they come; the file is deleted on exit."""
    with tempfile.TemporaryDirectory(prefix="goldset-run-") as folder:
        path = Path(folder) / "run"
        with path.open("wb") as out:
            for chunk in chunks:
                out.write(chunk)
        yield path


def store_run_chunks(job: ScoringJob, path: Path) -> int:
    """Store the run file in ``RUN_CHUNK``-byte rows (the same cut as slicing its bytes),
    reading one chunk at a time. Returns the number of rows.

    On PostgreSQL the rows go through one binary COPY: the bytes are sent as they are (an
    INSERT binds them client-side as escaped text, five times their size in memory)."""
    if connection.vendor != "postgresql":
        return _insert_run_chunks(job, path)
    table = ScoringRunChunk._meta.db_table
    index = 0
    with (
        path.open("rb") as stream,
        connection.cursor() as cursor,
        cursor.cursor.copy(
            f'COPY {table} ("job_id", "index", "data") FROM STDIN (FORMAT BINARY)'
        ) as copy,
    ):
        copy.set_types(["int8", "int4", "bytea"])
        while data := stream.read(RUN_CHUNK):
            copy.write_row((job.pk, index, data))
            index += 1
    return index


def _insert_run_chunks(job: ScoringJob, path: Path) -> int:
    index = 0
    with path.open("rb") as stream:
        while data := stream.read(RUN_CHUNK):
            ScoringRunChunk.objects.create(job=job, index=index, data=data)
            index += 1
    return index


def iter_run_chunks(job: ScoringJob) -> Iterator[bytes]:
    """The stored run's bytes in order, one chunk (one query) at a time, hashed on the way:
    raises ChecksumMismatch after the last chunk when they do not match the job's sha256, so
    a consumer may trust what it read only once the iterator is exhausted."""
    digest = hashlib.sha256()
    indexes = list(job.run_chunks.order_by("index").values_list("index", flat=True))
    for index in indexes:
        chunk = ScoringRunChunk.objects.filter(job_id=job.pk, index=index)
        data = bytes(chunk.values_list("data", flat=True).get())
        digest.update(data)
        yield data
    if digest.hexdigest() != job.run_sha256:
        raise exports.ChecksumMismatch(
            f"the stored run of job {job.pk} does not match its sha256 {job.run_sha256}"
        )


@contextmanager
def stored_run_file(job: ScoringJob) -> Iterator[Path]:
    """The job's stored run in a temporary file (checksum verified), deleted on exit."""
    with spooled_run(iter_run_chunks(job)) as path:
        yield path


@dataclass(slots=True)
class QueryRow:
    """One per-query (or per-answer) result before it is stored as a ScoreQueryResult."""

    query_id: str
    domain: str
    task_type: str
    metrics: dict
    retrieved: list
    primary: float | None
    detail: dict = field(default_factory=dict)


@dataclass
class Outcome:
    """A job's results; ``per_query`` is iterated once, when the results are stored."""

    per_query: Iterable[QueryRow]
    aggregates: list[ScoreAggregate]
    summary: dict
