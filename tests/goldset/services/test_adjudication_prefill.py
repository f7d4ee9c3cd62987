"""The adjudication form starts from the labels' majority, axis by axis, where there is one."""

from types import SimpleNamespace

from goldset.services.labeling import adjudication_prefill


def _label(acceptability, grounding, severe=False, primary="", secondary=()):
    return SimpleNamespace(
        acceptability=acceptability,
        grounding=grounding,
        severe_safety=severe,
        primary_failure=primary,
        secondary_failures=list(secondary),
    )


def test_each_axis_with_a_strict_majority_is_prefilled_and_only_those():
    labels = [
        _label("acceptable", "fully_grounded"),
        _label("acceptable", "partially_grounded"),
        _label("unacceptable", "misgrounded", severe=True, primary="numeric_transposition"),
    ]
    # grounding is split three ways: left for the lead
    assert adjudication_prefill(labels) == {
        "acceptability": "acceptable",
        "primary_failure": "",
        "severe_safety": "no",
    }


def test_secondary_failures_only_beside_a_prefilled_primary_and_never_repeating_it():
    gap, chunk, stale = "citation_coverage_gap", "wrong_chunk_citation", "stale_source_acceptance"
    labels = [
        _label("unacceptable", "misgrounded", severe=True, primary=gap, secondary=[chunk, stale]),
        _label("unacceptable", "misgrounded", severe=True, primary=gap, secondary=[chunk]),
        _label("acceptable", "fully_grounded", primary=chunk, secondary=[gap]),
    ]
    assert adjudication_prefill(labels) == {
        "acceptability": "unacceptable",
        "grounding": "misgrounded",
        "primary_failure": gap,
        "severe_safety": "yes",
        "secondary_failures": [chunk],
    }
    # no majority on the primary failure: no secondary either (it would need a primary)
    split = [
        _label("unacceptable", "misgrounded", primary=gap, secondary=[chunk]),
        _label("unacceptable", "misgrounded", primary=stale, secondary=[chunk]),
    ]
    assert "secondary_failures" not in adjudication_prefill(split)
    assert "primary_failure" not in adjudication_prefill(split)


def test_two_labels_split_one_to_one_prefill_nothing_and_no_labels_nothing():
    labels = [_label("acceptable", "fully_grounded"), _label("unacceptable", "misgrounded")]
    assert adjudication_prefill(labels) == {"primary_failure": "", "severe_safety": "no"}
    assert adjudication_prefill([]) == {}
