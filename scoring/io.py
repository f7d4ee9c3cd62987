r"""Readers for relevance judgements (qrels) and system runs.

Formats (detected from the content; pass ``fmt=`` to override):

qrels
    ``trec``   ``qid iter docid rel`` per line, whitespace separated, ``rel`` an integer.
    ``jsonl``  one ``{"query_id", "doc_id", "relevance"}`` object per line.
    ``gold``   the workbench's gold JSONL export: one triple per line; query id = ``id``, the
               single relevant document = ``expected_block.block_id`` (relevance 1).
    ``unrag``  Unrag dataset JSON v1 (``"version": "1"``); query id = ``queries[].id``, relevant
               documents = ``queries[].relevant.sourceIds`` (relevance 1 each). A query with an
               empty ``sourceIds`` list is kept as a query with no relevant documents.
run
    ``trec``   ``qid Q0 docid rank score tag`` per line; the rank column is ignored.
    ``jsonl``  one ``{"query_id", "results": [{"doc_id", "score"}, ...]}`` object per line.

Every reader accepts a path (``str`` / ``os.PathLike``), a text or binary file object, or an
iterable of lines, and raises :class:`scoring.errors.InputError` naming the file, the 1-based line
and the problem. A document listed twice for one query is an input error in both qrels and runs.

TREC files are parsed by pyarrow's multi-threaded CSV reader when they are plainly single-space
separated; any other layout (tabs, runs of spaces, leading or trailing blanks) or any doubt
(an empty field, an unparsable number, a non-finite score, invalid UTF-8) sends the file to
pandas' C parser with ``sep=r"\s+"``, one block of whole lines (``_BLOCK`` bytes) at a time, and
only when that finds a problem is the file re-scanned line by line to report the exact line.
JSONL runs are read line by line. The run and TREC qrels readers of a path hold a bounded block
of the file and a bounded batch of rows as Python objects (``_BATCH``), never the whole text:
rows become Arrow and NumPy column chunks batch by batch, concatenated at the end (JSONL and gold
qrels, which are small, keep a Python object per judgement; an Unrag dataset, one JSON document,
is read whole). The error model is that of reading
the file whole: text that is not UTF-8 anywhere is reported first, else the first bad line or
repeated document in file order (on an error the file is read again to find which comes first).
Duplicate (query, document) pairs are found by sorting 64-bit hashes; a suspected duplicate is
confirmed on the strings, then the file is re-read tracking only the confirmed pairs to name the
line. A file object or an iterable of lines is read whole first (pass a path to stream).

``Qrels`` and ``Run`` keep ids compact: query ids as integer codes into the distinct ids,
document ids as one Arrow string array (no Python object per row). ``.query_id`` and ``.doc_id``
build NumPy object arrays of ``str`` on first access.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from scoring import _ids
from scoring._ids import release_unused_memory  # noqa: F401  (public: scoring jobs call it)
from scoring.errors import InputError

QRELS_FORMATS = ("trec", "jsonl", "gold", "unrag")
RUN_FORMATS = ("trec", "jsonl")

Source = str | os.PathLike | io.IOBase | Iterable[str]

# Bytes (or characters) read at a time, and rows gathered as Python objects before they become
# Arrow/NumPy columns: what a reader holds besides the columns it builds.
_BLOCK = 1 << 18
_BATCH = 1 << 12


class _IdColumns:
    """Storage shared by :class:`Qrels` and :class:`Run`: no Python object per row.

    Query ids are integer codes into their distinct values; document ids are one Arrow string
    array. ``query_id`` / ``doc_id`` build NumPy object arrays only when asked for (and cache
    them); the metric code works on the compact form.
    """

    __slots__ = ("_query_codes", "_query_values", "_doc_ids", "_cache")

    def _set(self, **values: Any) -> None:
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def _set_ids(self, query_id: Any, doc_id: Any) -> None:
        codes, distinct = _ids.factorize(query_id)
        self._set(
            _query_codes=codes, _query_values=distinct, _doc_ids=_ids.as_strings(doc_id), _cache={}
        )
        if len(self._query_codes) != len(self._doc_ids):
            raise ValueError("query_id and doc_id must have the same length")

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __len__(self) -> int:
        return len(self._doc_ids)

    @property
    def query_id(self) -> np.ndarray:
        """Query id of every row (object array of ``str``, built on first access)."""
        if "query_id" not in self._cache:
            self._cache["query_id"] = _ids.to_objects(self._query_values)[self._query_codes]
        return self._cache["query_id"]

    @property
    def doc_id(self) -> np.ndarray:
        """Document id of every row (object array of ``str``, built on first access)."""
        if "doc_id" not in self._cache:
            self._cache["doc_id"] = _ids.to_objects(self._doc_ids)
        return self._cache["doc_id"]

    def _doc_fingerprints(self) -> np.ndarray:
        """64-bit hash of every document id (see :mod:`scoring._ids`)."""
        return _ids.fingerprint(self._doc_ids)

    def _pair_keys(self) -> np.ndarray:
        """64-bit hash of every row's (query code, document id), computed once.

        Shared by the duplicate check and the qrels join (which maps qrels queries to these
        codes), so 10 M document ids are hashed once.
        """
        if "pair_keys" not in self._cache:
            self._cache["pair_keys"] = _ids.string_pair_keys(self._query_codes, self._doc_ids)
        return self._cache["pair_keys"]


class Qrels(_IdColumns):
    """Relevance judgements in columnar form.

    ``query_id``, ``doc_id`` (object arrays of str) and ``relevance`` (int64) have one entry per
    judgement. ``queries`` lists every query the source declares, including queries without any
    judgement row (an Unrag query with empty ``sourceIds``), in first-seen order.
    ``cutoffs`` (``{query: k}`` or ``None``) is how many results each query retrieves and
    scores — Unrag's ``topK`` (per query, else ``defaults.topK``; seed 001: the k of recall@k);
    ``default_k`` is the dataset's ``defaults.topK``. Immutable.
    """

    __slots__ = ("relevance", "queries", "source", "cutoffs", "default_k")

    def __init__(
        self,
        query_id: Any,
        doc_id: Any,
        relevance: Any,
        queries: Any,
        source: str = "<qrels>",
        *,
        cutoffs: dict[str, int] | None = None,
        default_k: int | None = None,
    ) -> None:
        self._set_ids(query_id, doc_id)
        self._set(
            relevance=np.asarray(relevance),
            queries=np.asarray(queries, dtype=object),
            source=source,
            cutoffs=cutoffs or None,
            default_k=default_k,
        )

    @classmethod
    def _from_columns(
        cls,
        query_codes: np.ndarray,
        query_values: pa.Array,
        doc_ids: pa.Array,
        relevance: np.ndarray,
        source: str,
    ) -> Qrels:
        self = cls.__new__(cls)
        self._set(
            _query_codes=query_codes,
            _query_values=query_values,
            _doc_ids=doc_ids,
            _cache={"declared": query_values},
            relevance=relevance,
            queries=_ids.to_objects(query_values),
            source=source,
            cutoffs=None,
            default_k=None,
        )
        return self

    def _declared_queries(self) -> pa.Array:
        """``queries`` as an Arrow string array."""
        if "declared" not in self._cache:
            self._cache["declared"] = _ids.as_strings(self.queries)
        return self._cache["declared"]

    def __repr__(self) -> str:
        return f"Qrels({len(self)} judgements, {len(self.queries)} queries, source={self.source!r})"

    @classmethod
    def from_dict(cls, data: dict[str, dict[str, int]], *, source: str = "<qrels>") -> Qrels:
        """Build from ``{query_id: {doc_id: relevance}}`` (the pytrec_eval shape)."""
        qids = [q for q, docs in data.items() for _ in docs]
        dids = [d for docs in data.values() for d in docs]
        rels = [int(r) for docs in data.values() for r in docs.values()]
        return cls(
            query_id=np.array(qids, dtype=object),
            doc_id=np.array(dids, dtype=object),
            relevance=np.array(rels, dtype=np.int64),
            queries=np.array(list(data), dtype=object),
            source=source,
        )


class Run(_IdColumns):
    """A system run in columnar form: one entry per (query, document, score) row. Immutable.

    Row order carries no meaning: rankings are derived from scores (see
    :mod:`scoring.retrieval`).
    """

    __slots__ = ("score", "source")

    def __init__(self, query_id: Any, doc_id: Any, score: Any, source: str = "<run>") -> None:
        self._set_ids(query_id, doc_id)
        self._set(score=np.asarray(score, dtype=np.float64), source=source)

    @classmethod
    def _from_columns(
        cls,
        query_codes: np.ndarray,
        query_values: pa.Array,
        doc_ids: pa.Array,
        score: np.ndarray,
        source: str,
    ) -> Run:
        self = cls.__new__(cls)
        self._set(
            _query_codes=query_codes,
            _query_values=query_values,
            _doc_ids=doc_ids,
            _cache={},
            score=score,
            source=source,
        )
        return self

    def __repr__(self) -> str:
        return f"Run({len(self)} rows, source={self.source!r})"

    @classmethod
    def from_dict(cls, data: dict[str, dict[str, float]], *, source: str = "<run>") -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (the pytrec_eval shape)."""
        qids = [q for q, docs in data.items() for _ in docs]
        dids = [d for docs in data.values() for d in docs]
        scores = [float(s) for docs in data.values() for s in docs.values()]
        return cls(
            query_id=np.array(qids, dtype=object),
            doc_id=np.array(dids, dtype=object),
            score=np.array(scores, dtype=np.float64),
            source=source,
        )


