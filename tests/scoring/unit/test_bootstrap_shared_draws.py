"""Issue 26: the intervals of several measures share one draw of resampling indices and are
the intervals ``bootstrap_ci`` gives each measure alone, to the bit (stratified or not, with
several slices of resamples)."""

import numpy as np
import pytest

from scoring import stats
from scoring.stats import bootstrap_ci, bootstrap_cis


@pytest.mark.parametrize("stratified", [False, True], ids=["plain", "stratified"])
@pytest.mark.parametrize("cells", [None, 5_000], ids=["one slice", "many slices"])
def test_bootstrap_cis_equal_bootstrap_ci_per_column(stratified, cells, monkeypatch):
    if cells:
        monkeypatch.setattr(stats, "_CHUNK_CELLS", cells)
    rng = np.random.default_rng(11)
    n_rows = 700
    columns = {
        "ndcg@10": rng.random(n_rows),
        "hit@10": (rng.random(n_rows) < 0.3).astype(float),
        "recall@10": rng.random(n_rows) ** 3,
    }
    strata = [f"d{i % 3}|t{i % 4}" for i in range(n_rows)] if stratified else None
    together = bootstrap_cis(columns, n=1200, seed=8821, strata=strata)
    for name, values in columns.items():
        alone = bootstrap_ci(values, n=1200, seed=8821, strata=strata)
        assert together[name] == alone  # every field, exactly
    # and the columns really differ, so equality is not one interval repeated
    assert len({(r.low, r.high) for r in together.values()}) == 3


def test_progress_is_reported_per_slice(monkeypatch):
    monkeypatch.setattr(stats, "_CHUNK_CELLS", 1_000)
    seen = []
    bootstrap_cis({"a": np.arange(100.0)}, n=95, seed=1, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == 10
