"""Ranked-retrieval measures for all queries at once, with trec_eval's conventions.

A measure is named ``name@k`` with a cut-off k, or ``name`` alone over the whole ranking;
``rbp`` takes its persistence in parentheses, ``rbp(0.9)`` (default 0.8). trec_eval's own names
(``P_5``, ``ndcg_cut_10``, ``recip_rank``, ``Rprec``, ``infAP``, ``success_1``, ``set_P``, …) are
accepted as aliases. ``rel`` below means relevance ≥ the relevance level (1 by default,
trec_eval ``-l``); R is the number of judged documents with rel; ``rank`` is 1-based.

=============  =====================================================  =====================
measure        definition (per query)                                 trec_eval / other
=============  =====================================================  =====================
precision@k    rel documents in the top k / k                         ``P_k``
precision      rel documents retrieved / documents retrieved          ``set_P``
recall@k       rel documents in the top k / R                         ``recall_k``
recall         rel documents retrieved / R                            ``set_recall``
hit@k          1 if a rel document is in the top k                    ``success_k``
hit            1 if any rel document is retrieved                     (``num_rel_ret`` > 0)
mrr            1 / rank of the first rel document                     ``recip_rank``
mrr@k          ``mrr`` when that rank ≤ k, else 0                     ``recip_rank`` on top k
map            Σ over rel retrieved of (rel at or above it / rank),   ``map``
               divided by R
map@k          the same over the top k                                ``map_cut_k``
rprec          rel documents in the top R / R                         ``Rprec``
ndcg@k         DCG@k / ideal DCG@k, gain = relevance (> 0),           ``ndcg_cut_k``
               discount log2(rank + 1)
ndcg           the same over the whole ranking                        ``ndcg``
bpref          (1/R) Σ over rel retrieved of 1 − min(n, R)/min(N, R)  ``bpref``
               (n judged non-rel ranked above it, N judged non-rel)
infap          inferred AP (Yilmaz & Aslam 2006), trec_eval's form    ``infAP``
judged@k       judged documents in the top k / min(k, retrieved)      ir_measures ``Judged@k``
judged         judged documents retrieved / retrieved                 ir_measures ``Judged``
err@k          Σ_r (1/r) R_r Π_{i<r} (1 − R_i), R = (2^g − 1)/2^4,    ir_measures ``ERR@k``
               g the relevance clipped to [0, 4] (gdeval's scale)     (gdeval)
err            the same over the whole ranking
rbp(p)         (1 − p) Σ p^(rank−1) over rel retrieved, p = 0.8       ir_measures ``RBP(rel=l)``
               unless given; ``rbp(p)@k`` counts the top k only
=============  =====================================================  =====================

Conventions, chosen so that our numbers equal trec_eval's on the same files:

* A query's ranking is by score descending; ties are broken by document id descending in string
  (code point) order. The rank column of a TREC run is ignored. Scores are compared at single
  precision (float32), because trec_eval stores them as C ``float``: 1e-104 and 0.0 tie.
* A document listed twice for one query is an input error (raised by :mod:`scoring.io`).
* Judged = listed in the qrels with relevance ≥ 0. A negative relevance is trec_eval's "in the
  pool but not judged": not relevant, not counted as judged non-relevant by ``bpref``, and
  counted as pooled-unjudged by ``infap``. Relevance ≤ 0 adds no gain to nDCG.
* ``relevance_level`` (trec_eval ``-l``) decides which documents count as relevant for every
  binary measure; nDCG and ERR always use the graded relevance, as trec_eval does.
* ``judged_only`` (trec_eval ``-J``) drops retrieved documents that are not judged before
  ranks are assigned (the tie order among the rest is kept).
* precision@k divides by k even when fewer than k documents are returned (trec_eval).
* A qrels query with no relevant document scores 0 on every measure and counts in the mean
  (also the seed-001 semantics for an empty ``relevant.sourceIds``: hit@k = 0).
* Queries in the run but not in the qrels are ignored. Queries in the qrels but absent from the
  run are left out of the mean unless ``all_queries=True`` (``trec_eval -c``), when they score 0.
* ``gain="exponential"`` uses 2^rel − 1 for nDCG (no trec_eval equivalent).
* Qrels read from an Unrag dataset carry ``topK`` (per query, else ``defaults.topK``): each
  query's ranking is cut to its topK before any measure is computed (seed 001: topK is how many
  results are retrieved and scored, the k of recall@k), and ``defaults.topK`` is the default
  cut-off of :func:`evaluate` and the CLI when no k is given.

ERR, RBP and judged are not trec_eval measures (pytrec_eval has none of them); they follow
ir_measures' definitions except that rankings use trec_eval's tie order (ir_measures' judged
provider breaks ties by document id ascending).

Implementation: ids stay compact (Arrow strings, integer query codes; no Python object per
row). Only run rows that retrieve a judged document can change a measure, so only their ranks
are computed, from one sort of 64-bit (query, float32 score) keys over all rows; document ids
are compared as strings only for rows whose score ties. Measures that look at judged
non-relevant documents (bpref, infap, judged, ``judged_only``) join every judged row; the others
only the relevant ones. The measure stage is NumPy over these few rows. Hashes are used to find
candidates only; every match is confirmed on the strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scoring import _ids
from scoring.errors import InputError
from scoring.io import Qrels, Run

#: Measure names (see the module docstring); ``NEEDS_CUTOFF`` must have ``@k``, ``NO_CUTOFF``
#: must not.
METRICS = (
    "recall",
    "precision",
    "hit",
    "mrr",
    "ndcg",
    "map",
    "rprec",
    "bpref",
    "infap",
    "judged",
    "err",
    "rbp",
)
NO_CUTOFF = ("rprec", "bpref", "infap")
#: The default measures at cut-off k; ``mrr`` is also reported uncut, as before.
DEFAULT_METRICS = ("recall@{k}", "precision@{k}", "hit@{k}", "mrr@{k}", "mrr", "ndcg@{k}")
GAINS = ("linear", "exponential")
DEFAULT_RBP_P = 0.8
ERR_MAX_GRADE = 4
INFAP_EPSILON = 0.00001
_JUDGED_ROWS = ("bpref", "infap", "judged")

_TREC_ALIASES = {
    "P": "precision",
    "recall": "recall",
    "success": "hit",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
}
_TREC_SINGLE = {
    "set_P": "precision",
    "set_recall": "recall",
    "recip_rank": "mrr",
    "Rprec": "rprec",
    "infAP": "infap",
}
_MEASURE = re.compile(r"^(?P<name>[a-z]+)(?:\((?P<p>[0-9]*\.?[0-9]+)\))?(?:@(?P<k>[0-9]+))?$")


@dataclass(frozen=True)
class Measure:
    """One parsed measure: ``name`` (see ``METRICS``), cut-off ``k`` (``None`` = whole
    ranking), RBP persistence ``p``, and the ``label`` results are keyed by."""

    name: str
    k: int | None
    p: float | None
    label: str


def parse_measure(text: str) -> Measure:
    """Parse ``name``, ``name@k``, ``rbp(p)``, ``rbp(p)@k`` or a trec_eval name (``P_5``).

    Raises ``ValueError`` naming the problem (unknown measure, k < 1, a cut-off on a measure
    that has none, p outside (0, 1)).
    """
    raw = text.strip()
    if raw in _TREC_SINGLE:
        return Measure(_TREC_SINGLE[raw], None, None, _TREC_SINGLE[raw])
    trec = re.fullmatch(r"(P|recall|success|ndcg_cut|map_cut)_([0-9]+)", raw)
    if trec:
        raw = f"{_TREC_ALIASES[trec.group(1)]}@{trec.group(2)}"
    match = _MEASURE.match(raw.lower() if raw.lower() in ("rprec", "infap") else raw)
    if not match or match.group("name") not in METRICS:
        raise ValueError(
            f"unknown measure {text!r}; use name or name@k with name one of {', '.join(METRICS)}"
        )
    name = match.group("name")
    k = int(match.group("k")) if match.group("k") else None
    if k is not None and k < 1:
        raise ValueError(f"{text!r}: the cut-off must be at least 1")
    if k is not None and name in NO_CUTOFF:
        raise ValueError(f"{text!r}: {name} has no cut-off (trec_eval has none)")
    p = None
    if match.group("p") is not None:
        if name != "rbp":
            raise ValueError(f"{text!r}: only rbp takes a parameter, rbp(p)")
        p = float(match.group("p"))
        if not 0.0 < p < 1.0:
            raise ValueError(f"{text!r}: the RBP persistence p must be between 0 and 1")
    elif name == "rbp":
        p = DEFAULT_RBP_P
    label = name + (f"({match.group('p')})" if match.group("p") else "") + (f"@{k}" if k else "")
    return Measure(name, k, p, label)


def parse_measures(names: Iterable[str] | str) -> list[Measure]:
    """Parse a list (or comma-separated string) of measures; duplicates are dropped."""
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    parsed = [parse_measure(n) for n in names]
    if not parsed:
        raise ValueError("no measures given")
    return list({m.label: m for m in parsed}.values())


def default_metrics(k: int) -> list[str]:
    """The default measure names at cut-off ``k``."""
    return [name.format(k=k) for name in DEFAULT_METRICS]


def metric_labels(metrics: Iterable[str]) -> list[str]:
    """Output labels of ``metrics`` in order (duplicates dropped)."""
    return [m.label for m in parse_measures(list(metrics))]


@dataclass(frozen=True)
class RetrievalResult:
    """Per-query values (arrays aligned with ``query_ids``) and their means.

    ``per_query`` and ``aggregate`` are keyed by measure labels such as ``"recall@10"``,
    ``"mrr"`` and ``"map"``.
    """

    query_ids: np.ndarray
    per_query: dict[str, np.ndarray]
    aggregate: dict[str, float]
    k: int | None
    all_queries: bool
    relevance_level: int = 1
    judged_only: bool = False
    n_queries: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_queries", len(self.query_ids))

    def per_query_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {measure: value}}`` for JSON output."""
        labels = list(self.per_query)
        columns = [self.per_query[label].tolist() for label in labels]
        return {
            str(qid): {label: col[i] for label, col in zip(labels, columns, strict=True)}
            for i, qid in enumerate(self.query_ids.tolist())
        }

    def trec_text(self, *, per_query: bool = True, runid: str = "unknown") -> str:
        """trec_eval's text output (:func:`trec_eval_name` names, trec_eval's order).

        With ``per_query`` (trec_eval ``-q``), every query's measures first, queries in
        trec_eval's order (query ids sorted as strings), ``measure<TAB>query<TAB>value``; then
        ``runid<TAB>all<TAB>RUNID``, ``num_q<TAB>all<TAB>N`` and ``measure<TAB>all<TAB>mean``.
        The measure name is left-aligned in 22 columns and values have 4 decimals, as trec_eval
        prints them (``%-22s\t%s\t%6.4f``)."""
        labels = sorted(self.per_query, key=_trec_order)
        names = {label: trec_eval_name(label) for label in labels}
        lines = []
        if per_query:
            columns = [self.per_query[label].tolist() for label in labels]
            qids = [str(q) for q in self.query_ids.tolist()]
            for i in sorted(range(len(qids)), key=qids.__getitem__):
                for label, column in zip(labels, columns, strict=True):
                    lines.append(f"{names[label]:<22}\t{qids[i]}\t{column[i]:6.4f}")
        lines.append(f"{'runid':<22}\tall\t{runid}")
        lines.append(f"{'num_q':<22}\tall\t{self.n_queries}")
        for label in labels:
            lines.append(f"{names[label]:<22}\tall\t{self.aggregate[label]:6.4f}")
        return "\n".join(lines) + "\n"


