"""A frozen gold version of 20 queries and TREC runs that rank each query's expected block at a
chosen rank, for the release gate's tests (client and ``manage.py gate``): a run at rank 2
against a baseline at rank 1 is a planted regression (nDCG@10 and MRR drop on every query,
recall@10 stays the same); the other way round an improvement."""

from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus

N_QUERIES = 20

# nDCG@10 at least 0.60 (a run at rank 2 has 1/log2(3) = 0.63 and passes), recall@10 and
# nDCG@10 not significantly worse than the baseline.
RULES = """\
# kept in the repository being tested
ndcg@10 >= 0.60
recall@10 not worse than baseline at alpha 0.05
ndcg@10 not worse than baseline at alpha 0.05   # the planted regression fails here
"""


def frozen_version(actor, *, project=None):
    """v1 of ``project`` (the default one): 20 triples ``Q-000``… each on its own block."""
    versions = make_gold_corpus(N_QUERIES)
    rows = [gold_row_for(bv, triple_id=f"Q-{i:03d}") for i, bv in enumerate(versions)]
    frozen = store_frozen_version(project=project or default_project(), rows=rows, actor=actor)
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def trec_run(version, *, rank: int, tag: str = "sys", salt: int = 0) -> bytes:
    """Each query retrieves four blocks, its expected block at ``rank``; ``salt`` changes the
    scores (another file, the same ranking)."""
    blocks, lines = version.blocks, []
    for i, block in enumerate(blocks):
        others = [b for b in blocks if b != block]
        ranked = others[i % 5 : i % 5 + 3]
        ranked.insert(rank - 1, block)
        lines += [
            f"Q-{i:03d} Q0 {doc} {r + 1} {10 - r + salt / 100:.2f} {tag}"
            for r, doc in enumerate(ranked)
        ]
    return ("\n".join(lines) + "\n").encode()
