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

Implementation: ids stay compact (Arrow strings, integer query codes; no Python object per
row). Only run rows that retrieve a judged relevant document can change a metric, so only their
ranks are computed, from one sort of 64-bit (query, float32 score) keys over all rows; document
ids are compared as strings only for rows whose score ties. The metric stage is NumPy over a
padded (queries x k) gain matrix. Hashes are used to find candidates only; every match is
confirmed on the strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scoring import _ids
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


def _sort_keys(run_query: np.ndarray, score: np.ndarray) -> np.ndarray:
    """int64 key per run row; ascending order = query, then float32 score descending.

    High 32 bits: the evaluated-query position (rows of other queries get the largest key).
    Low 32 bits: the float32 score mapped to an unsigned integer that sorts in descending score
    order. Scores are rounded to float32 first (trec_eval keeps C floats), and -0.0 is folded
    into +0.0 because the two compare equal.
    """
    out = np.empty(len(run_query), dtype=np.int64)
    for lo, hi in _ids.chunks(len(run_query)):
        single = score[lo:hi].astype(np.float32)
        single += np.float32(0.0)
        bits = single.view(np.uint32)
        # Non-negative: invert the 31 value bits; negative: the raw bits already sort descending.
        flip = bits >> np.uint32(31)
        flip -= np.uint32(1)
        flip &= np.uint32(0x7FFFFFFF)
        bits ^= flip
        query = run_query[lo:hi]
        key = query.astype(np.int64)
        key <<= 32
        key |= bits
        key[query < 0] = np.iinfo(np.int64).max
        out[lo:hi] = key
    return out


def _in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``values`` occur in the sorted array ``sorted_set``."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    pos = np.searchsorted(sorted_set, values)
    np.minimum(pos, len(sorted_set) - 1, out=pos)
    return sorted_set[pos] == values


def _match_judged(
    qrels: Qrels,
    qrel_rows: np.ndarray,
    run: Run,
    run_query: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Pair run rows with the qrels rows ``qrel_rows`` of the same (query, document).

    ``run_query`` is the evaluated-query position of every run row (-1 = not evaluated).
    Returns ``(run_rows, index into qrel_rows)``. The run's cached 64-bit hashes of (query,
    document) narrow 10 M rows down to candidates; every candidate's query and document string
    are then compared, so the result is exact whatever the hashes do.
    """
    # The qrels rows' queries as run query codes (the space of the run's hashes).
    to_run = _ids.positions_in(qrels._query_values, run._query_values)
    qrel_code = to_run[qrels._query_codes[qrel_rows]]
    usable = np.flatnonzero(qrel_code >= 0)
    qrel_rows, qrel_code = qrel_rows[usable], qrel_code[usable]
    qrel_keys = _ids.string_pair_keys(qrel_code, _ids.take(qrels._doc_ids, qrel_rows))
    # A bit table of the judged pairs drops almost every other row cheaply.
    judged = _ids.KeyFilter(qrel_keys)
    run_keys = run._pair_keys()
    found_rows, found_keys = [], []
    for lo, hi in _ids.chunks(len(run_query)):
        keys = run_keys[lo:hi]
        hit = judged(keys)
        hit &= run_query[lo:hi] >= 0
        found_rows.append(np.flatnonzero(hit) + lo)
        found_keys.append(keys[hit])
    candidates = np.concatenate(found_rows) if found_rows else np.zeros(0, dtype=np.int64)
    ckeys = np.concatenate(found_keys) if found_keys else np.zeros(0, dtype=np.uint64)
    key_order = np.argsort(qrel_keys, kind="stable")
    sorted_keys = qrel_keys[key_order]
    if len(sorted_keys) > 1 and bool(np.any(sorted_keys[1:] == sorted_keys[:-1])):
        run_rows, index = _match_judged_exact(qrels, qrel_rows, qrel_code, run, candidates)
        return run_rows, usable[index]
    pos = np.searchsorted(sorted_keys, ckeys)
    np.minimum(pos, max(len(sorted_keys) - 1, 0), out=pos)
    hit = sorted_keys[pos] == ckeys if len(sorted_keys) else np.zeros(len(ckeys), dtype=bool)
    run_rows = candidates[hit]
    index = key_order[pos[hit]]
    same = (run._query_codes[run_rows] == qrel_code[index]) & _ids.same_strings(
        run._doc_ids, run_rows, qrels._doc_ids, qrel_rows[index]
    )
    return run_rows[same], usable[index[same]]


def _match_judged_exact(
    qrels: Qrels,
    qrel_rows: np.ndarray,
    qrel_code: np.ndarray,
    run: Run,
    candidates: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary join on the strings of the candidate rows (used when hashes collide)."""
    docs = _ids.take(qrels._doc_ids, qrel_rows).to_pylist()
    lookup = {(q, d): i for i, (q, d) in enumerate(zip(qrel_code.tolist(), docs, strict=True))}
    cand_docs = _ids.take(run._doc_ids, candidates).to_pylist()
    cand_codes = run._query_codes[candidates].tolist()
    found = [lookup.get(pair, -1) for pair in zip(cand_codes, cand_docs, strict=True)]
    index = np.array(found, dtype=np.int64)
    keep = index >= 0
    return candidates[keep], index[keep]


