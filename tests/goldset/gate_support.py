"""A frozen gold version of 20 queries and TREC runs that rank each query's expected block at a
chosen rank, for the release gate's tests (client and ``manage.py gate``): a run at rank 2
against a baseline at rank 1 is a planted regression (nDCG@10 and MRR drop on every query,
recall@10 stays the same); the other way round an improvement."""

from junitparser import Error, Failure, JUnitXml, TestSuite

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


def junit_cases(source) -> dict[str, tuple[str, str] | None]:
    """The gate's JUnit XML (a file, or its bytes) as a JUnit parser (``junitparser``) reads it, the way a CI's test
    report does: ``{case name: None when it passed, else ("failure" or "error", its message)}``.
    Checks what such a reader relies on: a ``<testsuites>`` root holding one suite, every case
    named with the gate's class name, a failure's or error's text equal to its message, and the
    counts of the suite and of the root equal to the cases the parser found."""
    if isinstance(source, bytes):
        report = JUnitXml.fromstring(source)
    else:
        report = JUnitXml.fromfile(str(source))
    assert isinstance(report, JUnitXml) and not isinstance(report, TestSuite)  # <testsuites>
    (suite,) = list(report)
    cases = list(suite)
    failures = [c for c in cases if c.is_failure]
    errors = [c for c in cases if c.is_error]
    counts = (len(cases), len(failures), len(errors), 0)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == counts
    assert (report.tests, report.failures, report.errors, report.skipped) == counts
    found = {}
    for case in cases:
        assert case.name and case.classname == "goldset.gate"
        assert not case.is_skipped
        (result,) = case.result or [None]
        if result is None:
            found[case.name] = None
            continue
        assert isinstance(result, Failure | Error) and result.text == result.message
        assert result.type == ("RuleFailed" if isinstance(result, Failure) else "RuleNotEvaluated")
        found[case.name] = ("failure" if isinstance(result, Failure) else "error", result.message)
    assert len(found) == len(cases)  # one case per rule: no name twice
    return found
