"""Agreement statistics against published worked examples and the reference libraries."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from scoring.agreement import (
    _kappa_from_tables,
    agreement,
    alpha_bootstrap_point,
    cohen_kappa,
    cohen_kappa_table,
    cohen_kappa_tables,
    fleiss_kappa,
    fleiss_kappa_counts,
    krippendorff_alpha,
    label_table,
    pairwise_cohen_kappa,
    percent_agreement,
)
from scoring.errors import AgreementError
from tests.scoring.conftest import FLEISS_WIKIPEDIA, KRIPPENDORFF_2011


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C (pp. 8-9):
# alpha nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_2011_reliability_data_matches_published_alpha(
    krippendorff_2011_table, level, published
):
    result = krippendorff_alpha(krippendorff_2011_table, level=level)
    assert round(result.value, 3) == published
    assert result.reason is None
    # Unit 12 has one rating only, so 11 pairable units from 4 observers.
    assert (result.n_items, result.n_annotators) == (11, 4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_equals_krippendorff_package_on_reliability_data(krippendorff_2011_table, level):
    data = np.array(
        [[np.nan if v is None else v for v in row] for row in KRIPPENDORFF_2011], dtype=float
    )
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(krippendorff_2011_table, level=level).value == pytest.approx(
        expected, abs=1e-12
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_vectorised_bootstrap_kernel_reproduces_the_package_point_estimate(
    krippendorff_2011_table, level
):
    package = krippendorff_alpha(krippendorff_2011_table, level=level).value
    assert alpha_bootstrap_point(krippendorff_2011_table, level=level) == pytest.approx(
        package, abs=1e-12
    )


def test_alpha_ordinal_on_declared_string_scale_matches_numeric_codes(krippendorff_2011_table):
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    table = np.vectorize(lambda v: None if v is None else names[v], otypes=[object])(
        krippendorff_2011_table
    )
    result = krippendorff_alpha(table, level="ordinal", categories=list(names.values()))
    assert round(result.value, 3) == 0.815


def test_alpha_ci_is_seeded_and_brackets_the_estimate(krippendorff_2011_table):
    first = krippendorff_alpha(krippendorff_2011_table, level="interval", ci=True, n_resamples=500)
    second = krippendorff_alpha(krippendorff_2011_table, level="interval", ci=True, n_resamples=500)
    assert first.ci == second.ci
    low, high = first.ci
    assert low < first.value <= high <= 1.0


def test_alpha_is_undefined_when_everyone_uses_one_value():
    result = krippendorff_alpha([["a", "a"], ["a", "a"], ["a", None]], level="nominal")
    assert result.value is None
    assert "same value" in result.reason


def test_alpha_is_undefined_without_any_item_rated_twice():
    result = krippendorff_alpha([[1, None], [None, 2]], level="interval")
    assert result.value is None
    assert "two or more ratings" in result.reason
    assert result.n_items == 0


def test_alpha_rejects_labels_outside_the_declared_scale():
    with pytest.raises(AgreementError, match="not among the declared categories"):
        krippendorff_alpha([["a", "b"]], level="ordinal", categories=["a", "c"])


def test_alpha_interval_needs_numbers_or_a_declared_scale():
    with pytest.raises(AgreementError, match="numeric"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], level="ratio")


# Wikipedia, "Cohen's kappa", worked example: 50 proposals, both readers say yes 20, both no 15,
# A yes / B no 5, A no / B yes 10; kappa = 0.4.
def test_cohen_kappa_wikipedia_worked_example():
    a = ["yes"] * 20 + ["no"] * 15 + ["yes"] * 5 + ["no"] * 10
    b = ["yes"] * 20 + ["no"] * 15 + ["no"] * 5 + ["yes"] * 10
    result = cohen_kappa(a, b)
    assert result.value == pytest.approx(0.4, abs=1e-12)
    assert (result.n_items, result.n_annotators) == (50, 2)


def _expand(table):
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return a, b


# SAS/STAT PROC FREQ AGREE example as reproduced in statsmodels' test suite (table10):
# simple kappa 0.4842, weighted kappa (Cicchetti-Allison = linear weights) 0.4701.
def test_cohen_kappa_sas_example_unweighted_and_linear():
    a, b = _expand([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
    assert round(cohen_kappa(a, b).value, 4) == 0.4842
    assert round(cohen_kappa(a, b, weights="linear").value, 4) == 0.4701


def test_weighted_kappa_orders_categories_by_declared_scale():
    scale = ["ungrounded", "misgrounded", "partially_grounded", "fully_grounded"]
    a = ["fully_grounded", "partially_grounded", "misgrounded", "ungrounded", "fully_grounded"]
    b = ["partially_grounded", "partially_grounded", "ungrounded", "ungrounded", "fully_grounded"]
    table = np.zeros((4, 4))
    for x, y in zip(a, b, strict=True):
        table[scale.index(x), scale.index(y)] += 1
    for wt in ("linear", "quadratic"):
        expected = sm_cohens_kappa(table, wt=wt).kappa
        got = cohen_kappa(a, b, weights=wt, categories=scale).value
        assert got == pytest.approx(expected, abs=1e-12)
    # Alphabetical order would put "fully" next to "misgrounded": without the order it is an
    # error, never a silent alphabetical scale.
    with pytest.raises(AgreementError, match="needs the category order"):
        cohen_kappa(a, b, weights="quadratic")
    assert cohen_kappa(a, b).value is not None  # unweighted κ needs no order


def test_ordinal_alpha_on_text_labels_needs_the_order():
    from scoring.agreement import AXIS_SCALES

    table = np.array(
        [["fully_grounded", "misgrounded"], ["ungrounded", "ungrounded"], ["misgrounded", None]],
        dtype=object,
    )
    with pytest.raises(AgreementError, match="ordinal α on text labels needs the category order"):
        krippendorff_alpha(table, level="ordinal")
    assert krippendorff_alpha(table, level="nominal").value is not None
    ordered = krippendorff_alpha(table, level="ordinal", categories=AXIS_SCALES["grounding"])
    numeric = krippendorff_alpha(
        np.array([[3, 1], [0, 0], [1, None]], dtype=object), level="ordinal"
    )
    assert ordered.value == pytest.approx(numeric.value, abs=1e-12)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_vectorised_kappa_kernel_equals_statsmodels(weights):
    table = np.array([[11, 3, 1, 0], [2, 9, 4, 1], [0, 3, 7, 2], [1, 0, 2, 6]], dtype=float)
    expected = sm_cohens_kappa(table, wt=weights).kappa if weights else sm_cohens_kappa(table).kappa
    assert _kappa_from_tables(table[None], weights)[0] == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_is_undefined_when_all_labels_are_one_category():
    result = cohen_kappa(["ok"] * 5, ["ok"] * 5)
    assert result.value is None
    assert "0/0" in result.reason


def test_cohen_kappa_drops_items_missing_either_label():
    result = cohen_kappa(["a", "b", None, "a"], ["a", "b", "b", ""])
    assert result.n_items == 2
    assert result.value == pytest.approx(1.0)


def test_cohen_kappa_without_shared_items_is_undefined():
    result = cohen_kappa(["a", None], [None, "b"])
    assert result.value is None
    assert result.n_items == 0


def test_cohen_kappa_ci_is_reproducible():
    a = ["yes"] * 20 + ["no"] * 15 + ["yes"] * 5 + ["no"] * 10
    b = ["yes"] * 20 + ["no"] * 15 + ["no"] * 5 + ["yes"] * 10
    one = cohen_kappa(a, b, ci=True, n_resamples=2000)
    two = cohen_kappa(a, b, ci=True, n_resamples=2000)
    assert one.ci == two.ci
    assert one.ci[0] < 0.4 < one.ci[1]


def test_fleiss_1971_diagnoses_match_published_kappa(fleiss_1971_ratings):
    result = fleiss_kappa(fleiss_1971_ratings)
    # Fleiss (1971) reports 0.430; R irr::kappam.fleiss gives 0.4302445.
    assert round(result.value, 3) == 0.430
    assert result.value == pytest.approx(0.4302445, abs=1e-7)
    assert (result.n_items, result.n_annotators) == (30, 6)


def test_fleiss_wikipedia_counts_match_published_kappa():
    assert round(fleiss_kappa_counts(FLEISS_WIKIPEDIA).value, 3) == 0.210


def test_fleiss_vectorised_ci_kernel_matches_point(fleiss_1971_ratings):
    result = fleiss_kappa(fleiss_1971_ratings, ci=True, n_resamples=1000)
    low, high = result.ci
    assert low < result.value < high


def test_fleiss_with_unequal_ratings_points_to_alpha():
    with pytest.raises(AgreementError, match="Krippendorff's alpha"):
        fleiss_kappa([["a", "b", "a"], ["a", None, "b"]])


def test_fleiss_is_undefined_when_every_rating_is_one_category():
    result = fleiss_kappa([["x", "x"], ["x", "x"]])
    assert result.value is None
    assert "0/0" in result.reason


def test_percent_agreement_counts_agreeing_pairs_per_item():
    result = percent_agreement([["a", "a", "a"], ["a", "a", "b"], ["a", None, None]])
    # Item 1: 3/3 pairs agree; item 2: 1/3; item 3 has one rating and is left out.
    assert result.value == pytest.approx((1 + 1 / 3) / 2)
    assert result.n_items == 2


def test_percent_agreement_equals_fleiss_p_bar(fleiss_1971_ratings):
    counts = np.array([[list(row).count(c) for c in range(1, 6)] for row in fleiss_1971_ratings])
    p_bar = ((counts**2).sum(axis=1) - 6).sum() / (30 * 6 * 5)
    assert percent_agreement(fleiss_1971_ratings).value == pytest.approx(p_bar)


def test_percent_agreement_undefined_without_pairs():
    assert percent_agreement([["a", None]]).reason == "no item has two or more ratings"


def test_label_table_pivots_long_rows_and_rejects_double_labels():
    table = label_table(
        [
            {"item": "i1", "annotator": "ann", "label": "a"},
            {"item": "i1", "annotator": "bob", "label": "b"},
            {"item": "i2", "annotator": "bob", "label": "a"},
        ]
    )
    assert table.items == ["i1", "i2"]
    assert table.annotators == ["ann", "bob"]
    assert table.labels.tolist() == [["a", "b"], [None, "a"]]
    with pytest.raises(AgreementError, match="more than once"):
        label_table([("i1", "ann", "a"), ("i1", "ann", "b")])


def test_agreement_dispatch_and_cohen_needs_two_annotators():
    table = label_table([("i1", "a", 1), ("i1", "b", 1), ("i1", "c", 2), ("i2", "a", 2)])
    assert agreement(table, metric="krippendorff", level="nominal").metric == "krippendorff"
    with pytest.raises(AgreementError, match="exactly two annotators"):
        agreement(table, metric="cohen")


def test_pairwise_cohen_kappa_reports_every_pair():
    table = label_table(
        [
            (i, r, lab)
            for i, labs in enumerate(["aab", "abb", "bbb", "aaa"])
            for r, lab in zip("xyz", labs, strict=True)
        ]
    )
    pairs = pairwise_cohen_kappa(table)
    assert set(pairs) == {("x", "y"), ("x", "z"), ("y", "z")}
    assert pairs[("x", "y")].value == pytest.approx(cohen_kappa(list("aaba"), list("abba")).value)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("v", [2, 4])
def test_many_cohen_tables_at_once_give_each_table_exactly_its_own_result(weights, v):
    rng = np.random.default_rng(v)
    tables = rng.integers(0, 30, size=(40, v, v))
    tables[0] = 0  # no item: undefined, no CI
    tables[1] = 0
    tables[1][0, 0] = 9  # one category: undefined
    tables[2] = 0
    tables[2][0, 1] = 1  # one item
    tables[3] = 0
    tables[3][0, 0], tables[3][1, 1] = 2, 1  # resamples of one category are 0/0: left out
    at_once = cohen_kappa_tables(tables, weights=weights, ci=True, n_resamples=400, seed=8821)
    one_by_one = [
        cohen_kappa_table(t, weights=weights, ci=True, n_resamples=400, seed=8821) for t in tables
    ]
    assert at_once == one_by_one  # values and CI bounds: ==, not approximately
    assert at_once[0].value is None and at_once[1].value is None and at_once[0].ci is None
    assert all(r.ci for r in at_once[2:])


def test_many_cohen_tables_need_a_stack_of_square_tables():
    with pytest.raises(AgreementError):
        cohen_kappa_tables(np.zeros((3, 3)))
