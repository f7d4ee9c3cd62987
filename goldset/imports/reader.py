"""Reading uploaded files: one place for decoding, BOM, NUL, NaN/Infinity and nesting depth.

Every importer reads through these functions, from a *source* that can be opened more than once
(bytes or text in memory, a path on disk, or an upload stored in the database), so a file is
validated in one streaming pass and written in a second without ever being held whole:

* :func:`iter_json_lines` yields ``(line number, object)`` per non-blank JSONL line, holding one
  line at a time;
* :func:`iter_json_array_items` yields ``(index, item)`` from one array of a single JSON document
  (the Unrag dataset file's ``documents``), holding one item at a time (ijson);
* :func:`iter_text_lines` yields ``(line number, text)`` (TREC runs).

Treated the same everywhere: a UTF-8 byte order mark is accepted and stripped; bytes that are not
UTF-8 are rejected with their line; NUL characters (raw or ``\\u0000``) are rejected with the
field that holds them, as are unpaired surrogate escapes (``"\\ud800"``, not UTF-8 text);
``NaN``/``Infinity``, and numbers too large to be finite (``1e400``), are rejected with their
field; nesting deeper than :data:`MAX_DEPTH` is rejected before the parser could recurse that
deep.
"""

import hashlib
import io
import json
import re
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, Protocol

import ijson
from ijson.common import ObjectBuilder

from goldset.imports.errors import Problems

BOM = b"\xef\xbb\xbf"
MAX_DEPTH = 32
PROGRESS_EVERY = 2000
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class ByteSource(Protocol):
    """A file that can be opened (again) as a binary stream."""

    name: str
    size: int
    sha256: str

    def open(self) -> BinaryIO: ...


class MemorySource:
    def __init__(self, data: bytes | str, name: str = ""):
        self.data = data.encode("utf-8") if isinstance(data, str) else data
        self.name = name
        self.size = len(self.data)

    def open(self) -> BinaryIO:
        return io.BytesIO(self.data)

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class PathSource:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.name = self.path.name
        self.size = self.path.stat().st_size

    def open(self) -> BinaryIO:
        return self.path.open("rb")

    @cached_property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        with self.path.open("rb") as stream:
            while block := stream.read(1 << 20):
                digest.update(block)
        return digest.hexdigest()


def as_source(value, *, name: str = "") -> ByteSource:
    """bytes/str → in memory; a Path → the file; anything with ``open()`` is already a source."""
    if isinstance(value, (bytes, str)):
        return MemorySource(value, name)
    if isinstance(value, Path):
        return PathSource(value)
    if hasattr(value, "open"):
        return value
    raise TypeError(f"not an import source: {type(value).__name__}")


class NonFinite:
    """Stands in for NaN/Infinity while parsing, so the field holding it can be named."""

    def __init__(self, token: str):
        self.token = token

    def __repr__(self) -> str:
        return self.token


def open_text_stream(stream: BinaryIO) -> BinaryIO:
    """Skip a leading UTF-8 BOM (accepted and stripped everywhere)."""
    head = stream.read(len(BOM))
    if head != BOM:
        return _Prefixed(head, stream)
    return stream


