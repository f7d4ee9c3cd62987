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
pandas' C parser with ``sep=r"\s+"``, and only when that finds a problem is the file re-scanned
line by line to report the exact line. Duplicate (query, document) pairs are found by sorting
64-bit hashes; a suspected duplicate is confirmed on the strings before the line is looked up.

``Qrels`` and ``Run`` keep ids compact: query ids as integer codes into the distinct ids,
document ids as one Arrow string array (no Python object per row). ``.query_id`` and ``.doc_id``
build NumPy object arrays of ``str`` on first access.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from scoring import _ids
from scoring.errors import InputError

QRELS_FORMATS = ("trec", "jsonl", "gold", "unrag")
RUN_FORMATS = ("trec", "jsonl")

Source = str | os.PathLike | io.IOBase | Iterable[str]


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
        raise InputError(name, line, "not valid UTF-8 text") from None


def _read_text(name: str, handle: str | io.StringIO) -> str:
    if isinstance(handle, io.StringIO):
        return handle.getvalue()
    with open(handle, "rb") as fh:
        return _decode(name, fh.read())


def _peek(handle: str | io.StringIO, size: int = 65536) -> str:
    if isinstance(handle, io.StringIO):
        return handle.getvalue()[:size]
    with open(handle, "rb") as fh:
        return fh.read(size).decode("utf-8", errors="replace")


def _detect(name: str, handle: str | io.StringIO, kind: str) -> str:
    head = _peek(handle)
    stripped = head.lstrip()
    if not stripped:
        raise InputError(name, None, f"the {kind} file is empty")
    if stripped[0] not in "{[":
        return "trec"
    first_line = stripped.splitlines()[0]
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
    for label in labels:
        column = table.column(label)
        if pa.types.is_dictionary(column.type):
            pieces = [chunk.dictionary for chunk in column.chunks]
        elif pa.types.is_string(column.type):
            pieces = column.chunks
        else:
            continue
        for piece in pieces:
            if not _plain_field_values(piece):
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


def _pandas_trec(name: str, handle: str | io.StringIO, ncols: int, kind: str) -> Any:
    r"""Slow path for any whitespace layout (pandas' C parser, ``sep=r"\s+"``)."""
    import pandas as pd

    # Every text column is read as text: a "category" dtype would infer numeric categories and
    # turn the query id ``07`` into ``7`` and ``2`` into ``2.0`` (ids are strings, always).
    dtypes: dict[int, Any] = dict.fromkeys(range(ncols), str)
    numeric_col = 3 if kind == "qrels" else 4
    dtypes[numeric_col] = "int64" if kind == "qrels" else "float64"
    if isinstance(handle, io.StringIO):
        handle.seek(0)
    try:
        frame = pd.read_csv(
            handle,
            sep=r"\s+",
            header=None,
            engine="c",
            dtype=dtypes,
            keep_default_na=False,
            na_filter=False,
            quoting=csv.QUOTE_NONE,
            skip_blank_lines=True,
        )
    except (ValueError, pd.errors.ParserError):
        _scan_trec(name, handle, ncols, kind)
        raise InputError(name, None, f"unreadable TREC {kind} file") from None
    if frame.shape[1] != ncols or (frame.iloc[:, ncols - 1].astype(object) == "").any():
        _scan_trec(name, handle, ncols, kind)
    if kind == "run" and not np.isfinite(frame[numeric_col].to_numpy()).all():
        _scan_trec(name, handle, ncols, kind)
    return frame


def _trec_columns(
    name: str, handle: str | io.StringIO, kind: str
) -> tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]:
    """``(query codes, distinct query ids, document ids, rel or score)`` of a TREC file."""
    ncols = len(_TREC_LAYOUT[kind])
    table = _arrow_trec(name, handle, kind)
    if table is not None:
        codes, distinct = _ids.factorize(table.column(0))
        docs = _ids.as_strings(table.column(2))
        numeric = _ids.numbers(table.column(3 if kind == "qrels" else 4))
        del table
    else:
        frame = _pandas_trec(name, handle, ncols, kind)
        codes, distinct = _ids.factorize(frame[0].to_numpy(dtype=object))
        docs = _ids.as_strings(frame[2].to_numpy(dtype=object))
        numeric = frame[3 if kind == "qrels" else 4].to_numpy()
    numeric = numeric.astype(np.int64 if kind == "qrels" else np.float64, copy=False)
    return codes, distinct, docs, numeric