# ---------------------------------------------------------------------------------------------
# Source handling


def _source_name(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    return str(getattr(source, "name", "<input>"))


def _materialise(source: Any) -> tuple[str, str | io.StringIO]:
    """Return ``(name, path_or_buffer)``; paths stay paths so pandas can read them directly."""
    name = _source_name(source)
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise InputError(name, None, "file not found")
        return name, os.fspath(path)
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, bytes):
            data = _decode(name, data)
        return name, io.StringIO(data)
    if isinstance(source, bytes):
        return "<input>", io.StringIO(_decode("<input>", source))
    try:
        lines = list(source)
    except TypeError:
        raise InputError(name, None, f"cannot read input of type {type(source).__name__}") from None
    text = "".join(
        (ln.decode("utf-8") if isinstance(ln, bytes) else ln).rstrip("\r\n") + "\n" for ln in lines
    )
    return name, io.StringIO(text)


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(name, line, _NOT_UTF8) from None


def _read_text(name: str, handle: str | io.StringIO) -> str:
    """The whole text (only an Unrag dataset, one JSON document, is read this way)."""
    if isinstance(handle, io.StringIO):
        return handle.getvalue()
    with open(handle, "rb") as fh:
        return _decode(name, fh.read())


def _byte_blocks(handle: str | io.StringIO) -> Iterator[bytes]:
    """The source's UTF-8 bytes, ``_BLOCK`` at a time."""
    if isinstance(handle, io.StringIO):
        text = handle.getvalue()
        for lo in range(0, len(text), _BLOCK):
            yield text[lo : lo + _BLOCK].encode("utf-8", errors="surrogatepass")
        return
    with open(handle, "rb") as fh:
        while block := fh.read(_BLOCK):
            yield block


