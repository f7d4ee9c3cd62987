"""String id columns without a Python object per row (internal to :mod:`scoring`).

Query and document ids are kept as Arrow string arrays (contiguous UTF-8 bytes plus offsets),
never as NumPy object arrays of 10 M Python strings. Two tools work on them:

* :func:`factorize` — integer codes into the distinct values (used for query ids, which repeat);
* :func:`fingerprint` — a 64-bit hash of every id computed with NumPy straight from the Arrow
  buffers, 8 bytes per step. Fingerprints are only ever used to find *candidates* (possible
  duplicates, possible qrels matches); every candidate is then confirmed by comparing the actual
  strings (:func:`same_strings`), so a hash collision can cost time but never change a result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_U64 = np.uint64
# Keep the low r bytes of a little-endian 8-byte word, r = 0..8.
_KEEP_BYTES = np.array([0] + [(1 << (8 * r)) - 1 for r in range(1, 9)], dtype=_U64)
_MUL1 = _U64(0x9E3779B97F4A7C15)
_MUL2 = _U64(0xBF58476D1CE4E5B9)
_MUL3 = _U64(0x94D049BB133111EB)


def memory_pool() -> pa.MemoryPool:
    """Arrow pool for the large column buffers: jemalloc when this pyarrow build has it.

    Passed explicitly to the calls that allocate big buffers (no global default is changed).
    With Arrow's default mimalloc pool, parsing a 10 M-line run cost ~2 s of system time in
    page faults on the benchmark machine, ~0.75 s with jemalloc (BENCHMARKS.md).
    """
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()


def release_unused_memory() -> None:
    """Give memory freed by a finished computation back to the operating system.

    Arrow's jemalloc pool and glibc's malloc both keep freed pages for reuse, so a long-lived
    process (a Celery pool child) that scored a large job would keep its peak resident size
    for the next, unrelated task. Called when a scoring job or piece ends; a no-op where the
    calls do not exist."""
    for pool in {memory_pool(), pa.default_memory_pool()}:
        try:
            pool.release_unused()
        except (AttributeError, NotImplementedError):
            pass
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def as_strings(values: Any) -> pa.Array:
    """One contiguous Arrow string array (``string`` or ``large_string``) for ``values``.

    Accepts Arrow arrays (dictionary-encoded or chunked too), NumPy arrays and iterables; values
    that are not strings are converted with ``str``.
    """
    if isinstance(values, pa.ChunkedArray):
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        if values.nbytes >= 2**31 - 1 and pa.types.is_string(values.type):
            values = values.cast(pa.large_string())
        if values.num_chunks == 1:
            values = values.chunk(0)
        else:
            values = values.combine_chunks(memory_pool=memory_pool())
    if isinstance(values, pa.Array):
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            return as_strings(values.to_pylist())
        if values.null_count:
            return as_strings(values.to_pylist())
        return values
    if not isinstance(values, np.ndarray):
        values = np.asarray(list(values) if isinstance(values, Iterable) else values, dtype=object)
    if values.dtype.kind == "U":
        return pa.array(values.ravel().tolist(), type=pa.string())
    items = values.astype(object, copy=False).ravel().tolist()
    try:
        array = pa.array(items, type=pa.string())
        if array.null_count == 0:
            return array
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    return pa.array([str(v) for v in items], type=pa.string())


def to_objects(values: pa.Array) -> np.ndarray:
    """NumPy object array of Python ``str`` (creates one Python object per element)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values.to_pylist()
    return out


def factorize(values: Any) -> tuple[np.ndarray, pa.Array]:
    """``(codes, distinct)``: int64 codes per element into ``distinct`` (first-seen order)."""
    if isinstance(values, pa.ChunkedArray) and pa.types.is_dictionary(values.type):
        unified = values.unify_dictionaries()
        if unified.num_chunks == 0:
            return np.zeros(0, dtype=np.int64), pa.array([], type=pa.string())
        dictionary = as_strings(unified.chunk(0).dictionary)
        codes = np.concatenate([numbers(c.indices) for c in unified.chunks])
        return _compact(codes, dictionary)
    encoded = pc.dictionary_encode(as_strings(values))
    return numbers(encoded.indices), as_strings(encoded.dictionary)