def _check_no_duplicates(
    name: str, handle: str | io.StringIO, kind: str, table: _IdColumns
) -> None:
    """Raise (with the line) if a document is listed twice for one query.

    Sorting 64-bit hashes of (query, document) finds candidate pairs; candidates are confirmed
    on the strings, so a hash collision never raises a false error.
    """
    if len(table) < 2:
        return
    keys = table._pair_keys()
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    del ordered
    if not len(repeated):
        return
    rows = np.flatnonzero(np.isin(keys, np.unique(repeated)))
    docs = _ids.take(table._doc_ids, rows).to_pylist()
    seen: set[tuple[int, str]] = set()
    for qcode, doc in zip(table._query_codes[rows].tolist(), docs, strict=True):
        if (qcode, doc) in seen:
            _first_duplicate_line(name, handle, len(_TREC_LAYOUT[kind]), kind)
        seen.add((qcode, doc))


def _scan_trec(name: str, handle: str | io.StringIO, ncols: int, kind: str) -> None:
    """Re-read a TREC file line by line and raise an InputError for the first bad line."""
    layout = "qid iter docid rel" if kind == "qrels" else "qid Q0 docid rank score tag"
    seen: set[tuple[str, str]] = set()
    text = _read_text(name, handle)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if not fields:
            continue
        if len(fields) != ncols:
            raise InputError(
                name, lineno, f"expected {ncols} fields ({layout}), found {len(fields)}"
            )
        if kind == "qrels":
            try:
                int(fields[3])
            except ValueError:
                raise InputError(
                    name, lineno, f"relevance must be an integer, got {fields[3]!r}"
                ) from None
        else:
            try:
                score = float(fields[4])
            except ValueError:
                raise InputError(
                    name, lineno, f"score must be a number, got {fields[4]!r}"
                ) from None
            if not math.isfinite(score):
                raise InputError(name, lineno, f"score must be a finite number, got {fields[4]!r}")
        key = (fields[0], fields[2])
        if key in seen:
            raise InputError(
                name, lineno, f"document {fields[2]!r} is listed twice for query {fields[0]!r}"
            )
        seen.add(key)


def _first_duplicate_line(name: str, handle: str | io.StringIO, ncols: int, kind: str) -> None:
    _scan_trec(name, handle, ncols, kind)
    raise InputError(name, None, "a document is listed twice for one query")


def _read_trec_qrels(name: str, handle: str | io.StringIO) -> Qrels:
    codes, distinct, docs, rel = _trec_columns(name, handle, "qrels")
    qrels = Qrels._from_columns(codes, distinct, docs, rel, name)
    _check_no_duplicates(name, handle, "qrels", qrels)
    return qrels


def _read_trec_run(name: str, handle: str | io.StringIO) -> Run:
    codes, distinct, docs, score = _trec_columns(name, handle, "run")
    run = Run._from_columns(codes, distinct, docs, score, name)
    _check_no_duplicates(name, handle, "run", run)
    return run


# ---------------------------------------------------------------------------------------------
# JSON formats


def _json_lines(name: str, handle: str | io.StringIO) -> Iterable[tuple[int, dict]]:
    text = _read_text(name, handle)
    for lineno, raw in enumerate(text.splitlines(), start=1):
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


def _read_jsonl_run(name: str, handle: str | io.StringIO) -> Run:
    rows = _Collector(name)
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
            rows.add(lineno, qid, did, float(score))
    if not rows.qids:
        raise InputError(name, None, "the run has no results")
    return Run(
        query_id=np.array(rows.qids, dtype=object),
        doc_id=np.array(rows.dids, dtype=object),
        score=np.array(rows.values, dtype=np.float64),
        source=name,
    )


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
    object, to keep a large TREC run out of memory (a file object is read whole).

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