def _text_blocks(name: str, handle: str | io.StringIO) -> Iterator[str]:
    """The source's text, one block at a time. Raises InputError naming the line of the
    first byte that is not UTF-8, as decoding the file whole would."""
    if isinstance(handle, io.StringIO):
        text = handle.getvalue()
        for lo in range(0, len(text), _BLOCK):
            yield text[lo : lo + _BLOCK]
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines = 0
    with open(handle, "rb") as fh:
        while True:
            block = fh.read(_BLOCK)
            pending = decoder.getstate()[0]  # an unfinished character from the last block
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                # ``pending`` holds no newline (bytes >= 0x80 only).
                at = max(0, exc.start - len(pending))
                line = newlines + block[:at].count(b"\n") + 1
                raise InputError(name, line, _NOT_UTF8) from None
            newlines += block.count(b"\n")
            if text:
                yield text
            if not block:
                return


def _check_text(name: str, handle: str | io.StringIO) -> None:
    """Raise InputError if the source is not UTF-8 text (a whole-file read failed first)."""
    for _ in _text_blocks(name, handle):
        pass


def _lines(name: str, handle: str | io.StringIO) -> Iterator[tuple[int, str]]:
    """``(1-based line, text)`` exactly as ``enumerate(text.splitlines(), 1)`` gives them
    (every line boundary ``str`` knows, a CRLF split across blocks included), one block of
    text in memory at a time."""
    carry, lineno = "", 0
    for text in _text_blocks(name, handle):
        pieces = (carry + text).splitlines(keepends=True)
        # The last piece may continue in the next block (or be a CR before its LF).
        carry = pieces.pop() if pieces else ""
        for piece in pieces:
            lineno += 1
            yield lineno, piece[:-2] if piece.endswith("\r\n") else piece[:-1]
    for piece in carry.splitlines():
        lineno += 1
        yield lineno, piece


def _line_blocks(handle: str | io.StringIO) -> Iterator[bytes]:
    """The source's bytes in blocks of whole ``\\n``-terminated lines (the last may lack it)."""
    carry = b""
    for block in _byte_blocks(handle):
        cut = block.rfind(b"\n") + 1
        if not cut:
            carry += block
            continue
        yield carry + block[:cut]
        carry = block[cut:]
    if carry:
        yield carry


_PEEK = 65536


def _peek(handle: str | io.StringIO, size: int = _PEEK) -> str:
    if isinstance(handle, io.StringIO):
        return handle.getvalue()[:size]
    with open(handle, "rb") as fh:
        return fh.read(size).decode("utf-8", errors="replace")


def _first_line(name: str, handle: str | io.StringIO) -> str:
    """The first non-blank line, without its leading whitespace."""
    lines = _lines(name, handle)
    try:
        return next((text for _, text in lines if text.strip()), "").lstrip()
    finally:
        lines.close()


def _detect(name: str, handle: str | io.StringIO, kind: str) -> str:
    head = _peek(handle)
    stripped = head.lstrip()
    if not stripped:
        raise InputError(name, None, f"the {kind} file is empty")
    if stripped[0] not in "{[":
        return "trec"
    first_line = stripped.splitlines()[0]
    if first_line == stripped.rstrip("\r\n"):
        # The first line may go on past the peek (a JSONL run of one long line per query).
        first_line = _first_line(name, handle)
    try:
        obj = json.loads(first_line)
    except json.JSONDecodeError:
        # A JSON document spread over several lines: only Unrag datasets look like that.
        return "unrag"
    if isinstance(obj, dict):
        if "queries" in obj or "version" in obj:
            return "unrag"
        if "expected_block" in obj:
            return "gold"
    return "jsonl"


# ---------------------------------------------------------------------------------------------
# TREC


_TREC_LAYOUT = {
    "qrels": ("qid", "iter", "docid", "rel"),
    "run": ("qid", "Q0", "docid", "rank", "score", "tag"),
}