#: trec_eval's name of a measure with a cut-off (``P_5``) and without (``recip_rank``).
TREC_EVAL_CUT_NAMES = {
    "precision": "P",
    "recall": "recall",
    "ndcg": "ndcg_cut",
    "map": "map_cut",
    "hit": "success",
}
TREC_EVAL_NAMES = {
    "map": "map",
    "rprec": "Rprec",
    "bpref": "bpref",
    "mrr": "recip_rank",
    "infap": "infAP",
    "ndcg": "ndcg",
    "precision": "set_P",
    "recall": "set_recall",
}
#: trec_eval prints its measures in the order of its measure table (``measures.c``).
_TREC_TABLE = (
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P",
    "recall",
    "infAP",
    "ndcg",
    "ndcg_cut",
    "map_cut",
    "success",
    "set_P",
    "set_recall",
)


def trec_eval_name(label: str) -> str:
    """trec_eval's name of a measure label: ``precision@5`` → ``P_5``, ``recall@10`` →
    ``recall_10``, ``ndcg@10`` → ``ndcg_cut_10``, ``map@10`` → ``map_cut_10``, ``hit@10`` →
    ``success_10``, ``mrr`` → ``recip_rank``, ``rprec`` → ``Rprec``, ``infap`` → ``infAP``,
    ``precision`` → ``set_P``, ``recall`` → ``set_recall``; ``map``, ``ndcg``, ``bpref`` keep
    theirs. Measures trec_eval does not have (``mrr@k``, ``hit``, ``judged``, ``err``,
    ``rbp``) keep our label."""
    m = parse_measure(label)
    if m.p is not None and m.name == "rbp":
        return m.label
    if m.k is not None and m.name in TREC_EVAL_CUT_NAMES:
        return f"{TREC_EVAL_CUT_NAMES[m.name]}_{m.k}"
    if m.k is None and m.name in TREC_EVAL_NAMES:
        return TREC_EVAL_NAMES[m.name]
    return m.label


