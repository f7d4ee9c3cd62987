"""Ranked-retrieval metrics computed for all queries at once, with trec_eval's conventions.

Metrics (``k`` is the cut-off, 10 by default):

``recall@k``     relevant documents in the top k / relevant documents judged for the query
``precision@k``  relevant documents in the top k / k (always k, even for shorter rankings)
``hit@k``        1 if any relevant document is in the top k, else 0 (trec_eval ``success_k``)
``mrr@k``        1 / rank of the first relevant document if it is within the top k, else 0
``mrr``          1 / rank of the first relevant document anywhere (trec_eval ``recip_rank``)
``ndcg@k``       DCG@k / ideal DCG@k with linear gain = relevance and discount log2(rank + 1)
                 (trec_eval ``ndcg_cut_k``); ``gain="exponential"`` uses 2**rel - 1 instead
``map``          average precision over the whole ranking (trec_eval ``map``), optional

Conventions, chosen so that our numbers equal trec_eval's on the same files:

* A query's ranking is by score descending; ties are broken by document id descending in string
  (code point) order. The rank column of a TREC run is ignored. Scores are compared at single
  precision (float32), because trec_eval stores them as C ``float``: 1e-104 and 0.0 tie.
* A document listed twice for one query is an input error (raised by :mod:`scoring.io`).
* Relevance <= 0 is non-relevant; negative relevance contributes gain 0 to nDCG.
* A query in the qrels with no relevant document scores 0 on every metric and counts in the mean
  (this is also the seed-001 semantics for an empty ``relevant.sourceIds``: hit@k = 0).
* Queries in the run but not in the qrels are ignored.
* Queries in the qrels but absent from the run are left out of the mean unless
  ``all_queries=True`` (``trec_eval -c``, CLI ``--all-queries``), in which case they score 0.

Everything after parsing is NumPy over a padded (queries x k) gain matrix; only tied scores fall
back to comparing document-id strings, and only for the tied rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scoring.errors import InputError
from scoring.io import Qrels, Run

METRICS = ("recall", "precision", "hit", "mrr", "ndcg", "map")
DEFAULT_METRICS = ("recall", "precision", "hit", "mrr", "ndcg")
GAINS = ("linear", "exponential")


@dataclass(frozen=True)
class RetrievalResult:
    """Per-query values (arrays aligned with ``query_ids``) and their means.

    ``per_query`` and ``aggregate`` are keyed by metric labels such as ``"recall@10"``,
    ``"mrr"`` and ``"map"``.
    """

    query_ids: np.ndarray
    per_query: dict[str, np.ndarray]
    aggregate: dict[str, float]
    k: int
    all_queries: bool
    n_queries: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_queries", len(self.query_ids))

    def per_query_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {metric: value}}`` for JSON output."""
        labels = list(self.per_query)
        columns = [self.per_query[label].tolist() for label in labels]
        return {
            str(qid): {label: col[i] for label, col in zip(labels, columns, strict=True)}
            for i, qid in enumerate(self.query_ids.tolist())
        }


@dataclass(frozen=True)
class PreparedRanking:
    """The arrays every metric is computed from (exposed for benchmarks and tests).

    ``gains``        (n_queries, k) float relevance of the document at each rank (0 = padding)
    ``ideal``        (n_queries, k) the qrels' relevances sorted descending, cut at k
    ``n_relevant``   (n_queries,) number of judged documents with relevance > 0
    ``first_rank``   (n_queries,) 1-based rank of the first relevant document, 0 if none
    ``ap``           (n_queries,) average precision over the full ranking, or ``None``
    """

    gains: np.ndarray
    ideal: np.ndarray
    n_relevant: np.ndarray
    first_rank: np.ndarray
    ap: np.ndarray | None


def metric_labels(metrics: Iterable[str], k: int) -> list[str]:
    """Output labels for ``metrics`` at cut-off ``k`` (``"mrr"`` yields ``mrr@k`` and ``mrr``)."""
    labels: list[str] = []
    for name in metrics:
        if name == "mrr":
            labels += [f"mrr@{k}", "mrr"]
        elif name == "map":
            labels.append("map")
        else:
            labels.append(f"{name}@{k}")
    return labels