def _arrow_trec(name: str, handle: str | io.StringIO, kind: str) -> pa.Table | None:
    """Fast path: pyarrow's multi-threaded CSV reader, one space between fields.

    Returns ``None`` whenever the file is not plainly single-space separated or anything looks
    wrong (tabs, runs of spaces, leading/trailing blanks, an empty field, an unparsable number,
    a non-finite score, invalid UTF-8); the caller then takes the pandas path, which accepts
    any whitespace and, on bad input, re-scans the file for the exact line.
    """
    columns = _TREC_LAYOUT[kind]
    labels = list(columns)
    # Query ids repeat: dictionary-encoded while parsing. The other text columns are plain
    # strings (cheaper than dictionaries); they are read only to check that no field is empty.
    types: dict[str, pa.DataType] = {c: pa.string() for c in labels}
    types["qid"] = pa.dictionary(pa.int32(), pa.string())
    types[labels[3] if kind == "qrels" else "score"] = (
        pa.int64() if kind == "qrels" else pa.float64()
    )
    source: Any = handle
    if isinstance(handle, io.StringIO):
        source = pa.py_buffer(handle.getvalue().encode("utf-8"))
    try:
        table = pa_csv.read_csv(
            source,
            read_options=pa_csv.ReadOptions(column_names=labels, block_size=1 << 22),
            parse_options=pa_csv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=types,
                null_values=[""],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
            memory_pool=_ids.memory_pool(),
        )
    except (pa.ArrowException, UnicodeError):
        return None
    if table.num_rows == 0:
        return None
    numeric = table.column(3 if kind == "qrels" else 4)
    if numeric.null_count:
        return None
    if kind == "run" and not all(np.isfinite(_ids.numbers(c)).all() for c in numeric.chunks):
        return None
    # A field that is empty or holds other whitespace means the file needs pandas' \s+ split.
    pieces = []
    for label in labels:
        column = table.column(label)
        if pa.types.is_dictionary(column.type):
            pieces += [chunk.dictionary for chunk in column.chunks]
        elif pa.types.is_string(column.type):
            pieces += column.chunks
    if not all(_ids.in_threads(_plain_field_values, pieces)):
        return None
    return table


def _plain_field_values(values: pa.Array) -> bool:
    """No empty value and no tab, vertical tab or form feed inside a value."""
    if len(values) == 0:
        return True
    offsets, data = _ids._layout(values)
    if np.diff(offsets).min() == 0:
        return False
    used = data[int(offsets[0]) : int(offsets[-1])]
    # Slice by slice, so the temporaries stay small whatever the column's size.
    return not any(np.any((used[lo:hi] - np.uint8(9)) <= 3) for lo, hi in _ids.chunks(len(used)))


# Rows of a file in file order: (line, query id, document id, value), raising InputError for
# the first malformed line (what a line-by-line read meets first).
RowReader = Callable[[str, "str | io.StringIO"], Iterator[tuple[int, str, str, Any]]]

_NOT_UTF8 = "not valid UTF-8 text"
_NON_BLANK = re.compile(rb"\S")


class _Rows:
    """Rows gathered into Arrow/NumPy column chunks, ``_BATCH`` rows at a time: no Python
    object per row outlives its batch. Query ids are dictionary-encoded chunk by chunk."""

    def __init__(self, dtype: type) -> None:
        self.dtype = dtype
        self._batch: tuple[list, list, list] = ([], [], [])
        self._queries: list[pa.Array] = []
        self._docs: list[pa.Array] = []
        self._values: list[np.ndarray] = []
        self._rows = 0

    def __len__(self) -> int:
        return self._rows + len(self._batch[1])

    def add(self, qid: str, did: str, value: Any) -> None:
        qids, dids, values = self._batch
        qids.append(qid)
        dids.append(did)
        values.append(value)
        if len(dids) >= _BATCH:
            self._flush()

    def add_columns(self, qids: Any, dids: Any, values: Any) -> None:
        self._flush()
        self._append(qids, dids, values)

    def _flush(self) -> None:
        qids, dids, values = self._batch
        if dids:
            self._batch = ([], [], [])
            self._append(qids, dids, values)

    def _append(self, qids: Any, dids: Any, values: Any) -> None:
        docs = _ids.as_strings(dids)
        self._queries.append(pc.dictionary_encode(_ids.as_strings(qids)))
        self._docs.append(docs)
        self._values.append(np.asarray(values).astype(self.dtype, copy=False))
        self._rows += len(docs)

    def columns(self) -> tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]:
        """``(query codes, distinct query ids, document ids, values)``; the chunks are let go."""
        self._flush()
        queries, docs, values = self._queries, self._docs, self._values
        self._queries, self._docs, self._values = [], [], []
        if not docs:
            empty = pa.array([], type=pa.string())
            return np.zeros(0, dtype=np.int64), empty, empty, np.zeros(0, dtype=self.dtype)
        codes, distinct = _ids.factorize(pa.chunked_array(queries))
        del queries
        doc_ids = _ids.as_strings(pa.chunked_array(docs))
        del docs
        return codes, distinct, doc_ids, np.concatenate(values)

    def table(self, name: str) -> Run:
        return Run._from_columns(*self.columns(), name)


def _repeated_keys(keys: np.ndarray) -> np.ndarray:
    ordered = np.sort(keys)
    return ordered[1:][ordered[1:] == ordered[:-1]]


