"""Scoring a partition of the queries and merging equals scoring the whole run, to the bit:
the property the split scoring jobs (goldset.services.scoring_chunks) rest on."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.io import Qrels, Run, arrow_columns, select_queries
from scoring.retrieval import evaluate, merge_results

MEASURES = ["map", "ndcg@5", "recall@5", "P_3", "mrr", "bpref", "rbp(0.8)", "hit@5", "ndcg"]


def _data(seed: int, n_queries: int):
    rng = np.random.default_rng(seed)
    queries = [f"q{i}" for i in range(n_queries)]
    qrels = Qrels.from_dict(
        {
            q: {f"d{rng.integers(30)}": int(rng.integers(0, 3)) for _ in range(rng.integers(1, 5))}
            for q in queries
        }
    )
    # Some gold queries have no run rows and the run has a query outside the gold.
    ranked = queries[: max(1, n_queries - n_queries // 5)] + ["not-in-gold"]
    run = Run.from_dict(
        {
            q: {
                f"d{rng.integers(30)}": float(rng.integers(0, 4)) for _ in range(rng.integers(1, 9))
            }
            for q in ranked
        }
    )
    return queries, qrels, run


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_queries=st.integers(2, 120),
    n_parts=st.integers(1, 7),
)
def test_scoring_the_parts_of_a_query_partition_and_merging_equals_scoring_the_whole(
    seed, n_queries, n_parts
):
    queries, qrels, run = _data(seed, n_queries)
    whole = evaluate(qrels, run, k=5, metrics=MEASURES, all_queries=True)
    rng = np.random.default_rng(seed + 1)
    owner = rng.integers(0, n_parts, size=len(queries))
    parts = []
    for part in range(n_parts):
        wanted = [q for q, o in zip(queries, owner, strict=True) if o == part]
        if wanted:
            parts.append(
                evaluate(
                    select_queries(qrels, wanted),
                    select_queries(run, wanted),
                    k=5,
                    metrics=MEASURES,
                    all_queries=True,
                )
            )
    merged = merge_results(parts[::-1])
    assert merged.query_ids.tolist() == whole.query_ids.tolist()
    assert list(merged.per_query) == list(whole.per_query)
    for label, values in whole.per_query.items():
        assert np.array_equal(merged.per_query[label], values), label
    assert merged.aggregate == whole.aggregate


def test_selecting_queries_keeps_declared_queries_cutoffs_and_default_k():
    qrels = Qrels(
        np.array(["a", "a", "b"], dtype=object),
        np.array(["d1", "d2", "d1"], dtype=object),
        np.array([1, 0, 2]),
        ["a", "b", "empty"],
        cutoffs={"a": 3, "b": 5, "empty": 2},
        default_k=4,
    )
    part = select_queries(qrels, ["b", "empty"])
    assert part.query_id.tolist() == ["b"] and part.relevance.tolist() == [2]
    assert part.queries.tolist() == ["b", "empty"]
    assert part.cutoffs == {"b": 5, "empty": 2} and part.default_k == 4
    run = Run.from_dict({"a": {"d1": 1.0}, "b": {"d1": 2.0, "d3": 1.0}})
    assert select_queries(run, ["b"]).score.tolist() == [2.0, 1.0]


def test_merging_refuses_overlapping_parts_and_mixed_settings():
    _, qrels, run = _data(3, 10)
    whole = evaluate(qrels, run, k=5, metrics=["map"], all_queries=True)
    with pytest.raises(ValueError, match="partition"):
        merge_results([whole, whole])
    other = evaluate(qrels, run, k=3, metrics=["map"], all_queries=True)
    with pytest.raises(ValueError, match="settings"):
        merge_results([whole, other])
    with pytest.raises(ValueError, match="nothing"):
        merge_results([])


def test_arrow_columns_give_the_same_run_and_qrels_back():
    _, qrels, run = _data(5, 40)
    again = Run(**arrow_columns(run))
    assert again.query_id.tolist() == run.query_id.tolist()
    assert again.doc_id.tolist() == run.doc_id.tolist()
    assert again.score.tolist() == run.score.tolist()
    columns = arrow_columns(qrels)
    back = Qrels(**columns, queries=qrels.queries)
    assert back.query_id.tolist() == qrels.query_id.tolist()
    assert back.relevance.tolist() == qrels.relevance.tolist()
    whole = evaluate(qrels, run, k=5, metrics=MEASURES, all_queries=True)
    same = evaluate(back, again, k=5, metrics=MEASURES, all_queries=True)
    assert same.aggregate == whole.aggregate
