"""percent_agreement_counts: the same value and bootstrap interval as percent_agreement, from
an items x categories count table (what the workbench aggregates for large data)."""

import numpy as np
import pytest

from scoring.agreement import percent_agreement, percent_agreement_counts
from scoring.errors import AgreementError


def _counts(table, categories):
    return np.array([[sum(1 for v in row if v == c) for c in categories] for row in table])


def test_worked_example_matches_the_label_table_version():
    table = [["a", "a", "a"], ["a", "a", "b"], ["a", None, None]]
    result = percent_agreement_counts(_counts(table, ["a", "b"]), n_annotators=3)
    assert result.value == pytest.approx((1 + 1 / 3) / 2)
    assert (result.n_items, result.n_annotators) == (2, 3)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_tables_give_the_same_value_and_interval(seed):
    rng = np.random.default_rng(seed)
    table = [
        [rng.choice(["x", "y", "z"]) if rng.random() > 0.3 else None for _ in range(4)]
        for _ in range(40)
    ]
    counts = _counts(table, ["x", "y", "z"])
    expected = percent_agreement(table, ci=True, n_resamples=200, seed=8821)
    got = percent_agreement_counts(counts, ci=True, n_resamples=200, seed=8821)
    assert got.value == pytest.approx(expected.value)
    assert got.ci == pytest.approx(expected.ci)
    assert got.n_items == expected.n_items


def test_undefined_without_pairs_and_rejects_a_flat_table():
    assert percent_agreement_counts([[1, 0], [0, 1]]).reason == "no item has two or more ratings"
    with pytest.raises(AgreementError):
        percent_agreement_counts([1, 2, 3])