def _duplicate_pairs(table: _IdColumns) -> set[tuple[str, str]]:
    """The (query, document) pairs listed more than once.

    Sorting 64-bit hashes of (query, document) finds candidate pairs; candidates are confirmed
    on the strings, so a hash collision never raises a false error.
    """
    if len(table) < 2:
        return set()
    keys = table._pair_keys()
    # One sort on one thread: splitting the keys in two halves for two threads cost more than
    # it saved (10 M keys on a quiet machine: 0.32 s split, 0.19 s in one sort; BENCHMARKS.md).
    repeated = _repeated_keys(keys)
    if not len(repeated):
        return set()
    rows = np.flatnonzero(np.isin(keys, np.unique(repeated)))
    qids = _ids.take(table._query_values, table._query_codes[rows]).to_pylist()
    docs = _ids.take(table._doc_ids, rows).to_pylist()
    seen: set[tuple[str, str]] = set()
    twice: set[tuple[str, str]] = set()
    for pair in zip(qids, docs, strict=True):
        (twice if pair in seen else seen).add(pair)
    return twice


def _check_no_duplicates(
    name: str, handle: str | io.StringIO, table: _IdColumns, rows_of: RowReader
) -> None:
    """Raise (with the line) if a document is listed twice for one query: the duplicated pairs
    are found on the columns, then the file is read again, tracking only those pairs, for the
    first line that repeats one."""
    pairs = _duplicate_pairs(table)
    if not pairs:
        return
    seen: set[tuple[str, str]] = set()
    for lineno, qid, did, _ in rows_of(name, handle):
        if (qid, did) in pairs:
            if (qid, did) in seen:
                raise InputError(
                    name, lineno, f"document {did!r} is listed twice for query {qid!r}"
                )
            seen.add((qid, did))
    raise InputError(name, None, "a document is listed twice for one query")


def _raise_problem(name: str, handle: str | io.StringIO, rows_of: RowReader, dtype: type) -> None:
    """The error path: raise what reading the whole file line by line meets first — text that
    is not UTF-8 anywhere in it, else the first malformed line or document listed twice, in
    file order. Reads the file again (twice when a document is listed twice), one batch of rows
    as Python objects at a time. Returns when it finds nothing wrong."""
    _check_text(name, handle)
    rows = _Rows(dtype)
    error = None
    try:
        for _, qid, did, value in rows_of(name, handle):
            rows.add(qid, did, value)
    except InputError as exc:
        error = exc
    _check_no_duplicates(name, handle, rows.table(name), rows_of)
    if error is not None:
        raise error


@contextmanager
def _text_errors_first(name: str, handle: str | io.StringIO) -> Iterator[None]:
    """A problem met while streaming is raised only once the whole source is known to be UTF-8
    text: reading the file whole reported text that is not UTF-8 before anything else."""
    try:
        yield
    except InputError as exc:
        if exc.message != _NOT_UTF8:
            _check_text(name, handle)
        raise


def _trec_rows(kind: str) -> RowReader:
    """Reads a TREC file line by line, with the first bad line's problem."""
    ncols = len(_TREC_LAYOUT[kind])
    layout = " ".join(_TREC_LAYOUT[kind])

    def rows(name: str, handle: str | io.StringIO) -> Iterator[tuple[int, str, str, Any]]:
        for lineno, raw in _lines(name, handle):
            fields = raw.split()
            if not fields:
                continue
            if len(fields) != ncols:
                raise InputError(
                    name, lineno, f"expected {ncols} fields ({layout}), found {len(fields)}"
                )
            if kind == "qrels":
                try:
                    value: Any = int(fields[3])
                except ValueError:
                    raise InputError(
                        name, lineno, f"relevance must be an integer, got {fields[3]!r}"
                    ) from None
            else:
                try:
                    value = float(fields[4])
                except ValueError:
                    raise InputError(
                        name, lineno, f"score must be a number, got {fields[4]!r}"
                    ) from None
                if not math.isfinite(value):
                    raise InputError(
                        name, lineno, f"score must be a finite number, got {fields[4]!r}"
                    )
            yield lineno, fields[0], fields[2], value

    return rows


def _stream_trec(
    name: str, handle: str | io.StringIO, kind: str
) -> tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]:
    r"""Any whitespace layout: blocks of whole lines (``_BLOCK`` bytes) through pandas' C
    parser with ``sep=r"\s+"``, each block's rows turned into column chunks before the next
    is read. A block pandas cannot read, or reads with the wrong number of fields or a
    non-finite score, sends the file to the line-by-line scan that names the line."""
    import pandas as pd

    ncols = len(_TREC_LAYOUT[kind])
    # Every text column is read as text: a "category" dtype would infer numeric categories and
    # turn the query id ``07`` into ``7`` and ``2`` into ``2.0`` (ids are strings, always).
    dtypes: dict[int, Any] = dict.fromkeys(range(ncols), str)
    numeric_col = 3 if kind == "qrels" else 4
    dtypes[numeric_col] = "int64" if kind == "qrels" else "float64"
    rows = _Rows(np.int64 if kind == "qrels" else np.float64)
    rows_of = _trec_rows(kind)
    for block in _line_blocks(handle):
        if not _NON_BLANK.search(block):
            continue
        try:
            frame = pd.read_csv(
                io.BytesIO(block),
                sep=r"\s+",
                header=None,
                engine="c",
                dtype=dtypes,
                keep_default_na=False,
                na_filter=False,
                quoting=csv.QUOTE_NONE,
                skip_blank_lines=True,
                encoding="utf-8",
            )
        except (ValueError, pd.errors.ParserError):
            _raise_problem(name, handle, rows_of, rows.dtype)
            raise InputError(name, None, f"unreadable TREC {kind} file") from None
        if frame.shape[1] != ncols or (frame.iloc[:, ncols - 1].astype(object) == "").any():
            _raise_problem(name, handle, rows_of, rows.dtype)
        if kind == "run" and not np.isfinite(frame[numeric_col].to_numpy()).all():
            _raise_problem(name, handle, rows_of, rows.dtype)
        rows.add_columns(
            frame[0].to_numpy(dtype=object),
            frame[2].to_numpy(dtype=object),
            frame[numeric_col].to_numpy(),
        )
        del frame
    return rows.columns()