def _trec_order(label: str) -> tuple[int, int, str]:
    name = trec_eval_name(label)
    base, _, cut = name.rpartition("_")
    if base in _TREC_TABLE and cut.isdigit():
        return (_TREC_TABLE.index(base), int(cut), "")
    if name in _TREC_TABLE:
        return (_TREC_TABLE.index(name), 0, "")
    return (len(_TREC_TABLE), 0, label)  # ours, after trec_eval's, in label order


@dataclass(frozen=True)
class PreparedRanking:
    """The arrays every measure is computed from (exposed for benchmarks and tests).

    Per query (arrays of length n_queries):
    ``n_ret`` documents retrieved (judged ones only under ``judged_only``), ``n_rel`` judged
    documents with relevance ≥ the level, ``n_nonrel`` judged documents below it (≥ 0).
    Per retrieved judged document ("hit"), sorted by query then rank:
    ``hit_query``, ``hit_rank`` (0-based), ``hit_rel`` (its qrels relevance).
    Per judged document with relevance > 0, sorted by query then relevance descending:
    ``ideal_query``, ``ideal_rel`` (for ideal DCG).
    """

    n_ret: np.ndarray
    n_rel: np.ndarray
    n_nonrel: np.ndarray
    hit_query: np.ndarray
    hit_rank: np.ndarray
    hit_rel: np.ndarray
    ideal_query: np.ndarray
    ideal_rel: np.ndarray
    relevance_level: int
    all_judged: bool


