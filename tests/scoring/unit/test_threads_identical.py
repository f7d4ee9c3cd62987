"""Issue 26: the row-wise passes may run on several threads when cores are idle; the figures,
and the duplicate errors, are the same on one thread and on several."""

import numpy as np
import pytest

from scoring import _ids
from scoring.errors import InputError
from scoring.io import read_qrels, read_run
from scoring.retrieval import evaluate

MEASURES = ["map", "ndcg@10", "precision@5", "recall@100", "mrr", "bpref", "rprec", "hit@3"]


def _files(tmp_path, n_queries=400, depth=60, seed=3):
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(n_queries):
        docs = rng.choice(5000, size=depth, replace=False)
        for d in rng.choice(docs, size=5, replace=False):
            qrels.append(f"q{q} 0 d{d} {rng.integers(0, 3)}")
        scores = np.round(rng.random(depth) * 10, 1)  # many exact ties
        run += [
            f"q{q} Q0 d{d} {i + 1} {s} t" for i, (d, s) in enumerate(zip(docs, scores, strict=True))
        ]
    (tmp_path / "q.txt").write_text("\n".join(qrels) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(run) + "\n")
    return tmp_path / "q.txt", tmp_path / "r.txt"


@pytest.fixture(params=[1, 2, 4], ids=["1 thread", "2 threads", "4 threads"])
def threads(request, monkeypatch):
    monkeypatch.setattr(_ids, "HASH_THREADS", request.param)
    monkeypatch.setattr(_ids, "idle_threads", lambda: request.param)
    monkeypatch.setattr(_ids, "CHUNK", 1 << 10)  # many slices, so threads really share them
    return request.param


def _figures(qpath, rpath):
    result = evaluate(read_qrels(qpath), read_run(rpath), metrics=MEASURES)
    return result.query_ids.tolist(), {k: v.tolist() for k, v in result.per_query.items()}


def test_figures_are_identical_on_one_thread_and_several(tmp_path, threads, monkeypatch):
    qpath, rpath = _files(tmp_path)
    got = _figures(qpath, rpath)
    monkeypatch.setattr(_ids, "idle_threads", lambda: 1)
    monkeypatch.setattr(_ids, "CHUNK", 1 << 18)
    assert got == _figures(qpath, rpath)


def test_a_duplicate_is_found_on_any_number_of_threads(tmp_path, threads):
    qpath, rpath = _files(tmp_path, n_queries=50)
    lines = rpath.read_text().splitlines()
    lines.append(lines[17].rsplit(" ", 2)[0] + " 0.5 t")  # q0 lists that document again
    rpath.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 3001: document .* is listed twice"):
        read_run(rpath)


@pytest.mark.parametrize(
    "load,running,expected",
    [
        (0.2, 0, 2),
        (0.9, 5, 2),
        (1.4, 3, 1),
        (15.0, 14, 1),
        # The average still high from a burst that has ended: the machine is idle now.
        (7.5, 0, 2),
        (7.5, 1, 1),
        # Unreadable /proc: the average decides.
        (1.4, float("inf"), 1),
        (0.5, float("inf"), 2),
    ],
)
def test_threads_are_the_cores_the_load_leaves_idle(monkeypatch, load, running, expected):
    monkeypatch.setattr(_ids, "HASH_THREADS", 2)
    monkeypatch.setattr(_ids.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(_ids, "_running_besides_me", lambda: running)
    assert _ids.idle_threads() == expected


def test_the_tasks_running_now_are_read_from_proc_without_this_one():
    running = _ids._running_besides_me()
    assert running == float("inf") or 0 <= running < 10_000
