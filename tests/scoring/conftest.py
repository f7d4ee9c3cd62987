"""Fixtures for the scoring library tests (no Django, no database)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", p. 8: 4 observers x 12
# units, values 1-5, missing as None. Rows are observers A-D.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]

# Fleiss (1971), Psychological Bulletin 76(5), 378-382: 30 patients x 6 psychiatrists, 5
# diagnoses coded 1-5, one row per patient (raw ratings; the same table is in R irr's
# `diagnoses` data set and statsmodels' test suite). Published kappa = 0.430 (R: 0.4302445).
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4],
    [2, 2, 2, 5, 5, 5],
    [2, 3, 3, 3, 3, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3],
    [3, 3, 3, 3, 5, 5],
    [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4],
    [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4],
    [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3],
    [1, 4, 4, 4, 4, 4],
    [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5],
    [1, 1, 1, 1, 1, 2],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 4, 4, 4, 4, 4],
    [2, 2, 4, 5, 5, 5],
    [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4],
    [1, 1, 1, 1, 5, 5],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3],
    [5, 5, 5, 5, 5, 5],
]

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects x 14 raters x 5 categories (counts).
# Published kappa = 0.210.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


@pytest.fixture
def krippendorff_2011_table() -> np.ndarray:
    """The Krippendorff (2011) data as an items x observers table."""
    return np.array(KRIPPENDORFF_2011, dtype=object).T


@pytest.fixture
def fleiss_1971_ratings() -> np.ndarray:
    """Fleiss (1971) as an items x raters table."""
    return np.array(FLEISS_1971, dtype=object)


@pytest.fixture
def write(tmp_path: Path):
    """Write text to a file under tmp_path and return its path as str."""

    def _write(name: str, content: str | dict | list) -> str:
        path = tmp_path / name
        if not isinstance(content, str):
            content = json.dumps(content)
        path.write_text(content, encoding="utf-8")
        return str(path)

    return _write


@pytest.fixture
def colliding_fingerprints(monkeypatch):
    """Every document id hashes to the same value, so only the string checks keep results exact."""
    from scoring import _ids

    monkeypatch.setattr(
        _ids, "fingerprint", lambda values, **_: np.zeros(len(values), dtype=np.uint64)
    )