def _ranks(
    keys: np.ndarray, rows: np.ndarray, query: np.ndarray, n_queries: int, docs: pa.Array
) -> np.ndarray:
    """0-based rank of each of ``rows`` in its query's ranking.

    ``keys`` (int64, one per run row) sort a query's rows by score descending; rows that are
    not evaluated carry the maximum key. The rank of a row is the number of rows of its query
    with a smaller key, plus the rows with an equal key (a tied score) whose document id is
    greater in string order: trec_eval's order, without sorting 10 M rows by document id.
    """
    ordered = np.sort(keys)
    query_start = np.searchsorted(ordered, np.arange(n_queries, dtype=np.int64) << 32)
    own = keys[rows]
    first = np.searchsorted(ordered, own, side="left")
    last = np.searchsorted(ordered, own, side="right")
    rank = first - query_start[query]
    tied = np.flatnonzero(last - first > 1)
    if len(tied) == 0:
        return rank
    tie_keys = np.unique(own[tied])
    maybe = _ids.KeyFilter(tie_keys)
    members = np.concatenate(
        [np.flatnonzero(maybe(keys[lo:hi])) + lo for lo, hi in _ids.chunks(len(keys))]
    )
    members = members[_in_sorted(keys[members], tie_keys)]
    group = np.searchsorted(tie_keys, keys[members])
    doc_rank = _ids.string_rank(_ids.take(docs, members))
    width = np.int64(len(members) + 1)
    combined = group * width + doc_rank
    combined_sorted = np.sort(combined)
    mine = combined[np.searchsorted(members, rows[tied])]
    mine_group = mine // width
    greater = np.searchsorted(combined_sorted, (mine_group + 1) * width, side="left")
    greater -= np.searchsorted(combined_sorted, mine, side="right")
    rank[tied] += greater
    return rank


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

    Only run rows that match a judged relevant document can contribute to any metric, so only
    their ranks are computed: one sort of 64-bit (query, score) keys for all rows, then string
    comparisons of document ids for the few rows whose score ties.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}")
    qrel_queries = _ids.sorted_strings(pc.unique(qrels._declared_queries()))
    run_pos = _ids.positions_in(run._query_values, qrel_queries)
    has_rows = np.bincount(run._query_codes, minlength=len(run._query_values)) > 0
    in_qrels = (run_pos >= 0) & has_rows
    if all_queries:
        evaluated = qrel_queries
        lut = np.where(in_qrels, run_pos, -1)
    else:
        present = np.zeros(len(qrel_queries), dtype=bool)
        present[run_pos[in_qrels]] = True
        evaluated = _ids.take(qrel_queries, np.flatnonzero(present))
        remap = np.cumsum(present) - 1
        lut = np.where(in_qrels, remap[np.maximum(run_pos, 0)], -1)
    n_q = len(evaluated)
    if n_q == 0:
        raise InputError(run.source, None, "none of the run's queries appear in the qrels")
    query_ids = _ids.to_objects(evaluated)
    run_query = lut.astype(np.int32)[run._query_codes]

    # Judged relevant documents (relevance > 0) of the evaluated queries.
    qrel_query_all = _ids.positions_in(qrels._query_values, evaluated)[qrels._query_codes]
    relevance = np.asarray(qrels.relevance)
    qrel_rows = np.flatnonzero((qrel_query_all >= 0) & (relevance > 0))
    qrel_query = qrel_query_all[qrel_rows]
    qrel_rel = relevance[qrel_rows].astype(np.float64)

    def to_gain(values: np.ndarray) -> np.ndarray:
        clipped = np.maximum(values, 0.0)
        return clipped if gain == "linear" else np.exp2(clipped) - 1.0

    n_relevant = np.bincount(qrel_query, minlength=n_q).astype(np.int64)
    ideal = np.zeros((n_q, k), dtype=np.float64)
    iorder = np.lexsort((-qrel_rel, qrel_query))
    iq = qrel_query[iorder]
    irel = qrel_rel[iorder]
    irank = np.arange(len(iq)) - np.searchsorted(iq, np.arange(n_q))[iq]
    itop = irank < k
    ideal[iq[itop], irank[itop]] = to_gain(irel[itop])

    # Run rows that retrieve a judged relevant document, and their ranks.
    rows, matched = _match_judged(qrels, qrel_rows, run, run_query)
    sort_keys = _sort_keys(run_query, run.score)
    rq = run_query[rows]
    rank0 = _ranks(sort_keys, rows, rq, n_q, run._doc_ids)
    del sort_keys
    rrel = qrel_rel[matched]

    gains = np.zeros((n_q, k), dtype=np.float64)
    top = rank0 < k
    gains[rq[top], rank0[top]] = to_gain(rrel[top])

    by_rank = np.lexsort((rank0, rq))
    rq = rq[by_rank]
    rank0 = rank0[by_rank]
    first_rank = np.zeros(n_q, dtype=np.int64)
    if len(rq):
        uq, first_idx = np.unique(rq, return_index=True)
        first_rank[uq] = rank0[first_idx] + 1

    ap = None
    if with_ap:
        # i-th relevant document of its query (1-based) at rank r contributes precision i / r.
        nth = np.arange(1, len(rq) + 1) - np.searchsorted(rq, rq, side="left")
        prec = nth / (rank0 + 1)
        ap_sum = np.bincount(rq, weights=prec, minlength=n_q)
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