def _needs_all_judged(measures: Sequence[Measure], judged_only: bool) -> bool:
    return judged_only or any(m.name in _JUDGED_ROWS for m in measures)


def _sort_keys(run_query: np.ndarray, score: np.ndarray) -> np.ndarray:
    """int64 key per run row; ascending order = query, then float32 score descending.

    High 32 bits: the evaluated-query position (rows of other queries get the largest key).
    Low 32 bits: the float32 score mapped to an unsigned integer that sorts in descending score
    order. Scores are rounded to float32 first (trec_eval keeps C floats), and -0.0 is folded
    into +0.0 because the two compare equal.
    """
    out = np.empty(len(run_query), dtype=np.int64)

    def one(span: tuple[int, int]) -> None:
        lo, hi = span
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

    _ids.in_threads(one, list(_ids.chunks(len(run_query))))
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

    def one(span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = span
        keys = run_keys[lo:hi]
        hit = judged(keys)
        hit &= run_query[lo:hi] >= 0
        return np.flatnonzero(hit) + lo, keys[hit]

    found = _ids.in_threads(one, list(_ids.chunks(len(run_query))))
    found_rows = [rows for rows, _ in found]
    found_keys = [keys for _, keys in found]
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
    if _ids.idle_threads() > 1:
        # np.sort(keys), as two halves split at a key value sorted on two threads: every key
        # of the lower half is smaller than every key of the upper one, so they simply join.
        middle = np.int64(n_queries // 2) << 32
        lower = keys < middle
        ordered = np.concatenate(_ids.in_threads(np.sort, [keys[lower], keys[~lower]]))
        del lower
    else:
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
        _ids.in_threads(
            lambda span: np.flatnonzero(maybe(keys[span[0] : span[1]])) + span[0],
            list(_ids.chunks(len(keys))),
        )
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
    all_queries: bool = False,
    relevance_level: int = 1,
    judged_only: bool = False,
    all_judged: bool = False,
) -> tuple[np.ndarray, PreparedRanking]:
    """Join ``run`` to ``qrels`` and build the arrays the measures need.

    Returns ``(query_ids, prepared)``; ``query_ids`` is sorted (string order) and is the set of
    evaluated queries per the module conventions. ``all_judged`` joins every judged row (needed
    by bpref, infap, judged and ``judged_only``, which is implied); otherwise only rows with
    relevance ≥ min(level, 1), the only ones the other measures look at.
    """
    if relevance_level < 0:
        raise ValueError("the relevance level must be 0 or more")
    all_judged = all_judged or judged_only
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
    n_ret = np.bincount(
        lut[np.flatnonzero(lut >= 0)],
        weights=np.bincount(run._query_codes, minlength=len(lut))[lut >= 0],
        minlength=n_q,
    ).astype(np.int64)

    qrel_query_all = _ids.positions_in(qrels._query_values, evaluated)[qrels._query_codes]
    relevance = np.asarray(qrels.relevance, dtype=np.int64)
    in_q = qrel_query_all >= 0
    n_rel = np.bincount(qrel_query_all[in_q & (relevance >= relevance_level)], minlength=n_q)
    nonrel = in_q & (relevance >= 0) & (relevance < relevance_level)
    n_nonrel = np.bincount(qrel_query_all[nonrel], minlength=n_q)
    positive = np.flatnonzero(in_q & (relevance > 0))
    iorder = np.lexsort((-relevance[positive], qrel_query_all[positive]))
    ideal_query = qrel_query_all[positive][iorder]
    ideal_rel = relevance[positive][iorder]

    wanted = in_q if all_judged else in_q & (relevance >= min(relevance_level, 1))
    qrel_rows = np.flatnonzero(wanted)
    rows, matched = _match_judged(qrels, qrel_rows, run, run_query)
    sort_keys = _sort_keys(run_query, run.score)
    hit_query = run_query[rows].astype(np.int64)
    hit_rank = _ranks(sort_keys, rows, hit_query, n_q, run._doc_ids)
    del sort_keys
    hit_rel = relevance[qrel_rows[matched]]
    order = np.lexsort((hit_rank, hit_query))
    hit_query, hit_rank, hit_rel = hit_query[order], hit_rank[order], hit_rel[order]
    if judged_only:
        # trec_eval -J: unjudged documents leave the ranking; the rest keep their order.
        keep = hit_rel >= 0
        hit_query, hit_rel = hit_query[keep], hit_rel[keep]
        hit_rank = np.arange(len(hit_query)) - np.searchsorted(hit_query, hit_query, "left")
        n_ret = np.bincount(hit_query, minlength=n_q).astype(np.int64)
    if qrels.cutoffs:
        # Unrag topK: a query retrieves and scores only its top k results (seed 001).
        limit = np.array(
            [qrels.cutoffs.get(q, np.iinfo(np.int64).max) for q in query_ids.tolist()],
            dtype=np.int64,
        )
        keep = hit_rank < limit[hit_query]
        hit_query, hit_rank, hit_rel = hit_query[keep], hit_rank[keep], hit_rel[keep]
        n_ret = np.minimum(n_ret, limit)
    prepared = PreparedRanking(
        n_ret=n_ret,
        n_rel=n_rel.astype(np.int64),
        n_nonrel=n_nonrel.astype(np.int64),
        hit_query=hit_query,
        hit_rank=hit_rank.astype(np.int64),
        hit_rel=hit_rel,
        ideal_query=ideal_query,
        ideal_rel=ideal_rel,
        relevance_level=relevance_level,
        all_judged=all_judged,
    )
    return query_ids, prepared


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(len(num)), where=den > 0)