class _Prefixed(io.RawIOBase):
    """A stream with a few already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def nesting_depth(line: str) -> int:
    """The deepest bracket nesting of a JSON text, ignoring brackets inside strings."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', line)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _encodable(text: str) -> bool:
    """False for a string holding a lone surrogate (JSON's ``"\\ud800"``): not text in UTF-8,
    and PostgreSQL would refuse it when the rows are written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _may_hold_surrogate(line: str) -> bool:
    return "\\ud" in line or "\\uD" in line


def find_bad_values(value, path: str = "") -> Iterator[tuple[str, str]]:
    """(field path, message) for every NUL character and NaN/Infinity inside ``value``
    (iteratively: the depth is bounded before this runs, but a stack costs nothing)."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{where}.{key}" if where else str(key)
                if "\x00" in key:
                    yield where or "(object key)", "a key contains a NUL character"
                elif not _encodable(key):
                    yield where or "(object key)", "a key contains an unpaired surrogate escape"
                stack.append((child_path, child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in enumerate(item))
        elif isinstance(item, str) and "\x00" in item:
            yield where, "contains a NUL character"
        elif isinstance(item, str) and not _encodable(item):
            yield where, "contains an unpaired surrogate escape (\\ud800–\\udfff), not text"
        elif isinstance(item, NonFinite) or (
            isinstance(item, float) and (item != item or item in (float("inf"), float("-inf")))
        ):
            yield where, f"{item!r} is not allowed (expected a finite number)"


_INFINITE = (float("inf"), float("-inf"))
_MAX_INT_DIGITS = 4000


def _number_token(token: str) -> str:
    """A number as a problem names it (a literal of thousands of digits by its length)."""
    return token if len(token) <= 40 else f"a number of {len(token)} characters"


def _int_or_flagged(flag):
    def parse(token: str):
        return flag(_number_token(token)) if len(token) > _MAX_INT_DIGITS else int(token)

    return parse


def parse_json_line(line: str, lineno: int, problems: Problems):
    """Parse one JSON text or record why not; returns the value or ``None``."""
    if "\x00" in line:
        problems.add(lineno, "", "contains a NUL character")
        return None
    if line.count("[") + line.count("{") > MAX_DEPTH and nesting_depth(line) > MAX_DEPTH:
        problems.add(lineno, "", f"nested deeper than {MAX_DEPTH} levels")
        return None
    flagged = []

    def constant(token):
        flagged.append(token)
        return NonFinite(token)

    def number(token):
        # A finite literal such as 1e400 parses to inf without a NaN/Infinity token: it is
        # flagged here, or it would reach a JSON column (PostgreSQL refuses Infinity) or a score.
        value = float(token)
        if value in _INFINITE:
            return constant(_number_token(token))
        return value

    try:
        value = json.loads(line, parse_constant=constant, parse_float=number)
    except json.JSONDecodeError as exc:
        problems.add(lineno, "", f"not valid JSON ({exc.msg} at column {exc.colno})")
        return None
    except RecursionError:
        problems.add(lineno, "", f"nested deeper than {MAX_DEPTH} levels")
        return None
    except ValueError:
        # An integer longer than Python converts (sys.int_info.default_max_str_digits): parsed
        # again with such integers flagged, so the field holding one is named.
        value = json.loads(
            line, parse_constant=constant, parse_float=number, parse_int=_int_or_flagged(constant)
        )
    if flagged or "\\u0000" in line or _may_hold_surrogate(line):
        bad = list(find_bad_values(value))
        for field, message in bad:
            problems.add(lineno, field, message)
        if bad:
            return None
    return value


def iter_text_lines(
    source: ByteSource, problems: Problems, *, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[int, str]]:
    """(line number, text without the line break) for every line, decoded as UTF-8, BOM
    stripped. Undecodable lines become problems and are skipped."""
    with source.open() as raw:
        consumed = 0
        for lineno, data in enumerate(_lines(open_text_stream(raw)), start=1):
            consumed += len(data)
            if progress is not None and lineno % PROGRESS_EVERY == 0:
                progress(consumed)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.add(lineno, "", f"not valid UTF-8 text (byte {exc.start + 1} of the line)")
                continue
            yield lineno, text.rstrip("\r\n")
        if progress is not None:
            progress(consumed)


def _buffered(stream):
    return stream if isinstance(stream, io.BufferedIOBase) else io.BufferedReader(stream)


def _lines(stream) -> Iterator[bytes]:
    yield from _buffered(stream)


def iter_json_lines(
    source: ByteSource,
    problems: Problems,
    *,
    what: str = "record",
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank JSONL line that is a valid JSON object.
    Every other line becomes a problem; an empty file is one problem."""
    seen_any = False
    for lineno, text in iter_text_lines(source, problems, progress=progress):
        if not text.strip():
            continue
        seen_any = True
        value = parse_json_line(text, lineno, problems)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.add(lineno, "", f"expected a JSON object (one {what} per line)")
            continue
        yield lineno, value
    if not seen_any and not problems:
        problems.add(1, "", f"the file is empty (expected one {what} per line)")


def iter_json_array_items(
    source: ByteSource,
    problems: Problems,
    *,
    array: str,
    header: dict,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, object]]:
    """(index, item) for each item of the top-level ``array`` of one JSON document, parsed
    incrementally; top-level scalar members are put into ``header`` as they are met. Problems
    are named by position (``documents[3].content``)."""
    item_prefix = f"{array}.item"
    with source.open() as raw:
        stream = open_text_stream(raw)
        index, depth, builder = -1, 0, None
        prefix, event, value = "", "", None
        try:
            for prefix, event, value in ijson.parse(stream, use_float=True):
                if event in ("start_map", "start_array"):
                    depth += 1
                    if depth > MAX_DEPTH:
                        where = f"{array}[{index}]" if builder is not None else ""
                        problems.add(None, where, f"nested deeper than {MAX_DEPTH} levels")
                        return
                elif event in ("end_map", "end_array"):
                    depth -= 1
                if builder is not None:
                    builder.event(event, value)
                    if depth == 2 and event in ("end_map", "end_array"):
                        yield index, _checked(builder.value, f"{array}[{index}]", problems)
                        builder = None
                        if progress is not None and index % PROGRESS_EVERY == 0:
                            progress(raw.tell() if hasattr(raw, "tell") else 0)
                elif prefix == item_prefix:
                    index += 1
                    if event in ("start_map", "start_array"):
                        builder = ObjectBuilder()
                        builder.event(event, value)
                    else:
                        yield index, _checked(value, f"{array}[{index}]", problems)
                elif depth == 1 and "." not in prefix and prefix and event not in ("map_key",):
                    header[prefix] = value
        except (ijson.JSONError, UnicodeDecodeError, ValueError) as exc:
            # NaN, 1e400 or a too long integer stop the parser at a value: the member whose key
            # was read last is the field, as a JSONL importer would name it.
            where = _position(array, index, prefix, event, value) if index >= 0 else ""
            problems.add(None, where, f"not valid JSON ({_short(exc)})")
            return
        if progress is not None:
            progress(raw.tell() if hasattr(raw, "tell") else 0)


def _position(array: str, index: int, prefix: str, event: str, value) -> str:
    """``documents[3].metadata.authority`` from ijson's last event (prefix and map key) inside
    item ``index``; items of inner arrays have no index in ijson's prefix (``[]``)."""
    path = f"{prefix}.{value}" if event == "map_key" else prefix
    head = f"{array}.item"
    if not (path == head or path.startswith(head + ".")):
        return f"{array}[{index}]"
    parts = path[len(head) :].split(".")[1:]
    return f"{array}[{index}]" + "".join("[]" if part == "item" else f".{part}" for part in parts)


def _checked(value, where: str, problems: Problems):
    bad = list(find_bad_values(value, where))
    for field, message in bad:
        problems.add(None, field, message)
    return None if bad else value


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def sniff_single_document(source: ByteSource, *, key: str, unless: str) -> bool:
    """Whether the file is one JSON document with a top-level ``key`` (an Unrag dataset)
    rather than JSON lines: its first line is not a whole JSON object on its own, or it is one
    with ``key`` and without ``unless``. Reads at most the first line (capped at 1 MiB)."""
    with source.open() as raw:
        first = _buffered(open_text_stream(raw)).readline(1 << 20)
    text = first.decode("utf-8", errors="replace").strip()
    if not text.startswith("{"):
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or an integer too long to convert
        return text == "{" or f'"{key}"' in text and f'"{unless}"' not in text
    return isinstance(value, dict) and key in value and unless not in value


def sniff_first_char(source: ByteSource) -> str:
    """The first non-whitespace character of the file (after a BOM), or "" when blank."""
    with source.open() as raw:
        stream = _buffered(open_text_stream(raw))
        while block := stream.read(4096):
            text = block.lstrip()
            if text:
                return text[:1].decode("ascii", errors="replace")
    return ""
