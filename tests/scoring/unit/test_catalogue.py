"""The measure catalogue: every trec_eval measure equals pytrec_eval exactly (random
collections with ties, unjudged documents, zero, negative and graded relevance, numeric-looking
ids, tab-separated files, -l and -J); ERR, RBP and judged against direct transcriptions of
their definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.io import Qrels, Run, read_qrels, read_run
from scoring.retrieval import evaluate

# Our measure -> pytrec_eval's (trec_eval) name.
TREC = {
    "map": "map",
    "map@5": "map_cut_5",
    "map@10": "map_cut_10",
    "rprec": "Rprec",
    "bpref": "bpref",
    "infap": "infAP",
    "ndcg": "ndcg",
    "ndcg@3": "ndcg_cut_3",
    "ndcg@20": "ndcg_cut_20",
    "precision": "set_P",
    "precision@1": "P_1",
    "precision@5": "P_5",
    "precision@20": "P_20",
    "recall": "set_recall",
    "recall@5": "recall_5",
    "recall@100": "recall_100",
    "hit@1": "success_1",
    "hit@5": "success_5",
    "mrr": "recip_rank",
}
DOCS = ["d1", "d2", "d10", "d11", "7", "07", "7.0", "a", "b9", "zz", "é1", "x", "y", "q"]
SCORES = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]),
    st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False),
)
_counter = iter(range(10**9))


@st.composite
def collections(draw):
    """Queries named like numbers (``7``, ``07``, ``7.0`` are three queries)."""
    # pytrec_eval keeps the last query's state between evaluators (trec_eval's static cache in
    # form_res_rels); ids unique per example keep one example from reading another's.
    tag = next(_counter)
    names = [f"{tag}7", f"0{tag}7", f"{tag}7.0", f"{tag}"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in names[: draw(st.integers(1, 4))]:
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=9, unique=True))
        rels = draw(st.lists(st.integers(-1, 3), min_size=len(judged), max_size=len(judged)))
        if max(rels) < 0:
            # trec_eval never returns for a query whose every judgement is negative.
            rels[0] = 0
        qrels[qid] = dict(zip(judged, rels, strict=True))
        ranked = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True))
        run[qid] = {d: draw(SCORES) for d in ranked}
    return qrels, run


def _reference(qrels, run, level, judged_only):
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, set(TREC.values()), relevance_level=level, judged_docs_only_flag=judged_only
    )
    return evaluator.evaluate(run)


def _check(ours: dict, reference: dict) -> None:
    assert set(ours) == set(reference)
    for q, values in reference.items():
        for label, name in TREC.items():
            assert ours[q][label] == pytest.approx(values[name], abs=1e-12), (q, label)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), level=st.sampled_from([1, 1, 2, 3]), judged_only=st.booleans())
def test_every_trec_eval_measure_equals_pytrec_eval(data, level, judged_only):
    qrels, run = data
    result = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict(run),
        metrics=list(TREC),
        relevance_level=level,
        judged_only=judged_only,
    )
    _check(result.per_query_dict(), _reference(qrels, run, level, judged_only))


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=collections(), judged_only=st.booleans(), layout=st.sampled_from(["\t", "  ", " "]))
def test_tab_separated_files_equal_pytrec_eval(tmp_path_factory, data, judged_only, layout):
    qrels, run = data
    folder = tmp_path_factory.mktemp("tabs")
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    sep = layout
    qrels_path.write_text(
        "".join(
            f"{q}{sep}0{sep}{d}{sep}{r}{' ' if sep == '  ' else ''}\n"
            for q, docs in qrels.items()
            for d, r in docs.items()
        ),
        encoding="utf-8",
    )
    run_path.write_text(
        "".join(
            f"{q}{sep}Q0{sep}{d}{sep}{i}{sep}{s!r}{sep}tag\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items(), start=1)
        ),
        encoding="utf-8",
    )
    result = evaluate(
        read_qrels(qrels_path), read_run(run_path), metrics=list(TREC), judged_only=judged_only
    )
    _check(result.per_query_dict(), _reference(qrels, run, 1, judged_only))


def test_numeric_looking_query_ids_are_three_queries():
    qrels = {"7": {"a": 1}, "07": {"b": 1}, "7.0": {"c": 1}}
    run = {"7": {"a": 1.0}, "07": {"a": 1.0}, "7.0": {"c": 1.0, "b": 2.0}}
    result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), metrics=["mrr", "map"])
    assert result.per_query_dict() == {
        "07": {"mrr": 0.0, "map": 0.0},
        "7": {"mrr": 1.0, "map": 1.0},
        "7.0": {"mrr": 0.5, "map": 0.5},
    }


# --- measures trec_eval does not have: transcriptions of their definitions ----------------------


def _ranking(docs: dict[str, float]) -> list[str]:
    key = lambda item: (np.float32(item[1]), item[0])  # noqa: E731
    return [d for d, _ in sorted(docs.items(), key=key, reverse=True)]


def _err(ranking, judged, k):
    reach, total = 1.0, 0.0
    for rank, doc in enumerate(ranking[:k] if k else ranking, start=1):
        grade = min(max(judged.get(doc, 0), 0), 4)
        stop = (2**grade - 1) / 16
        total += reach * stop / rank
        reach *= 1 - stop
    return total


def _rbp(ranking, judged, p, k, level):
    top = ranking[:k] if k else ranking
    return (1 - p) * sum(p**i for i, d in enumerate(top) if judged.get(d, -9) >= level)


def _judged(ranking, judged, k):
    top = ranking[:k] if k else ranking
    return sum(d in judged for d in top) / len(top)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collections(), k=st.sampled_from([1, 3, 10]), level=st.sampled_from([1, 2]))
def test_err_rbp_and_judged_follow_their_definitions(data, k, level):
    qrels, run = data
    names = [f"err@{k}", "err", "rbp", f"rbp(0.95)@{k}", f"judged@{k}", "judged"]
    result = evaluate(
        Qrels.from_dict(qrels), Run.from_dict(run), metrics=names, relevance_level=level
    )
    ours = result.per_query_dict()
    for q, docs in run.items():
        ranking, judged = _ranking(docs), qrels[q]
        expected = {
            f"err@{k}": _err(ranking, judged, k),
            "err": _err(ranking, judged, None),
            "rbp": _rbp(ranking, judged, 0.8, None, level),
            f"rbp(0.95)@{k}": _rbp(ranking, judged, 0.95, k, level),
            f"judged@{k}": _judged(ranking, judged, k),
            "judged": _judged(ranking, judged, None),
        }
        for label, value in expected.items():
            assert ours[q][label] == pytest.approx(value, abs=1e-12), (q, label)


def test_err_worked_example():
    # Chapelle et al. (2009): grades 3 then 2 on gdeval's 0-4 scale.
    qrels = {"q": {"a": 3, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    r1, r2 = 7 / 16, 3 / 16
    value = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), metrics=["err@2"]).aggregate
    assert value["err@2"] == pytest.approx(r1 + (1 - r1) * r2 / 2)


def test_only_requested_measures_are_computed_and_judged_rows_joined_on_demand():
    from scoring.retrieval import prepare

    qrels = Qrels.from_dict({"q": {"a": 1, "b": 0, "c": -1}})
    run = Run.from_dict({"q": {"a": 1.0, "b": 2.0, "c": 3.0, "z": 4.0}})
    _, lean = prepare(qrels, run)
    assert lean.hit_rel.tolist() == [1] and not lean.all_judged
    _, full = prepare(qrels, run, all_judged=True)
    assert full.hit_rel.tolist() == [-1, 0, 1] and full.hit_rank.tolist() == [1, 2, 3]
    _, judged = prepare(qrels, run, judged_only=True)
    assert judged.hit_rel.tolist() == [0, 1] and judged.hit_rank.tolist() == [0, 1]
    result = evaluate(qrels, run, metrics=["map"])
    assert list(result.per_query) == ["map"]
    assert result.aggregate["map"] == pytest.approx(1 / 4)
    assert evaluate(qrels, run, metrics=["bpref"]).aggregate["bpref"] == 0.0
    assert math.isclose(
        evaluate(qrels, run, metrics=["map"], judged_only=True).aggregate["map"], 0.5
    )


def test_unrag_top_k_is_the_cut_off_per_query_and_by_default(write):
    dataset = {
        "version": "1",
        "defaults": {"topK": 2, "scopePrefix": "eval:", "mode": "retrieve"},
        "queries": [
            {"id": "q1", "query": "a?", "relevant": {"sourceIds": ["d3"]}},
            {"id": "q2", "query": "b?", "relevant": {"sourceIds": ["d3"]}, "topK": 3},
        ],
    }
    qrels = read_qrels(write("u.json", dataset))
    assert (qrels.default_k, qrels.cutoffs) == (2, {"q1": 2, "q2": 3})
    run = Run.from_dict({q: {"d1": 3.0, "d2": 2.0, "d3": 1.0} for q in ("q1", "q2")})
    result = evaluate(qrels, run, metrics=None)
    assert result.k == 2
    per = result.per_query_dict()
    # d3 is third: outside q1's topK 2, inside q2's topK 3 (so hit@2 counts it for q2 too:
    # the cut-off of the label is the dataset default, each query keeps its own topK).
    assert per["q1"]["recall@2"] == 0.0 and per["q1"]["mrr"] == 0.0
    assert per["q2"]["mrr"] == pytest.approx(1 / 3)
    assert evaluate(qrels, run, metrics=["precision"]).per_query_dict() == {
        "q1": {"precision": 0.0},
        "q2": {"precision": pytest.approx(1 / 3)},
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"defaults": {"topK": 0}}, "defaults.topK must be a positive integer, got 0"),
        ({"defaults": {"topK": "10"}}, "defaults.topK must be a positive integer"),
        ({"queries": [{"id": "q", "relevant": {"sourceIds": []}, "topK": -1}]}, "queries[0].topK"),
    ],
)
def test_unrag_top_k_must_be_a_positive_integer(write, change, message):
    from scoring.errors import InputError

    dataset = {"version": "1", "queries": [{"id": "q", "relevant": {"sourceIds": ["d"]}}]}
    dataset.update(change)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_qrels(write("u.json", dataset))