def _check_metrics(metrics: Sequence[str]) -> list[str]:
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {list(METRICS)}")
    return list(dict.fromkeys(metrics))


def _order_rows(qcode: np.ndarray, score: np.ndarray, doc_id: np.ndarray) -> np.ndarray:
    """Row order: query, then score descending, then document id descending (trec_eval)."""
    order = np.lexsort((-score, qcode))
    sq = qcode[order]
    ss = score[order]
    tied_prev = (sq[1:] == sq[:-1]) & (ss[1:] == ss[:-1])
    if not tied_prev.any():
        return order
    in_tie = np.zeros(len(order), dtype=bool)
    in_tie[1:] |= tied_prev
    in_tie[:-1] |= tied_prev
    group = np.cumsum(np.concatenate(([True], ~tied_prev)))
    pos = np.flatnonzero(in_tie)
    rows = order[pos]
    _, doc_rank = np.unique(doc_id[rows].astype(str), return_inverse=True)
    # Tie groups occupy contiguous positions, so sorting by group keeps every group in place.
    order[pos] = rows[np.lexsort((-doc_rank, group[pos]))]
    return order


def prepare(
    qrels: Qrels,
    run: Run,
    *,
    k: int = 10,
    all_queries: bool = False,
    gain: str = "linear",
    with_ap: bool = False,
) -> tuple[np.ndarray, PreparedRanking]:
    """Join ``run`` to ``qrels`` and build the arrays the metrics need.

    Returns ``(query_ids, prepared)``; ``query_ids`` is sorted (string order) and is the set of
    evaluated queries per the module conventions.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}")
    qrel_queries = np.sort(np.asarray(qrels.queries, dtype=object).astype(str)).astype(object)
    qrel_index = pd.Index(qrel_queries)
    run_q = qrel_index.get_indexer(run.query_id)
    if all_queries:
        query_ids = qrel_queries
        keep = run_q >= 0
        qcode = run_q[keep]
    else:
        present = np.zeros(len(qrel_queries), dtype=bool)
        present[run_q[run_q >= 0]] = True
        query_ids = qrel_queries[present]
        remap = np.cumsum(present) - 1
        keep = run_q >= 0
        qcode = remap[run_q[keep]]
    if len(query_ids) == 0:
        raise InputError(run.source, None, "none of the run's queries appear in the qrels")
    n_q = len(query_ids)
    docs = run.doc_id[keep]
    # trec_eval keeps scores as C floats, so values that differ only beyond single precision tie.
    score = run.score[keep].astype(np.float32)

    # Qrels restricted to evaluated queries.
    qr_q = pd.Index(query_ids).get_indexer(qrels.query_id)
    qr_keep = qr_q >= 0
    qr_q = qr_q[qr_keep]
    qr_doc = qrels.doc_id[qr_keep]
    qr_rel = qrels.relevance[qr_keep].astype(np.float64)

    # Relevance of every run row: hash the (small) set of judged document ids, then match
    # (query, document) pairs as int64 keys.
    judged_docs = pd.Index(pd.unique(qr_doc))
    run_d = judged_docs.get_indexer(docs)
    qr_d = judged_docs.get_indexer(qr_doc)
    width = np.int64(max(len(judged_docs), 1))
    qr_key = qr_q.astype(np.int64) * width + qr_d
    key_order = np.argsort(qr_key, kind="stable")
    sorted_keys = qr_key[key_order]
    run_key = qcode.astype(np.int64) * width + run_d
    hit = np.searchsorted(sorted_keys, run_key)
    hit = np.minimum(hit, max(len(sorted_keys) - 1, 0))
    rel = np.zeros(len(run_key), dtype=np.float64)
    if len(sorted_keys):
        matched = (run_d >= 0) & (sorted_keys[hit] == run_key)
        rel[matched] = qr_rel[key_order[hit[matched]]]

    order = _order_rows(qcode, score, docs)
    sq = qcode[order]
    srel = rel[order]
    starts = np.searchsorted(sq, np.arange(n_q))
    rank0 = np.arange(len(sq)) - starts[sq]

    def to_gain(values: np.ndarray) -> np.ndarray:
        clipped = np.maximum(values, 0.0)
        return clipped if gain == "linear" else np.exp2(clipped) - 1.0

    gains = np.zeros((n_q, k), dtype=np.float64)
    top = rank0 < k
    gains[sq[top], rank0[top]] = to_gain(srel[top])

    relevant = srel > 0
    first_rank = np.zeros(n_q, dtype=np.int64)
    rq = sq[relevant]
    if len(rq):
        uq, first_idx = np.unique(rq, return_index=True)
        first_rank[uq] = rank0[relevant][first_idx] + 1

    n_relevant = np.bincount(qr_q[qr_rel > 0], minlength=n_q).astype(np.int64)

    ideal = np.zeros((n_q, k), dtype=np.float64)
    pos_rel = qr_rel > 0
    iq = qr_q[pos_rel]
    irel = qr_rel[pos_rel]
    iorder = np.lexsort((-irel, iq))
    iq = iq[iorder]
    irel = irel[iorder]
    istarts = np.searchsorted(iq, np.arange(n_q))
    irank = np.arange(len(iq)) - istarts[iq]
    itop = irank < k
    ideal[iq[itop], irank[itop]] = to_gain(irel[itop])

    ap = None
    if with_ap:
        cum_rel = np.cumsum(relevant)
        base = np.concatenate(([0], cum_rel))[starts[sq]]
        rel_so_far = cum_rel - base
        prec = np.where(relevant, rel_so_far / (rank0 + 1), 0.0)
        ap_sum = np.bincount(sq, weights=prec, minlength=n_q)
        ap = np.divide(ap_sum, n_relevant, out=np.zeros(n_q), where=n_relevant > 0)

    return query_ids, PreparedRanking(gains, ideal, n_relevant, first_rank, ap)


def compute(prepared: PreparedRanking, *, k: int, metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-query metric arrays from prepared arrays (the vectorised metric stage)."""
    metrics = _check_metrics(metrics)
    gains = prepared.gains
    n_q = gains.shape[0]
    out: dict[str, np.ndarray] = {}
    relevant = gains > 0
    rel_ret = relevant.sum(axis=1)
    n_rel = prepared.n_relevant
    for name in metrics:
        if name == "recall":
            out[f"recall@{k}"] = np.divide(rel_ret, n_rel, out=np.zeros(n_q), where=n_rel > 0)
        elif name == "precision":
            out[f"precision@{k}"] = rel_ret / k
        elif name == "hit":
            out[f"hit@{k}"] = (rel_ret > 0).astype(np.float64)
        elif name == "mrr":
            first = prepared.first_rank
            rr = np.divide(1.0, first, out=np.zeros(n_q), where=first > 0)
            out[f"mrr@{k}"] = np.where((first > 0) & (first <= k), rr, 0.0)
            out["mrr"] = rr
        elif name == "ndcg":
            discount = 1.0 / np.log2(np.arange(2, k + 2))
            dcg = gains @ discount
            idcg = prepared.ideal @ discount
            out[f"ndcg@{k}"] = np.divide(dcg, idcg, out=np.zeros(n_q), where=idcg > 0)
        elif name == "map":
            if prepared.ap is None:
                raise ValueError("map needs prepare(..., with_ap=True)")
            out["map"] = prepared.ap
    return out


def evaluate(
    qrels: Qrels,
    run: Run,
    *,
    k: int = 10,
    metrics: Sequence[str] = DEFAULT_METRICS,
    all_queries: bool = False,
    gain: str = "linear",
) -> RetrievalResult:
    """Score ``run`` against ``qrels`` at cut-off ``k`` with trec_eval conventions.

    ``metrics`` is any subset of ``recall, precision, hit, mrr, ndcg, map``; ``mrr`` reports
    both ``mrr@k`` and the uncut ``mrr``. ``all_queries`` makes qrels queries missing from the
    run count as 0 (``trec_eval -c``). Raises ``InputError`` when no run query is in the qrels.
    """
    metrics = _check_metrics(metrics)
    query_ids, prepared = prepare(
        qrels, run, k=k, all_queries=all_queries, gain=gain, with_ap="map" in metrics
    )
    per_query = compute(prepared, k=k, metrics=metrics)
    aggregate = {label: float(values.mean()) for label, values in per_query.items()}
    return RetrievalResult(
        query_ids=query_ids,
        per_query=per_query,
        aggregate=aggregate,
        k=k,
        all_queries=all_queries,
    )