def _position_in_query(query: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal (sorted) query values."""
    return np.arange(len(query)) - np.searchsorted(query, query, side="left")


def _exclusive_count(query: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements of the same query have ``flag`` set."""
    before = np.cumsum(flag) - flag
    start = np.searchsorted(query, query, side="left")
    return before - before[start]


class _Stage:
    """Per-call cache of the intermediate arrays measures share."""

    def __init__(self, prepared: PreparedRanking, gain: str) -> None:
        self.p = prepared
        self.gain = gain
        self.n_q = len(prepared.n_ret)
        self.relevant = prepared.hit_rel >= prepared.relevance_level
        self._rel_rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def count(self, mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.p.hit_query[mask], minlength=self.n_q).astype(np.float64)

    def within(self, k: int | None) -> np.ndarray | slice:
        return self.p.hit_rank < k if k is not None else np.ones(len(self.p.hit_rank), bool)

    def rel_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, 0-based rank, 1-based count of relevant so far) of relevant hits."""
        if self._rel_rows is None:
            idx = np.flatnonzero(self.relevant)
            q, r = self.p.hit_query[idx], self.p.hit_rank[idx]
            self._rel_rows = (q, r, _position_in_query(q) + 1)
        return self._rel_rows

    def to_gain(self, rel: np.ndarray) -> np.ndarray:
        clipped = np.maximum(rel, 0).astype(np.float64)
        return clipped if self.gain == "linear" else np.exp2(clipped) - 1.0


def _precision(s: _Stage, m: Measure) -> np.ndarray:
    hits = s.count(s.relevant & s.within(m.k))
    return hits / m.k if m.k is not None else _div(hits, s.p.n_ret)


def _recall(s: _Stage, m: Measure) -> np.ndarray:
    return _div(s.count(s.relevant & s.within(m.k)), s.p.n_rel)


def _hit(s: _Stage, m: Measure) -> np.ndarray:
    return (s.count(s.relevant & s.within(m.k)) > 0).astype(np.float64)


def _mrr(s: _Stage, m: Measure) -> np.ndarray:
    q, r, nth = s.rel_rows()
    first = nth == 1
    out = np.zeros(s.n_q)
    out[q[first]] = 1.0 / (r[first] + 1)
    if m.k is not None:
        out[q[first][r[first] >= m.k]] = 0.0
    return out


def _map(s: _Stage, m: Measure) -> np.ndarray:
    q, r, nth = s.rel_rows()
    keep = r < m.k if m.k is not None else np.ones(len(r), bool)
    total = np.bincount(q[keep], weights=nth[keep] / (r[keep] + 1.0), minlength=s.n_q)
    return _div(total, s.p.n_rel)


def _rprec(s: _Stage, m: Measure) -> np.ndarray:
    q, r, _ = s.rel_rows()
    inside = r < s.p.n_rel[q]
    return _div(np.bincount(q[inside], minlength=s.n_q), s.p.n_rel)


def _ndcg(s: _Stage, m: Measure) -> np.ndarray:
    p = s.p
    mask = (p.hit_rel > 0) & s.within(m.k)
    discount = 1.0 / np.log2(p.hit_rank[mask] + 2.0)
    dcg = np.bincount(
        p.hit_query[mask], weights=s.to_gain(p.hit_rel[mask]) * discount, minlength=s.n_q
    )
    irank = _position_in_query(p.ideal_query)
    imask = irank < m.k if m.k is not None else np.ones(len(irank), bool)
    idcg = np.bincount(
        p.ideal_query[imask],
        weights=s.to_gain(p.ideal_rel[imask]) / np.log2(irank[imask] + 2.0),
        minlength=s.n_q,
    )
    return _div(dcg, idcg)


def _judged_counts(s: _Stage) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rel, judged non-rel, pooled-unjudged) hits ranked above each hit of its query."""
    p = s.p
    nonrel = (p.hit_rel >= 0) & ~s.relevant
    unjudged = p.hit_rel < 0
    return (
        _exclusive_count(p.hit_query, s.relevant),
        _exclusive_count(p.hit_query, nonrel),
        _exclusive_count(p.hit_query, unjudged),
    )


