"""Retrieval metrics: hand-checked cases and property tests against pytrec_eval (trec_eval)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.errors import InputError
from scoring.io import Qrels, Run
from scoring.retrieval import compute, evaluate, metric_labels, prepare


def _all(k: int) -> list[str]:
    return [f"recall@{k}", f"precision@{k}", f"hit@{k}", f"mrr@{k}", "mrr", f"ndcg@{k}", "map"]


def _eval(qrels, run, **kw):
    return evaluate(Qrels.from_dict(qrels), Run.from_dict(run), **kw)


def test_hand_computed_example():
    qrels = {"q1": {"a": 1, "b": 2, "c": 0}}
    run = {"q1": {"x": 3.0, "b": 2.0, "c": 1.5, "a": 1.0}}
    result = _eval(qrels, run, metrics=_all(3))
    pq = {label: values[0] for label, values in result.per_query.items()}
    assert pq["recall@3"] == 0.5
    assert pq["precision@3"] == pytest.approx(1 / 3)
    assert pq["hit@3"] == 1.0
    assert pq["mrr@3"] == 0.5
    assert pq["mrr"] == 0.5
    dcg = 2 / math.log2(3)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert pq["ndcg@3"] == pytest.approx(dcg / idcg)
    assert pq["map"] == pytest.approx((1 / 2 + 2 / 4) / 2)


def test_ties_are_broken_by_doc_id_descending_and_rank_column_ignored():
    qrels = {"q": {"d1": 1}}
    run = {"q": {"d1": 1.0, "d2": 1.0, "d10": 1.0}}
    # Descending string order: d2 > d10 > d1, so the relevant d1 is third.
    assert _eval(qrels, run, metrics=["mrr"]).aggregate["mrr"] == pytest.approx(1 / 3)


def test_precision_divides_by_k_for_short_rankings():
    result = _eval({"q": {"a": 1}}, {"q": {"a": 1.0}}, metrics=["precision@10"])
    assert result.aggregate["precision@10"] == 0.1


def test_query_without_relevant_documents_scores_zero_and_counts():
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    result = _eval(qrels, run, metrics=["hit@10", "recall@10"])
    assert result.n_queries == 2
    assert result.aggregate["hit@10"] == 0.5
    assert result.aggregate["recall@10"] == 0.5


def test_unrag_empty_relevant_set_gives_hit_zero():
    qrels = Qrels(
        query_id=np.array(["q1"], dtype=object),
        doc_id=np.array(["a"], dtype=object),
        relevance=np.array([1]),
        queries=np.array(["q1", "q_unrelated"], dtype=object),
    )
    run = Run.from_dict({"q1": {"a": 1.0}, "q_unrelated": {"z": 1.0}})
    result = evaluate(qrels, run, metrics=["hit@10", "precision@10"])
    per = dict(zip(result.query_ids, result.per_query["hit@10"], strict=True))
    assert per == {"q1": 1.0, "q_unrelated": 0.0}


def test_queries_missing_from_run_count_only_with_all_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "q9": {"b": 1.0}}
    default = _eval(qrels, run, metrics=["hit@10"])
    assert (default.n_queries, default.aggregate["hit@10"]) == (1, 1.0)
    every = _eval(qrels, run, metrics=["hit@10"], all_queries=True)
    assert (every.n_queries, every.aggregate["hit@10"]) == (2, 0.5)


def test_no_overlap_between_run_and_qrels_is_an_input_error():
    with pytest.raises(InputError, match="none of the run's queries"):
        _eval({"q1": {"a": 1}}, {"q2": {"a": 1.0}})


def test_exponential_gain_option():
    qrels = {"q": {"a": 2, "b": 1}}
    run = {"q": {"b": 2.0, "a": 1.0}}
    result = _eval(qrels, run, metrics=["ndcg@2"], gain="exponential")
    dcg = 1 + 3 / math.log2(3)
    idcg = 3 + 1 / math.log2(3)
    assert result.aggregate["ndcg@2"] == pytest.approx(dcg / idcg)


def test_metric_labels_and_unknown_metric():
    assert metric_labels(["recall@5", "mrr", "map@5", "P_5", "rbp(0.9)"]) == [
        "recall@5",
        "mrr",
        "map@5",
        "precision@5",
        "rbp(0.9)",
    ]
    assert metric_labels(["ndcg_cut_10", "Rprec", "infAP", "recip_rank", "set_P"]) == [
        "ndcg@10",
        "rprec",
        "infap",
        "mrr",
        "precision",
    ]
    for bad in ["bpref@5", "rprec@10", "recall@0", "rbp(1.5)", "map(0.5)"]:
        with pytest.raises(ValueError):
            metric_labels([bad])
    with pytest.raises(ValueError, match="unknown measure"):
        _eval({"q": {"a": 1}}, {"q": {"a": 1.0}}, metrics=["bogus"])


def test_compute_on_prepared_arrays_matches_evaluate():
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 1}, "q2": {"c": 3}})
    run = Run.from_dict({"q1": {"b": 0.3, "z": 0.9}, "q2": {"c": 0.1}})
    _, prepared = prepare(qrels, run)
    arrays = compute(prepared, metrics=["recall@5", "ndcg"])
    result = evaluate(qrels, run, metrics=["recall@5", "ndcg"])
    for label in arrays:
        np.testing.assert_array_equal(arrays[label], result.per_query[label])


# --- property tests against pytrec_eval --------------------------------------------------------

DOCS = ["d1", "d2", "d10", "d11", "D3", "a", "b9", "b10", "zz", "d01", "x", "y", "q", "é1"]
SCORES = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]),
    st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False),
)


@st.composite
def collections(draw):
    n_queries = draw(st.integers(1, 6))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        qid = f"q{i}"
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        rels = draw(st.lists(st.integers(-1, 3), min_size=len(judged), max_size=len(judged)))
        if draw(st.booleans()):
            qrels[qid] = dict(zip(judged, rels, strict=True))
        if draw(st.integers(0, 4)) > 0:
            ranked = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True))
            run[qid] = {d: draw(SCORES) for d in ranked}
    if not qrels:
        qrels["q0"] = {"d1": 1}
    if not set(run) & set(qrels):
        run[next(iter(qrels))] = {"d1": 1.0, "d2": 1.0}
    return qrels, run


def _trec_sorted(docs: dict[str, float]) -> list[str]:
    # trec_eval's order: score (held as a C float) descending, then doc id descending.
    key = lambda item: (np.float32(item[1]), item[0])  # noqa: E731
    return [d for d, _ in sorted(docs.items(), key=key, reverse=True)]


def _reference(qrels, run, k):
    measures = {f"recall_{k}", f"P_{k}", "recip_rank", f"ndcg_cut_{k}", f"success_{k}", "map"}
    full = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    truncated = {q: {d: docs[d] for d in _trec_sorted(docs)[:k]} for q, docs in run.items()}
    cut = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(truncated)
    out = {}
    for q, vals in full.items():
        out[q] = {
            f"recall@{k}": vals[f"recall_{k}"],
            f"precision@{k}": vals[f"P_{k}"],
            f"hit@{k}": vals[f"success_{k}"],
            f"mrr@{k}": cut[q]["recip_rank"],
            "mrr": vals["recip_rank"],
            f"ndcg@{k}": vals[f"ndcg_cut_{k}"],
            "map": vals["map"],
        }
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.sampled_from([1, 3, 5, 10]))
def test_per_query_values_equal_pytrec_eval(data, k):
    qrels, run = data
    reference = _reference(qrels, run, k)
    result = _eval(qrels, run, k=k, metrics=_all(k))
    ours = result.per_query_dict()
    # pytrec_eval evaluates exactly the run's queries that have qrels: same set as ours.
    assert set(ours) == set(reference)
    for q, values in reference.items():
        for label, expected in values.items():
            assert ours[q][label] == pytest.approx(expected, abs=1e-12), (q, label)


@settings(max_examples=150, deadline=None)
@given(data=collections(), k=st.sampled_from([3, 10]))
def test_all_queries_mean_equals_trec_eval_c(data, k):
    qrels, run = data
    reference = _reference(qrels, run, k)
    result = _eval(qrels, run, k=k, metrics=_all(k), all_queries=True)
    # trec_eval -c averages over every qrels query, scoring absent ones 0; pytrec_eval has no
    # -c switch, so the reference mean divides its per-query sum by the number of qrels queries.
    assert result.n_queries == len(qrels)
    for label in result.aggregate:
        expected = sum(v[label] for v in reference.values()) / len(qrels)
        assert result.aggregate[label] == pytest.approx(expected, abs=1e-12)


def test_negative_zero_ties_with_zero():
    # trec_eval compares C floats: -0.0 == 0.0, so the tie is broken by doc id descending
    # (b before a), whichever of the two carries the sign.
    qrels = {"q": {"a": 1}}
    for run, expected in [
        ({"q": {"a": 0.0, "b": -0.0}}, 0.5),
        ({"q": {"a": -0.0, "b": 0.0}}, 0.5),
        ({"q": {"b": -0.0, "c": 0.0, "a": 0.0}}, 1 / 3),
    ]:
        assert _reference(qrels, run, 10)["q"]["mrr"] == pytest.approx(expected)
        assert _eval(qrels, run, metrics=["mrr"]).aggregate["mrr"] == pytest.approx(expected)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=collections(), k=st.sampled_from([1, 3, 10]), all_queries=st.booleans())
def test_results_stay_exact_when_every_document_hash_collides(
    colliding_fingerprints, data, k, all_queries
):
    qrels, run = data
    expected = _reference(qrels, run, k)
    result = _eval(qrels, run, k=k, metrics=_all(k), all_queries=all_queries)
    ours = result.per_query_dict()
    for q, values in expected.items():
        for label, value in values.items():
            assert ours[q][label] == pytest.approx(value, abs=1e-12), (q, label)


# Long ids (over 8 and 16 bytes, shared prefixes, non-ASCII) through TREC files, i.e. the
# pyarrow reader, the hashed join and string tie-breaks on multi-word ids.
LONG_DOCS = [
    "clueweb09-en0000-00-00000",
    "clueweb09-en0000-00-00001",
    "clueweb09-en0000-00-0000",
    "clueweb09-en0000-00-000010",
    "msmarco_doc_00_0",
    "msmarco_doc_00_00",
    "d",
    "d1",
    "0123456789abcdef",
    "0123456789abcdeg",
    "0123456789abcdef0",
    "ünïcödé-document-ïd",
]


@st.composite
def long_id_collections(draw):
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(draw(st.integers(1, 4))):
        qid = f"topic-{i:03d}-long-query-identifier"
        judged = draw(st.lists(st.sampled_from(LONG_DOCS), min_size=1, max_size=6, unique=True))
        qrels[qid] = {d: draw(st.integers(0, 3)) for d in judged}
        ranked = draw(st.lists(st.sampled_from(LONG_DOCS), min_size=1, max_size=12, unique=True))
        run[qid] = {d: draw(st.sampled_from([0.0, 0.25, 1.0, 2.5])) for d in ranked}
    return qrels, run


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=long_id_collections(), k=st.sampled_from([2, 5, 10]))
def test_trec_files_with_long_ids_equal_pytrec_eval(tmp_path_factory, data, k):
    from scoring.io import read_qrels, read_run

    qrels, run = data
    folder = tmp_path_factory.mktemp("long")
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()),
        encoding="utf-8",
    )
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {i} {s!r} tag\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items(), start=1)
        ),
        encoding="utf-8",
    )
    expected = _reference(qrels, run, k)
    result = evaluate(read_qrels(qrels_path), read_run(run_path), k=k, metrics=_all(k))
    ours = result.per_query_dict()
    assert set(ours) == set(expected)
    for q, values in expected.items():
        for label, value in values.items():
            assert ours[q][label] == pytest.approx(value, abs=1e-12), (q, label)