def numbers(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """NumPy copy-free view of a numeric Arrow array without nulls (chunks concatenated).

    Reads the buffer directly: ``Array.to_numpy`` would import pandas (0.4 s) to check types.
    """
    if isinstance(values, pa.ChunkedArray):
        parts = [numbers(chunk) for chunk in values.chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, np.dtype(str(values.type)))
    if values.null_count:
        raise ValueError("unexpected null")
    dtype = np.dtype(str(values.type))
    return np.frombuffer(
        values.buffers()[1], dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize
    )


def take(values: pa.Array, indices: np.ndarray) -> pa.Array:
    """``values[indices]`` for NumPy integer indices (wrapped without a Python-side copy)."""
    index = np.ascontiguousarray(indices, dtype=np.int64)
    return values.take(pa.Array.from_buffers(pa.int64(), len(index), [None, pa.py_buffer(index)]))


def _valid(values: pa.Array) -> np.ndarray:
    """Validity of each element as a NumPy bool array."""
    bitmap = values.buffers()[0]
    if bitmap is None:
        return np.ones(len(values), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[values.offset : values.offset + len(values)].astype(bool)


def booleans(values: pa.Array) -> np.ndarray:
    """An Arrow boolean array without nulls as a NumPy bool array."""
    bits = np.unpackbits(np.frombuffer(values.buffers()[1], dtype=np.uint8), bitorder="little")
    return bits[values.offset : values.offset + len(values)].astype(bool) & _valid(values)


def _compact(codes: np.ndarray, dictionary: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Drop dictionary entries no row uses (keeps the first-seen order of the rest)."""
    used = np.bincount(codes, minlength=len(dictionary)) > 0
    if used.all():
        return codes, dictionary
    remap = np.cumsum(used) - 1
    return remap[codes], take(dictionary, np.flatnonzero(used))


#: Rows per step of the row-wise NumPy passes below. Working on slices of this size keeps the
#: temporaries small (a few MB, reused by the allocator and cache-resident) instead of allocating
#: and page-faulting several fresh 80 MB arrays per pass over 10 M rows.
CHUNK = 1 << 18
#: Most threads the row-wise passes use (:func:`in_threads`): the machine's cores, at most 4.
HASH_THREADS = max(
    1,
    min(
        4,
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
    ),
)


def idle_threads() -> int:
    """Threads worth using now: :data:`HASH_THREADS` less the whole cores kept busy (at least
    1): two cores at load 0.9 → 2, at 1.4 → 1. On a saturated machine extra threads only queue
    for a core and add contention (measured: BENCHMARKS.md), so the passes then run on one
    thread. Busy is the smaller of the 1-minute load average and the tasks running besides this
    one right now: the average lags by a minute, so right after a burst of work (the previous
    job, a test run) it still reported a busy machine that was idle."""
    if HASH_THREADS <= 1:
        return 1
    try:
        busy = min(os.getloadavg()[0], _running_besides_me())
    except OSError:
        return 1
    return max(1, min(HASH_THREADS, HASH_THREADS - int(busy)))


def _running_besides_me() -> float:
    """Tasks running or runnable on the machine now, this one excepted (``/proc/loadavg``'s
    fourth field); infinite where it cannot be read (the load average alone then decides)."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return float("inf")
    return max(0, running - 1)


def chunks(n: int, size: int = CHUNK) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive slices covering ``range(n)``."""
    for lo in range(0, n, size):
        yield lo, min(lo + size, n)


def _layout(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a string array: zero-copy views of its Arrow buffers."""
    offset_type = np.int64 if pa.types.is_large_string(values.type) else np.int32
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(
        offsets_buf,
        dtype=offset_type,
        count=len(values) + 1,
        offset=values.offset * np.dtype(offset_type).itemsize,
    )
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    return offsets, data


def _unaligned_words(data: np.ndarray) -> np.ndarray:
    """uint64 (little-endian) read at every byte position of ``data``: a stride-1 view."""
    return np.ndarray(shape=(max(len(data) - 7, 0),), dtype="<u8", buffer=data, strides=(1,))


def _buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, lengths, data)`` of a string array (int64 starts and lengths)."""
    offsets, data = _layout(values)
    offsets = offsets.astype(np.int64)
    return offsets[:-1], np.diff(offsets), data


def fingerprint(values: pa.Array, *, finish: bool = True) -> np.ndarray:
    """A 64-bit hash of each string (uint64), equal for equal strings.

    Different strings can collide; callers confirm candidates with :func:`same_strings`. The
    hash of a string depends on its bytes only, never on the other strings of the array.
    """
    values = as_strings(values)
    n = len(values)
    out = np.empty(n, dtype=_U64)
    offsets, data = _layout(values)
    # A word read near the end of the buffer would run past it: the strings that end in its
    # last 8 bytes are read from a zero-padded copy of their own bytes, the rest in place (the
    # padding never reaches a hash: bytes past a string are masked off).
    tail = int(np.searchsorted(offsets[1:], len(data) - 8, side="right"))
    words = _unaligned_words(data)
    for lo, hi in chunks(tail):
        starts = offsets[lo:hi].astype(np.int64)
        out[lo:hi] = _hash_rows(words, starts, offsets[lo + 1 : hi + 1] - starts, finish)
    if tail < n:
        first, end = int(offsets[tail]), int(offsets[n])
        padded = np.zeros(end - first + 16, dtype=np.uint8)
        padded[: end - first] = data[first:end]
        starts = offsets[tail:n].astype(np.int64)
        lengths = offsets[tail + 1 : n + 1] - starts
        out[tail:] = _hash_rows(_unaligned_words(padded), starts - first, lengths, finish)
    return out


def _hash_rows(
    source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, finish: bool = True
) -> np.ndarray:
    """The 64-bit hash of each string ``source``'s bytes hold at ``starts`` (``lengths``);
    without ``finish`` the last avalanche step is left to the caller (one mix, not two)."""
    h = lengths.astype(_U64)
    h *= _MUL1
    h ^= source[starts] & _KEEP_BYTES[np.minimum(lengths, 8)]
    h *= _MUL2
    h ^= h >> _U64(31)
    longer = np.flatnonzero(lengths > 8)
    w = 1
    while len(longer):
        step = source[starts[longer] + 8 * w]
        step &= _KEEP_BYTES[np.minimum(lengths[longer] - 8 * w, 8)]
        step ^= h[longer]
        step *= _MUL2
        step ^= step >> _U64(31)
        h[longer] = step
        w += 1
        longer = longer[lengths[longer] > 8 * w]
    return _mix(h) if finish else h


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place."""
    h ^= h >> _U64(30)
    h *= _MUL2
    h ^= h >> _U64(27)
    h *= _MUL3
    h ^= h >> _U64(31)
    return h


def pair_keys(codes: np.ndarray, fingerprints: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (integer code, string fingerprint) pairs."""
    out = np.empty(len(codes), dtype=_U64)
    for lo, hi in chunks(len(codes)):
        key = codes[lo:hi].astype(_U64)
        key *= _MUL1
        key ^= fingerprints[lo:hi]
        out[lo:hi] = _mix(key)
    return out


def string_pair_keys(codes: np.ndarray, values: pa.Array) -> np.ndarray:
    """``pair_keys(codes, fingerprint(values))`` in one pass of small slices (no 80 MB temporary).

    Slices are hashed by :func:`in_threads`: each writes its own slice of the output, so the
    keys are the same whatever the number of threads."""
    values = as_strings(values)
    out = np.empty(len(values), dtype=_U64)

    def one(span: tuple[int, int]) -> None:
        lo, hi = span
        key = codes[lo:hi].astype(_U64)
        key *= _MUL1
        # The string hash is not finished on its own: the pair's one mix finishes both.
        key ^= fingerprint(values.slice(lo, hi - lo), finish=False)
        out[lo:hi] = _mix(key)

    in_threads(one, list(chunks(len(values))))
    return out


def in_threads(work: Callable[[Any], Any], spans: list) -> list:
    """``[work(span) for span in spans]``, the spans shared by :func:`idle_threads` threads
    (NumPy and Arrow release the GIL in their loops, so slices run on the idle cores).
    ``work`` must only write its own span's part of any output: results do not depend on the
    number of threads."""
    threads = min(idle_threads(), len(spans))
    if threads <= 1:
        return [work(span) for span in spans]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(work, spans))


class KeyFilter:
    """Approximate set membership for 64-bit keys: no false negatives, few false positives.

    A packed bit table (about 32 bits per key, at most 32 MB) indexed by the top bits of a
    multiplicative hash of the key. Used to drop most of 10 M rows before an exact test.
    """

    def __init__(self, keys: np.ndarray) -> None:
        bits = int(np.ceil(np.log2(max(len(keys), 1) * 32)))
        self._shift = _U64(64 - min(max(bits, 10), 28))
        table = np.zeros(1 << (64 - int(self._shift)), dtype=bool)
        table[self._slot(keys)] = True
        self._table = np.packbits(table, bitorder="little")

    def _slot(self, keys: np.ndarray) -> np.ndarray:
        h = keys.view(_U64) if keys.dtype.itemsize == 8 else keys.astype(_U64)
        h = h * _MUL1
        h >>= self._shift
        return h

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        """Boolean mask: True for every key in the set (and for a few others)."""
        slot = self._slot(keys)
        byte = self._table[slot >> _U64(3)]
        byte >>= (slot & _U64(7)).astype(np.uint8)
        byte &= np.uint8(1)
        return byte.view(bool)


def same_strings(a: pa.Array, a_index: np.ndarray, b: pa.Array, b_index: np.ndarray) -> np.ndarray:
    """Boolean array: ``a[a_index[i]] == b[b_index[i]]`` compared as strings."""
    if len(a_index) == 0:
        return np.zeros(0, dtype=bool)
    left = as_strings(take(a, a_index))
    right = as_strings(take(b, b_index))
    if left.type != right.type:
        left, right = left.cast(pa.large_string()), right.cast(pa.large_string())
    return booleans(pc.equal(left, right))


def string_rank(values: pa.Array) -> np.ndarray:
    """Dense rank (0-based) of each string in code-point order (= UTF-8 byte order)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    ranks = pc.rank(values, sort_keys="ascending", tiebreaker="dense")
    return numbers(ranks).astype(np.int64) - 1


def sorted_strings(values: pa.Array) -> pa.Array:
    """``values`` sorted in code-point order."""
    return values.take(pc.sort_indices(values))


def positions_in(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    """Index of each of ``values`` in ``value_set`` (exact string match), -1 when absent."""
    if len(value_set) == 0 or len(values) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    if values.type != value_set.type:
        values, value_set = values.cast(pa.large_string()), value_set.cast(pa.large_string())
    found = pc.index_in(values, value_set=value_set)
    valid = _valid(found)
    if not valid.all():
        found = found.combine_chunks() if isinstance(found, pa.ChunkedArray) else found
        raw = np.frombuffer(
            found.buffers()[1], dtype=np.int32, count=len(found), offset=found.offset * 4
        )
        return np.where(valid, raw, -1).astype(np.int64)
    return numbers(found).astype(np.int64)