def _bpref(s: _Stage, m: Measure) -> np.ndarray:
    p = s.p
    _, nonrel_above, _ = _judged_counts(s)
    idx = np.flatnonzero(s.relevant)
    q = p.hit_query[idx]
    n = nonrel_above[idx].astype(np.float64)
    cap = np.minimum(p.n_nonrel[q], p.n_rel[q]).astype(np.float64)
    part = np.where(n > 0, 1.0 - np.minimum(n, p.n_rel[q]) / np.maximum(cap, 1.0), 1.0)
    return _div(np.bincount(q, weights=part, minlength=s.n_q), p.n_rel)


def _infap(s: _Stage, m: Measure) -> np.ndarray:
    p = s.p
    rel_above, nonrel_above, unjudged_above = _judged_counts(s)
    idx = np.flatnonzero(s.relevant)
    q = p.hit_query[idx]
    j = p.hit_rank[idx].astype(np.float64)
    r1 = rel_above[idx].astype(np.float64)  # rel_so_far - 1 in trec_eval
    nr = nonrel_above[idx].astype(np.float64)
    un = unjudged_above[idx].astype(np.float64)
    eps = INFAP_EPSILON
    safe_j = np.maximum(j, 1.0)
    part = np.where(
        j == 0,
        1.0,
        1.0 / (j + 1.0)
        + (j / (j + 1.0)) * ((r1 + nr + un) / safe_j) * ((r1 + eps) / (r1 + nr + 2 * eps)),
    )
    return _div(np.bincount(q, weights=part, minlength=s.n_q), p.n_rel)