def _trec_columns(
    name: str, handle: str | io.StringIO, kind: str
) -> tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]:
    """``(query codes, distinct query ids, document ids, rel or score)`` of a TREC file."""
    table = _arrow_trec(name, handle, kind)
    if table is None:
        return _stream_trec(name, handle, kind)
    codes, distinct = _ids.factorize(table.column(0))
    docs = _ids.as_strings(table.column(2))
    numeric = _ids.numbers(table.column(3 if kind == "qrels" else 4))
    del table
    numeric = numeric.astype(np.int64 if kind == "qrels" else np.float64, copy=False)
    return codes, distinct, docs, numeric


def _read_trec_qrels(name: str, handle: str | io.StringIO) -> Qrels:
    codes, distinct, docs, rel = _trec_columns(name, handle, "qrels")
    qrels = Qrels._from_columns(codes, distinct, docs, rel, name)
    _check_no_duplicates(name, handle, qrels, _trec_rows("qrels"))
    return qrels


def _read_trec_run(name: str, handle: str | io.StringIO) -> Run:
    codes, distinct, docs, score = _trec_columns(name, handle, "run")
    run = Run._from_columns(codes, distinct, docs, score, name)
    _check_no_duplicates(name, handle, run, _trec_rows("run"))
    return run


# ---------------------------------------------------------------------------------------------
# JSON formats


