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

ALL = ["recall", "precision", "hit", "mrr", "ndcg", "map"]


def _eval(qrels, run, **kw):
    return evaluate(Qrels.from_dict(qrels), Run.from_dict(run), **kw)


def test_hand_computed_example():
    qrels = {"q1": {"a": 1, "b": 2, "c": 0}}
    run = {"q1": {"x": 3.0, "b": 2.0, "c": 1.5, "a": 1.0}}
    result = _eval(qrels, run, k=3, metrics=ALL)
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
    result = _eval({"q": {"a": 1}}, {"q": {"a": 1.0}}, k=10, metrics=["precision"])
    assert result.aggregate["precision@10"] == 0.1


def test_query_without_relevant_documents_scores_zero_and_counts():
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    result = _eval(qrels, run, metrics=["hit", "recall"])
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
    result = evaluate(qrels, run, metrics=["hit", "precision"])
    per = dict(zip(result.query_ids, result.per_query["hit@10"], strict=True))
    assert per == {"q1": 1.0, "q_unrelated": 0.0}


def test_queries_missing_from_run_count_only_with_all_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "q9": {"b": 1.0}}
    default = _eval(qrels, run, metrics=["hit"])
    assert (default.n_queries, default.aggregate["hit@10"]) == (1, 1.0)
    every = _eval(qrels, run, metrics=["hit"], all_queries=True)
    assert (every.n_queries, every.aggregate["hit@10"]) == (2, 0.5)


def test_no_overlap_between_run_and_qrels_is_an_input_error():
    with pytest.raises(InputError, match="none of the run's queries"):
        _eval({"q1": {"a": 1}}, {"q2": {"a": 1.0}})


def test_exponential_gain_option():
    qrels = {"q": {"a": 2, "b": 1}}
    run = {"q": {"b": 2.0, "a": 1.0}}
    result = _eval(qrels, run, k=2, metrics=["ndcg"], gain="exponential")
    dcg = 1 + 3 / math.log2(3)
    idcg = 3 + 1 / math.log2(3)
    assert result.aggregate["ndcg@2"] == pytest.approx(dcg / idcg)


def test_metric_labels_and_unknown_metric():
    assert metric_labels(["recall", "mrr", "map"], 5) == ["recall@5", "mrr@5", "mrr", "map"]
    with pytest.raises(ValueError, match="unknown metric"):
        _eval({"q": {"a": 1}}, {"q": {"a": 1.0}}, metrics=["bogus"])


def test_compute_on_prepared_arrays_matches_evaluate():
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 1}, "q2": {"c": 3}})
    run = Run.from_dict({"q1": {"b": 0.3, "z": 0.9}, "q2": {"c": 0.1}})
    _, prepared = prepare(qrels, run, k=5)
    arrays = compute(prepared, k=5, metrics=["recall", "ndcg"])
    result = evaluate(qrels, run, k=5, metrics=["recall", "ndcg"])
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
    result = _eval(qrels, run, k=k, metrics=ALL)
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
    result = _eval(qrels, run, k=k, metrics=ALL, all_queries=True)
    # trec_eval -c averages over every qrels query, scoring absent ones 0; pytrec_eval has no
    # -c switch, so the reference mean divides its per-query sum by the number of qrels queries.
    assert result.n_queries == len(qrels)
    for label in result.aggregate:
        expected = sum(v[label] for v in reference.values()) / len(qrels)
        assert result.aggregate[label] == pytest.approx(expected, abs=1e-12)
