"""Issue 24: ``--format trec`` prints trec_eval's output (names, runid, num_q, per query and
``all``, tab-separated), checked against pytrec_eval (trec_eval 9) on a random collection; and
``--help`` lists the measures and the strata."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval

from scoring.cli import main

MEASURES = "precision@5,recall@10,ndcg@10,mrr,map,map@10,hit@5,rprec,bpref,ndcg,precision,recall"
TREC = {
    "precision@5": "P_5",
    "recall@10": "recall_10",
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
    "map": "map",
    "map@10": "map_cut_10",
    "hit@5": "success_5",
    "rprec": "Rprec",
    "bpref": "bpref",
    "ndcg": "ndcg",
    "precision": "set_P",
    "recall": "set_recall",
}


def _collection(seed=7, n_queries=12):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"t{seed}q{q:02d}"
        docs = [f"d{i}" for i in range(30)]
        judged = rng.choice(docs, size=8, replace=False)
        qrels[qid] = {d: int(rng.integers(0, 3)) for d in judged}
        qrels[qid][str(judged[0])] = 2  # at least one relevant document
        retrieved = rng.choice(docs, size=20, replace=False)
        run[qid] = {d: float(rng.integers(0, 6)) for d in retrieved}  # ties on purpose
    return qrels, run


def _files(write, qrels, run):
    q = "".join(f"{qid} 0 {d} {r}\n" for qid, docs in qrels.items() for d, r in docs.items())
    r = "".join(
        f"{qid} Q0 {d} {i + 1} {s} myrun-7\n"
        for qid, docs in run.items()
        for i, (d, s) in enumerate(docs.items())
    )
    return write("qrels.txt", q), write("run.txt", r)


def test_trec_format_uses_trec_eval_names_and_lines_with_pytrec_eval_values(capsys, write):
    qrels, run = _collection()
    qpath, rpath = _files(write, qrels, run)
    code = main(
        ["retrieval", "--qrels", qpath, "--run", rpath, "--metrics", MEASURES]
        + ["--format", "trec", "--per-query"]
    )
    out = capsys.readouterr().out
    assert code == 0
    names = {
        "P.5": None,
        "recall.10": None,
        "ndcg_cut.10": None,
        "recip_rank": None,
        "map": None,
        "map_cut.10": None,
        "success.5": None,
        "Rprec": None,
        "bpref": None,
        "ndcg": None,
        "set_P": None,
        "set_recall": None,
    }
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
    lines = out.splitlines()
    rows = [line.split("\t") for line in lines]
    assert all(len(r) == 3 for r in rows)  # measure, query, value: tab-separated
    assert all(len(r[0]) >= 22 and r[0] == r[0].rstrip().ljust(22) for r in rows)
    per_query = [(r[0].strip(), r[1], r[2]) for r in rows if r[1] != "all"]
    summary = [(r[0].strip(), r[2]) for r in rows if r[1] == "all"]
    # Every per-query line is pytrec_eval's value under its trec_eval name, to 4 decimals.
    seen = set()
    for name, qid, value in per_query:
        assert name in expected[qid], name
        assert value == f"{expected[qid][name]:.4f}"
        seen.add((qid, name))
    assert seen == {(q, n) for q in expected for n in expected[q]}
    # Queries in trec_eval's order, each with all its measures together.
    order = list(dict.fromkeys(q for _, q, _ in per_query))
    assert order == sorted(expected)
    # Then runid (the run's tag), num_q, and the means.
    assert summary[0] == ("runid", "myrun-7")
    assert summary[1] == ("num_q", str(len(expected)))
    means = dict(summary[2:])
    assert set(means) == set(TREC.values())
    for name, value in means.items():
        mean = sum(expected[q][name] for q in expected) / len(expected)
        assert value == f"{mean:.4f}"
    # trec_eval's measure-table order: map … recip_rank, P, recall, …, ndcg_cut, map_cut, success
    assert [n for n, _ in summary[2:]] == [
        "map",
        "Rprec",
        "bpref",
        "recip_rank",
        "P_5",
        "recall_10",
        "ndcg",
        "ndcg_cut_10",
        "map_cut_10",
        "success_5",
        "set_P",
        "set_recall",
    ]


def test_measures_trec_eval_lacks_keep_our_names(capsys, write):
    qrels, run = _collection(seed=3, n_queries=3)
    qpath, rpath = _files(write, qrels, run)
    main(["retrieval", "--qrels", qpath, "--run", rpath, "--metrics", "mrr@10,P_5,judged@5"])
    main(
        ["retrieval", "--qrels", qpath, "--run", rpath, "--metrics", "mrr@10,P_5,judged@5"]
        + ["--format", "trec"]
    )
    out = capsys.readouterr().out.split("\n", 1)[1]
    names = [line.split("\t")[0].strip() for line in out.splitlines()]
    assert names == ["runid", "num_q", "P_5", "judged@5", "mrr@10"]


def test_jsonl_run_is_named_by_its_file(capsys, write):
    qpath = write("q.txt", "q1 0 d1 1\n")
    rpath = write(
        "system-b.jsonl", '{"query_id": "q1", "results": [{"doc_id": "d1", "score": 1}]}\n'
    )
    assert main(["retrieval", "--qrels", qpath, "--run", rpath, "--format", "trec"]) == 0
    assert "runid                 \tall\tsystem-b.jsonl" in capsys.readouterr().out


def test_help_lists_every_measure_and_the_strata(capsys):
    from scoring.retrieval import METRICS

    with pytest.raises(SystemExit) as exc:
        main(["retrieval", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for name in METRICS:
        assert f"  {name}" in text, name
    for trec in ("P_k", "recall_k", "ndcg_cut_k", "map_cut_k", "success_k", "recip_rank", "Rprec"):
        assert trec in text
    assert "--strata FILE.csv" in text and "domain|task_type" in text