def _judged(s: _Stage, m: Measure) -> np.ndarray:
    inside = s.count(s.within(m.k))
    shown = np.minimum(s.p.n_ret, m.k) if m.k is not None else s.p.n_ret
    return _div(inside, shown)


def _err(s: _Stage, m: Measure) -> np.ndarray:
    p = s.p
    grade = np.clip(p.hit_rel, 0, ERR_MAX_GRADE).astype(np.float64)
    stop = (np.exp2(grade) - 1.0) / 2.0**ERR_MAX_GRADE
    # Probability of reaching each hit: the product of (1 - R) over earlier hits of the query
    # (documents outside the qrels have R = 0 and do not change it).
    log_keep = np.log1p(-stop)
    before = np.cumsum(log_keep) - log_keep
    start = np.searchsorted(p.hit_query, p.hit_query, side="left")
    reach = np.exp(before - before[start])
    part = reach * stop / (p.hit_rank + 1.0)
    mask = s.within(m.k)
    return np.bincount(p.hit_query[mask], weights=part[mask], minlength=s.n_q)


def _rbp(s: _Stage, m: Measure) -> np.ndarray:
    mask = s.relevant & s.within(m.k)
    weights = np.power(m.p, s.p.hit_rank[mask].astype(np.float64))
    return (1.0 - m.p) * np.bincount(s.p.hit_query[mask], weights=weights, minlength=s.n_q)


_COMPUTE = {
    "precision": _precision,
    "recall": _recall,
    "hit": _hit,
    "mrr": _mrr,
    "map": _map,
    "rprec": _rprec,
    "ndcg": _ndcg,
    "bpref": _bpref,
    "infap": _infap,
    "judged": _judged,
    "err": _err,
    "rbp": _rbp,
}


