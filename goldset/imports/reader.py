"""Reading uploaded files: one place for decoding, BOM, NUL, NaN/Infinity and nesting depth.

Every importer reads through these functions, from a *source* that can be opened more than once
(bytes or text in memory, a path on disk, or an upload stored in the database), so a file is
validated in one streaming pass and written in a second without ever being held whole:

* :func:`iter_json_lines` yields ``(line number, object)`` per non-blank JSONL line, holding one
  line at a time;
* :func:`iter_json_array_items` yields ``(index, item)`` from one array of a single JSON document
  (the Unrag dataset file's ``documents``), holding one item at a time (ijson). Where ijson
  stops (``NaN``, ``Infinity``, ``1e400``, an integer beyond 64 bits) the rest of the document
  is read by a splitter that cuts each item's text out and parses it with
  :func:`parse_json_line`, so an Unrag file gets the JSONL importers' answer for the same
  value (refused with the same message, or, for a big integer, accepted), naming the member
  (``documents[3].metadata.authority``) and its line;
* :func:`iter_text_lines` yields ``(line number, text)`` (TREC runs).

Treated the same everywhere: a UTF-8 byte order mark is accepted and stripped; bytes that are not
UTF-8 are rejected with their line; NUL characters (raw or ``\\u0000``) are rejected with the
field that holds them, as are unpaired surrogate escapes (``"\\ud800"``, not UTF-8 text);
``NaN``/``Infinity``, and numbers too large to be finite (``1e400``), are rejected with their
field; nesting deeper than :data:`MAX_DEPTH` is rejected before the parser could recurse that
deep.
"""

import dataclasses
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
PROGRESS_EVERY = 100  # lines or items between two reports of the bytes read
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
            if isinstance(item, _Repeated):
                repeated = f"{where}.{item.repeated}" if where else str(item.repeated)
                yield repeated, f"the key {item.repeated!r} appears twice in one object"
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


class _Repeated(dict):
    """An object that named a key twice: JSON's parser keeps the last value silently, so the
    object keeps the key, to be refused by :func:`find_bad_values` with its path."""

    def __init__(self, pairs, key):
        super().__init__(pairs)
        self.repeated = key


def _objects(found: list):
    """JSON's ``object_pairs_hook`` for one text: a dict, or a :class:`_Repeated` noted in
    ``found`` when a key is repeated."""

    def build(pairs: list) -> dict:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        seen: set = set()
        found.append(next(k for k, _ in pairs if k in seen or seen.add(k)))
        return _Repeated(pairs, found[-1])

    return build


def parse_json_line(line: str, lineno: int, problems: Problems):
    """Parse one JSON text or record why not; returns the value or ``None``."""
    if "\x00" in line:
        problems.add(lineno, "", "contains a NUL character")
        return None
    if line.count("[") + line.count("{") > MAX_DEPTH and nesting_depth(line) > MAX_DEPTH:
        problems.add(lineno, "", f"nested deeper than {MAX_DEPTH} levels")
        return None
    flagged, repeated = [], []
    pairs = _objects(repeated)

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
        value = json.loads(
            line, parse_constant=constant, parse_float=number, object_pairs_hook=pairs
        )
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
            line,
            parse_constant=constant,
            parse_float=number,
            parse_int=_int_or_flagged(constant),
            object_pairs_hook=pairs,
        )
    if flagged or "\\u0000" in line or _may_hold_surrogate(line) or repeated:
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


