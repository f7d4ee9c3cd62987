"""Compact id columns: fingerprints, factorisation, and exactness when hashes collide."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import _ids

IDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=1), min_size=0, max_size=40
)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(IDS, min_size=1, max_size=30), other=st.lists(IDS, max_size=30))
def test_fingerprint_depends_only_on_the_string(values, other):
    # The same string hashes the same whatever else is in the array (lengths, position, slices).
    alone = np.concatenate([_ids.fingerprint(pa.array([v])) for v in values])
    mixed = _ids.fingerprint(pa.array(other + values))[len(other) :]
    sliced = _ids.fingerprint(pa.array(other + values + other).slice(len(other), len(values)))
    large = _ids.fingerprint(pa.array(values, type=pa.large_string()))
    np.testing.assert_array_equal(alone, mixed)
    np.testing.assert_array_equal(alone, sliced)
    np.testing.assert_array_equal(alone, large)


def test_fingerprint_separates_near_misses_and_chunks_long_arrays():
    values = ["", "a", "a\x00", "ab", "abcdefgh", "abcdefghi", "abcdefgh\x00", "é", "x" * 17]
    fps = _ids.fingerprint(pa.array(values))
    assert len(set(fps.tolist())) == len(values)
    # More rows than one processing chunk, ending on a long string (the padded tail path).
    many = [f"doc-{i:07d}" for i in range(_ids.CHUNK + 5)] + ["z" * 33]
    fps = _ids.fingerprint(pa.array(many))
    assert fps[-1] == _ids.fingerprint(pa.array(["z" * 33]))[0]
    assert fps[_ids.CHUNK + 2] == _ids.fingerprint(pa.array([many[_ids.CHUNK + 2]]))[0]


def test_factorize_and_as_strings_accept_arrow_numpy_and_lists():
    chunked = pa.chunked_array(
        [pa.array(["q2", "q1"]).dictionary_encode(), pa.array(["q1", "q3"]).dictionary_encode()]
    )
    codes, distinct = _ids.factorize(chunked)
    assert distinct.to_pylist() == ["q2", "q1", "q3"]
    assert codes.tolist() == [0, 1, 1, 2]
    codes, distinct = _ids.factorize(np.array(["b", "a", "b"], dtype=object))
    assert (codes.tolist(), distinct.to_pylist()) == ([0, 1, 0], ["b", "a"])
    assert _ids.as_strings([1, "x", None]).to_pylist() == ["1", "x", "None"]
    assert _ids.as_strings(np.array(["u", "v"])).to_pylist() == ["u", "v"]


def test_key_filter_has_no_false_negatives():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**62, size=5000, dtype=np.int64)
    probe = np.concatenate([keys, rng.integers(0, 2**62, size=50_000, dtype=np.int64)])
    hit = _ids.KeyFilter(keys)(probe)
    assert hit[: len(keys)].all()
    assert hit[len(keys) :].mean() < 0.2