def _json_lines(name: str, handle: str | io.StringIO) -> Iterator[tuple[int, dict]]:
    """``(line, object)`` per non-blank line, one line in memory at a time."""
    for lineno, raw in _lines(name, handle):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(name, lineno, f"invalid JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise InputError(name, lineno, "expected a JSON object")
        yield lineno, obj


def _require_str(name: str, lineno: int, obj: dict, key: str, what: str = "") -> str:
    value = obj.get(key)
    label = what or key
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise InputError(name, lineno, f"{label!r} must be a non-empty string")
    return str(value)


class _Collector:
    """Accumulates judgement rows and rejects a document repeated within one query."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.qids: list[str] = []
        self.dids: list[str] = []
        self.values: list[float] = []
        self.queries: dict[str, None] = {}
        self.seen: set[tuple[str, str]] = set()

    def add(self, lineno: int, qid: str, did: str, value: float) -> None:
        if (qid, did) in self.seen:
            raise InputError(
                self.name, lineno, f"document {did!r} is listed twice for query {qid!r}"
            )
        self.seen.add((qid, did))
        self.qids.append(qid)
        self.dids.append(did)
        self.values.append(value)


def _read_jsonl_qrels(name: str, handle: str | io.StringIO) -> Qrels:
    rows = _Collector(name)
    with _text_errors_first(name, handle):
        for lineno, obj in _json_lines(name, handle):
            qid = _require_str(name, lineno, obj, "query_id")
            did = _require_str(name, lineno, obj, "doc_id")
            rel = obj.get("relevance")
            if isinstance(rel, bool) or not isinstance(rel, int):
                raise InputError(name, lineno, f"'relevance' must be an integer, got {rel!r}")
            rows.queries.setdefault(qid)
            rows.add(lineno, qid, did, rel)
    return _qrels_from(rows)


def _read_gold_qrels(name: str, handle: str | io.StringIO) -> Qrels:
    rows = _Collector(name)
    with _text_errors_first(name, handle):
        for lineno, obj in _json_lines(name, handle):
            qid = _require_str(name, lineno, obj, "id")
            block = obj.get("expected_block")
            if not isinstance(block, dict):
                raise InputError(name, lineno, "'expected_block' must be an object")
            did = _require_str(name, lineno, block, "block_id", "expected_block.block_id")
            if qid in rows.queries:
                raise InputError(name, lineno, f"triple id {qid!r} appears twice")
            rows.queries.setdefault(qid)
            rows.add(lineno, qid, did, 1)
    return _qrels_from(rows)


def _read_unrag_qrels(name: str, handle: str | io.StringIO) -> Qrels:
    text = _read_text(name, handle)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(name, exc.lineno, f"invalid JSON: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise InputError(name, 1, "an Unrag dataset must be a JSON object")
    if doc.get("version") != "1":
        raise InputError(
            name,
            _key_line(text, "version"),
            f'unsupported Unrag dataset version {doc.get("version")!r}; expected "1"',
        )
    queries = doc.get("queries")
    if not isinstance(queries, list):
        raise InputError(name, _key_line(text, "queries"), "'queries' must be a list")
    lines = _element_lines(text, len(queries))
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InputError(name, _key_line(text, "defaults"), "'defaults' must be an object")
    default_k = defaults.get("topK")
    if default_k is not None and not _positive(default_k):
        raise InputError(
            name,
            _key_line(text, "topK"),
            f"defaults.topK must be a positive integer, got {default_k!r}",
        )
    cutoffs: dict[str, int] = {}
    rows = _Collector(name)
    for index, query in enumerate(queries):
        where = f"queries[{index}]"
        line = lines[index]
        if not isinstance(query, dict):
            raise InputError(name, line, f"{where} must be an object")
        qid = query.get("id")
        if not isinstance(qid, str) or not qid:
            raise InputError(name, line, f"{where}.id must be a non-empty string")
        if qid in rows.queries:
            raise InputError(name, line, f"{where}.id {qid!r} appears twice")
        relevant = query.get("relevant")
        source_ids = relevant.get("sourceIds") if isinstance(relevant, dict) else None
        if not isinstance(source_ids, list) or not all(
            isinstance(s, str) and s for s in source_ids
        ):
            raise InputError(
                name, line, f"{where}.relevant.sourceIds must be a list of non-empty strings"
            )
        rows.queries.setdefault(qid)
        top_k = query.get("topK", default_k)
        if top_k is not None and not _positive(top_k):
            raise InputError(name, line, f"{where}.topK must be a positive integer, got {top_k!r}")
        if top_k is not None:
            cutoffs[qid] = top_k
        for sid in source_ids:
            if (qid, sid) in rows.seen:
                raise InputError(name, line, f"{where}.relevant.sourceIds lists {sid!r} twice")
            rows.add(line or 0, qid, sid, 1)
    return _qrels_from(rows, cutoffs=cutoffs, default_k=default_k)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _key_line(text: str, key: str) -> int:
    match = re.search(rf'"{key}"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def _element_lines(text: str, count: int) -> list[int | None]:
    """1-based line on which each element of the top-level ``queries`` array starts."""
    lines: list[int | None] = [None] * count
    match = re.search(r'"queries"\s*:\s*\[', text)
    if not match:
        return lines
    decoder = json.JSONDecoder()
    pos = match.end()
    for index in range(count):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        lines[index] = text.count("\n", 0, pos) + 1
        try:
            _, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
    return lines


def _qrels_from(
    rows: _Collector, *, cutoffs: dict[str, int] | None = None, default_k: int | None = None
) -> Qrels:
    if not rows.queries:
        raise InputError(rows.name, None, "no queries found")
    return Qrels(
        query_id=np.array(rows.qids, dtype=object),
        doc_id=np.array(rows.dids, dtype=object),
        relevance=np.array(rows.values, dtype=np.int64),
        queries=np.array(list(rows.queries), dtype=object),
        source=rows.name,
        cutoffs=cutoffs,
        default_k=default_k,
    )


def _jsonl_run_rows(name: str, handle: str | io.StringIO) -> Iterator[tuple[int, str, str, Any]]:
    """Reads a JSONL run line by line: ``(line, query, document, score)`` per result, with the
    first bad line's problem (the results before a bad one on its line come first)."""
    for lineno, obj in _json_lines(name, handle):
        qid = _require_str(name, lineno, obj, "query_id")
        results = obj.get("results")
        if not isinstance(results, list):
            raise InputError(name, lineno, "'results' must be a list")
        for pos, item in enumerate(results):
            if not isinstance(item, dict):
                raise InputError(name, lineno, f"results[{pos}] must be an object")
            did = _require_str(name, lineno, item, "doc_id", f"results[{pos}].doc_id")
            score = item.get("score")
            if (
                isinstance(score, bool)
                or not isinstance(score, int | float)
                or not math.isfinite(score)
            ):
                raise InputError(
                    name, lineno, f"results[{pos}].score must be a finite number, got {score!r}"
                )
            yield lineno, qid, did, float(score)


def _read_jsonl_run(name: str, handle: str | io.StringIO) -> Run:
    """One line in memory at a time; the rows become column chunks batch by batch. On a bad
    line the file is read again for what comes first (see :func:`_raise_problem`)."""
    rows = _Rows(np.float64)
    try:
        for _, qid, did, score in _jsonl_run_rows(name, handle):
            rows.add(qid, did, score)
    except InputError:
        _raise_problem(name, handle, _jsonl_run_rows, np.float64)
        raise
    if not len(rows):
        raise InputError(name, None, "the run has no results")
    run = rows.table(name)
    _check_no_duplicates(name, handle, run, _jsonl_run_rows)
    return run


# ---------------------------------------------------------------------------------------------
# Public entry points


def detect_format(source: Source, *, kind: str = "qrels") -> str:
    """Return the format name :func:`read_qrels`/:func:`read_run` would use for ``source``."""
    name, handle = _materialise(source)
    return _detect(name, handle, kind)


def read_qrels(source: Source, *, fmt: str | None = None) -> Qrels:
    """Read relevance judgements in any supported format (see the module docstring).

    Raises :class:`InputError` (file, line, message) for unreadable or inconsistent input.
    """
    name, handle = _materialise(source)
    fmt = fmt or _detect(name, handle, "qrels")
    readers = {
        "trec": _read_trec_qrels,
        "jsonl": _read_jsonl_qrels,
        "gold": _read_gold_qrels,
        "unrag": _read_unrag_qrels,
    }
    if fmt not in readers:
        raise InputError(name, None, f"unknown qrels format {fmt!r}; use one of {QRELS_FORMATS}")
    return readers[fmt](name, handle)


def read_run(source: Source, *, fmt: str | None = None, name: str | None = None) -> Run:
    """Read a run in TREC or JSONL format (see the module docstring).

    ``name`` is the file name errors give (default: the path, or the file object's ``name``):
    a caller reading a temporary copy of an upload names the upload. Pass a path, not a file
    object, to keep a large run out of memory (a path is read in bounded blocks in every
    layout; a file object is read whole).

    Raises :class:`InputError` (file, line, message) for unreadable or inconsistent input,
    including a document listed twice for one query.
    """
    source_name, handle = _materialise(source)
    name = name or source_name
    fmt = fmt or _detect(name, handle, "run")
    readers = {"trec": _read_trec_run, "jsonl": _read_jsonl_run}
    if fmt not in readers:
        raise InputError(name, None, f"unknown run format {fmt!r}; use one of {RUN_FORMATS}")
    return readers[fmt](name, handle)


def select_queries(data: Qrels | Run, query_ids: Iterable[str]) -> Qrels | Run:
    """The rows of ``data`` whose query is in ``query_ids``, as a new object of the same type.

    For qrels the declared queries and per-query cutoffs are restricted too, and ``default_k``
    is kept. Every measure is computed query by query, so scoring the parts of a query
    partition and merging them (:func:`scoring.retrieval.merge_results`) gives the figures of
    scoring the whole, to the bit: this is how a large run is split over several workers.
    Works on the columnar form (no Python object per row).
    """
    wanted = set(query_ids)
    distinct = data._query_values.to_pylist()
    keep_code = np.fromiter((q in wanted for q in distinct), dtype=bool, count=len(distinct))
    rows = np.flatnonzero(keep_code[data._query_codes])
    kept = np.flatnonzero(keep_code)
    remap = np.full(len(distinct), -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    codes = remap[data._query_codes[rows]]
    values = _ids.take(data._query_values, kept)
    docs = _ids.take(data._doc_ids, rows)
    if isinstance(data, Run):
        return Run._from_columns(codes, values, docs, data.score[rows], data.source)
    part = Qrels._from_columns(codes, values, docs, data.relevance[rows], data.source)
    declared = np.asarray([q for q in data.queries.tolist() if q in wanted], dtype=object)
    cutoffs = {q: k for q, k in (data.cutoffs or {}).items() if q in wanted}
    part._set(queries=declared, cutoffs=cutoffs or None, default_k=data.default_k, _cache={})
    return part


def distinct_query_ids(data: Qrels | Run) -> list[str]:
    """The distinct query ids of ``data``'s rows, in first-seen order (no object per row)."""
    return data._query_values.to_pylist()


def distinct_doc_ids(data: Qrels | Run) -> list[str]:
    """The distinct document ids of ``data``'s rows (no object per row)."""
    return pc.unique(data._doc_ids).to_pylist()


def iter_distinct_doc_ids(
    data: Qrels | Run, size: int = 10_000, max_bytes: int = 1 << 18
) -> Iterator[list[str]]:
    """:func:`distinct_doc_ids` in lists of at most ``size`` ids and ``max_bytes`` of text
    (at least one id): a Python string per distinct id only for one list at a time, for a run
    whose every row names another document."""
    distinct = pc.unique(data._doc_ids)
    offsets = _ids._layout(distinct)[0] if len(distinct) else np.zeros(1, dtype=np.int64)
    lo = 0
    while lo < len(distinct):
        fits = int(np.searchsorted(offsets, offsets[lo] + max_bytes, side="right")) - 1
        hi = max(lo + 1, min(lo + size, fits))
        yield distinct.slice(lo, hi - lo).to_pylist()
        lo = hi


def arrow_columns(data: Qrels | Run) -> dict[str, pa.Array]:
    """The columns of ``data`` as Arrow arrays, without a Python object per row: ``query_id``
    (dictionary-encoded), ``doc_id`` and ``score`` (runs) or ``relevance`` (qrels). The
    constructors take them back: ``Run(**arrow_columns(run))`` is the same run."""
    indices = pa.array(np.asarray(data._query_codes, dtype=np.int64))
    columns = {
        "query_id": pa.DictionaryArray.from_arrays(indices, data._query_values),
        "doc_id": data._doc_ids,
    }
    if isinstance(data, Run):
        columns["score"] = pa.array(np.asarray(data.score, dtype=np.float64))
    else:
        columns["relevance"] = pa.array(np.asarray(data.relevance, dtype=np.int64))
    return columns