def json_kind(value) -> str:
    """What a parsed JSON value is, in JSON's words (``null``, ``an array``, …)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


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
        before = problems.total
        value = parse_json_line(text, lineno, problems)
        if problems.total > before:
            continue
        if not isinstance(value, dict):
            # ``null`` too: a file whose only line is null was "imported" with nothing in it.
            problems.add(
                lineno, "", f"expected a JSON object (one {what} per line), got {json_kind(value)}"
            )
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
    problems.locator = lambda found: locate_members(source, found, array=array)
    with source.open() as raw:
        stream = open_text_stream(raw)
        index, depth, builder, yielded = -1, 0, None, 0
        prefix, event, value = "", "", None
        try:
            keys: list[set] = []  # the keys met in each open object, to refuse a repeated one
            for prefix, event, value in ijson.parse(stream, use_float=True):
                if event in ("start_map", "start_array"):
                    depth += 1
                    if depth > MAX_DEPTH:
                        where = f"{array}[{index}]" if builder is not None else ""
                        problems.add(None, where, f"nested deeper than {MAX_DEPTH} levels")
                        return
                    if event == "start_map":
                        keys.append(set())
                elif event in ("end_map", "end_array"):
                    depth -= 1
                    if event == "end_map":
                        keys.pop()
                elif event == "map_key":
                    if value in keys[-1]:
                        problems.add(
                            None,
                            _position(array, index, prefix, event, value) if prefix else value,
                            f"the key {value!r} appears twice in one object",
                        )
                    keys[-1].add(value)
                if builder is not None:
                    builder.event(event, value)
                    if depth == 2 and event in ("end_map", "end_array"):
                        yielded += 1
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
                        yielded += 1
                        yield index, _checked(value, f"{array}[{index}]", problems)
                elif depth == 1 and "." not in prefix and prefix and event not in ("map_key",):
                    header[prefix] = value
        except (ijson.JSONError, UnicodeDecodeError, ValueError) as exc:
            failure = exc
            where = _position(array, index, prefix, event, value) if index >= 0 else ""
        else:
            if progress is not None:
                progress(raw.tell() if hasattr(raw, "tell") else 0)
            return
    # ijson stopped at a value (NaN, Infinity, 1e400, an integer beyond 64 bits) or at broken
    # JSON: the rest is read item by item through the JSONL reader's parser, which gives the
    # same answer as a JSONL importer for the same value, with the member's line.
    before = problems.total
    yield from _split_items(
        source, problems, array=array, header=header, skip=yielded, progress=progress
    )
    if problems.total == before and "integer overflow" not in str(failure):
        # Broken in a way the splitter does not look for: ijson's own words.
        problems.add(None, where, f"not valid JSON ({_short(failure)})")


_SPECIAL = re.compile(r'["\\{}\[\],:]')


class _Capture:
    """The text of one value of a document read line by line, from a start to an end mark."""

    def __init__(self, lineno: int, line: str, at: int):
        self.lineno, self.pieces, self.line, self.start = lineno, [], line, at

    def next_line(self, line: str) -> None:
        self.pieces.append(self.line[self.start :])
        self.line, self.start = line, 0

    def end(self, at: int) -> str:
        return "".join([*self.pieces, self.line[self.start : at]])


def _split_items(
    source: ByteSource,
    problems: Problems,
    *,
    array: str,
    header: dict,
    skip: int,
    progress: Callable[[int], None] | None = None,
    texts: bool = False,
) -> Iterator[tuple[int, object]]:
    """(index, item) for the items of the top-level ``array`` from ``skip`` on, each item's
    text cut out of the document (strings and nesting tracked line by line) and parsed by
    :func:`parse_json_line`; top-level scalar members go into ``header``. Memory: one item's
    text and one line. With ``texts``, ``(index, (first line, text))`` instead, unparsed."""
    depth, in_string, escaped, last_line = 0, False, -1, 0
    key, expecting_key, in_array, index = None, False, False, -1
    key_text = value = item = None

    def emit(text: str, start_line: int):
        nonlocal index
        if not text.strip():
            return None
        index += 1
        if index < skip:
            return None  # already read by the fast pass
        if texts:
            return index, (start_line, text)
        return index, _parse_item(text, start_line, f"{array}[{index}]", problems)

    with source.open() as raw:
        for lineno, data in enumerate(_lines(open_text_stream(raw)), start=1):
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.add(lineno, "", f"not valid UTF-8 text (byte {exc.start + 1} of the line)")
                return
            for capture in (key_text, value, item):
                if capture is not None and capture.lineno != lineno:
                    capture.next_line(line)
            if escaped >= 0:
                escaped = 0  # a backslash ended the previous line: this line's first character
            for match in _SPECIAL.finditer(line):
                char, at = match.group(), match.start()
                if in_string:
                    if at == escaped:
                        escaped = -1
                    elif char == "\\":
                        escaped = at + 1
                    elif char == '"':
                        in_string = False
                        if key_text is not None:
                            key = json.loads(key_text.end(at + 1) or '""')
                            key_text = None
                    continue
                if char == '"':
                    in_string = True
                    if depth == 1 and expecting_key:
                        key_text = _Capture(lineno, line, at)
                elif depth == 0:
                    if char != "{":
                        problems.add(lineno, "", f"not valid JSON (unexpected {char!r})")
                        return
                    depth, expecting_key = 1, True
                elif depth == 1 and char == ":":
                    expecting_key, value = False, _Capture(lineno, line, at + 1)
                elif depth == 1 and char == "[" and key == array and value is not None:
                    value, in_array, depth = None, True, 2
                    item = _Capture(lineno, line, at + 1)
                elif depth == 1 and char in ",}":
                    if value is not None:
                        _header_value(header, key, value.end(at), value.lineno, problems)
                    value, expecting_key = None, char == ","
                    if char == "}":
                        depth = 0
                elif char in "[{":
                    depth += 1
                elif char in "]}":
                    depth -= 1
                    if in_array and depth == 1:
                        got = emit(item.end(at), item.lineno)
                        item, in_array = None, False
                        if got is not None:
                            yield got
                elif char == "," and in_array and depth == 2:
                    got = emit(item.end(at), item.lineno)
                    item = _Capture(lineno, line, at + 1)
                    if got is not None:
                        yield got
                        if progress is not None and index % PROGRESS_EVERY == 0:
                            progress(raw.tell() if hasattr(raw, "tell") else 0)
            last_line = lineno
            if escaped >= len(line):
                escaped = len(line)  # carried to the next line's first character
            elif escaped >= 0 and not in_string:
                escaped = -1
        if depth or in_string:
            problems.add(last_line, "", "not valid JSON (the document ends before it is closed)")
        if progress is not None:
            progress(raw.tell() if hasattr(raw, "tell") else 0)


def locate_members(source: ByteSource, found: list, *, array: str) -> list:
    """``found`` (problems of one JSON document, named by member) with the line of every
    problem that had none: the line where the member's last key is written inside its item of
    ``array`` (``documents[3].metadata.authority``), or the item's first line. Another problem
    without a line (a top-level member) is the document's: line 1. Reads the document once, only
    when there is such a problem (a rejected file), holding the texts of those items only."""
    member = re.compile(rf"^{re.escape(array)}\[(\d+)\]")
    wanted = {int(m[1]) for p in found if p.line is None and (m := member.match(p.field))}
    items: dict[int, tuple[int, str]] = {}
    if wanted:
        for index, (start, text) in _split_items(
            source, Problems(), array=array, header={}, skip=0, texts=True
        ):
            if index in wanted:
                items[index] = (start, text)
            if index >= max(wanted):
                break
    located = []
    for problem in found:
        line = problem.line
        m = member.match(problem.field) if line is None else None
        if m is not None and int(m[1]) in items:
            start, text = items[int(m[1])]
            inner = problem.field[m.end() :].lstrip(".")
            line = _line_of(text, start, inner)
        located.append(dataclasses.replace(problem, line=line or 1))
    return located


def _header_value(header: dict, key, text: str, lineno: int, problems: Problems) -> None:
    text = text.strip()
    if not text or text[0] in "[{" or key is None:
        return
    found = Problems()
    value = parse_json_line(text, lineno, found)
    for problem in found.items:
        problems.add(problem.line, str(key), problem.message, problem.expected)
    if not found:
        header[key] = value


def _parse_item(text: str, start_line: int, where: str, problems: Problems):
    """One item's text parsed as a JSONL line would be; its problems named by the member path
    under ``where`` and the line of the document they are on."""
    found = Problems()
    value = parse_json_line(text, start_line, found)
    for problem in found.items:
        field = where + (
            problem.field
            if problem.field.startswith("[") or not problem.field
            else "." + problem.field
        )
        problems.add(
            _line_of(text, start_line, problem.field), field, problem.message, problem.expected
        )
    if found:
        return None
    return value


def _line_of(text: str, start_line: int, field: str) -> int:
    """The line of the document holding ``field`` of an item whose text began on
    ``start_line``: where its last key is written (the item's first line without one)."""
    last = re.sub(r"\[\d+\]$", "", field.rsplit(".", 1)[-1]) if field else ""
    found = re.search(re.escape(json.dumps(last)) + r"\s*:", text) if last else None
    position = found.start() if found else len(text) - len(text.lstrip())
    return start_line + text.count("\n", 0, position)


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