def compute(
    prepared: PreparedRanking, *, metrics: Sequence[str | Measure], gain: str = "linear"
) -> dict[str, np.ndarray]:
    """Per-query arrays of ``metrics`` from prepared arrays (the vectorised measure stage)."""
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}")
    measures = [m if isinstance(m, Measure) else parse_measure(m) for m in metrics]
    if not prepared.all_judged and any(m.name in _JUDGED_ROWS for m in measures):
        raise ValueError("bpref, infap and judged need prepare(..., all_judged=True)")
    stage = _Stage(prepared, gain)
    return {m.label: _COMPUTE[m.name](stage, m) for m in measures}


def evaluate(
    qrels: Qrels,
    run: Run,
    *,
    k: int | None = None,
    metrics: Sequence[str] | str | None = None,
    all_queries: bool = False,
    gain: str = "linear",
    relevance_level: int = 1,
    judged_only: bool = False,
) -> RetrievalResult:
    """Score ``run`` against ``qrels`` with trec_eval conventions.

    ``metrics`` are measure names (``map``, ``ndcg@20``, ``rbp(0.9)``, ``P_5``, …; see the
    module docstring); ``None`` gives the defaults at cut-off ``k``: recall@k, precision@k,
    hit@k, mrr@k, mrr, ndcg@k. ``k`` defaults to the qrels' ``default_k`` (Unrag
    ``defaults.topK``), else 10. Only the measures asked for are computed. ``all_queries`` makes
    qrels queries missing from the run count as 0 (``trec_eval -c``), ``relevance_level`` is
    ``-l`` and ``judged_only`` is ``-J``. Raises ``InputError`` when no run query is in the
    qrels and ``ValueError`` for an unknown measure.
    """
    k = k if k is not None else qrels.default_k or 10
    if k < 1:
        raise ValueError("k must be at least 1")
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}")
    measures = parse_measures(default_metrics(k) if metrics is None else metrics)
    query_ids, prepared = prepare(
        qrels,
        run,
        all_queries=all_queries,
        relevance_level=relevance_level,
        judged_only=judged_only,
        all_judged=_needs_all_judged(measures, judged_only),
    )
    per_query = compute(prepared, metrics=measures, gain=gain)
    return RetrievalResult(
        query_ids=query_ids,
        per_query=per_query,
        aggregate=_aggregate(per_query),
        k=k,
        all_queries=all_queries,
        relevance_level=relevance_level,
        judged_only=judged_only,
    )


def _aggregate(per_query: dict[str, np.ndarray]) -> dict[str, float]:
    """A measure over all queries: the mean of its per-query values (trec_eval's ``all``)."""
    return {label: float(values.mean()) for label, values in per_query.items()}


def merge_results(parts: Sequence[RetrievalResult]) -> RetrievalResult:
    """One result from the results of scoring a partition of the queries (in any order) with the
    same settings: per-query values concatenated in query-id order, then aggregated exactly as
    :func:`evaluate` does, so the merge equals scoring the whole run in one call."""
    if not parts:
        raise ValueError("nothing to merge")
    first = parts[0]
    settings = (first.k, first.all_queries, first.relevance_level, first.judged_only)
    labels = list(first.per_query)
    for part in parts:
        if (part.k, part.all_queries, part.relevance_level, part.judged_only) != settings:
            raise ValueError("the parts were scored with different settings")
        if list(part.per_query) != labels:
            raise ValueError("the parts were scored with different measures")
    query_ids = np.concatenate([part.query_ids for part in parts])
    order = pc.sort_indices(_ids.as_strings(query_ids)).to_numpy()  # prepare()'s order
    query_ids = query_ids[order]
    if len(set(query_ids.tolist())) != len(query_ids):
        raise ValueError("the parts share queries: they must partition the queries")
    per_query = {
        label: np.concatenate([part.per_query[label] for part in parts])[order] for label in labels
    }
    return RetrievalResult(
        query_ids=query_ids,
        per_query=per_query,
        aggregate=_aggregate(per_query),
        k=first.k,
        all_queries=first.all_queries,
        relevance_level=first.relevance_level,
        judged_only=first.judged_only,
    )
