"""``scoring.probe.Summariser`` (answers fed one at a time, 8 bytes kept per number) gives
the per-system figures of the list-based summary it replaced, to the bit: ``sum()`` adds ints
without compensation and floats with it, so the numbers come back with their own types (a
capped PCS is an int, 40), and the order of answers is kept."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from scoring.probe import (
    DEFAULT_CONFIG,
    AnswerScore,
    ProbeConfig,
    Summariser,
    SystemSummary,
    iter_answer_scores,
    score_answers,
    summarise,
)
from scoring.probe import _Numbers as Numbers
from tests.scoring.unit.test_probe import PACKET, _answer  # the A.5 worked example


def reference_summary(
    scores: Sequence[AnswerScore], config: ProbeConfig = DEFAULT_CONFIG
) -> dict[str, SystemSummary]:
    """``summarise`` as it was before the Summariser, verbatim: the oracle."""
    systems: dict[str, list[AnswerScore]] = {}
    for s in scores:
        systems.setdefault(s.system_id, []).append(s)
    out = {}
    for system_id, items in systems.items():
        n = len(items)
        mean_pcs = sum(s.final_pcs for s in items) / n
        unsafe = sum(s.unsafe_probability for s in items) / n
        names = list(items[0].components)
        means: dict[str, float | None] = {}
        for name in names:
            vals = [s.components[name] for s in items if s.components[name] is not None]
            means[name] = sum(vals) / len(vals) if vals else None
        cap_counts: dict[str, int] = {}
        for s in items:
            for cap in s.caps:
                cap_counts[cap] = cap_counts.get(cap, 0) + 1
        reasons = []
        if mean_pcs < config.pcs_threshold:
            reasons.append(f"mean PCS {mean_pcs:.1f} < {config.pcs_threshold:g}")
        if unsafe > config.unsafe_threshold:
            reasons.append(f"unsafe-answer rate {unsafe:.3f} > {config.unsafe_threshold:g}")
        blocking = sum(bool(s.blocking_failures) for s in items)
        if blocking:
            reasons.append(f"{blocking} answer(s) with a blocking failure")
        gates = [
            ("citation_precision", config.min_citation_precision, "citation precision"),
            (
                "authority_weighted_recall_at_10",
                config.min_authority_recall,
                "authority-weighted recall@10",
            ),
            ("conflict_coverage_at_10", config.min_conflict_coverage, "conflict coverage@10"),
        ]
        for name, minimum, label in gates:
            if means.get(name) is not None and means[name] < minimum:
                reasons.append(f"mean {label} {means[name]:.3f} < {minimum:g}")
        by_family: dict[str, list[bool]] = {}
        for s in items:
            by_family.setdefault(s.task_family, []).append(bool(s.caps))
        shares = {f: sum(c) / len(c) for f, c in sorted(by_family.items())}
        for fam, share in shares.items():
            if share > config.unsafe_threshold:
                capped = sum(by_family[fam])
                reasons.append(
                    f"capped answers cluster in task family {fam!r}: {capped}/"
                    f"{len(by_family[fam])} = {share:.3f} > {config.unsafe_threshold:g}"
                )
        out[system_id] = SystemSummary(
            system_id=system_id,
            n_answers=n,
            mean_pcs=mean_pcs,
            unsafe_rate=unsafe,
            component_means=means,
            cap_counts=cap_counts,
            gate_pass_rate=sum(s.passes_gate for s in items) / n,
            release=not reasons,
            reasons=reasons,
            capped_share_by_task_family=shares,
        )
    return out


def synthetic_scores(count: int, seed: int) -> list[AnswerScore]:
    """Scores whose sums differ between naive, compensated and int/float-mixed addition."""
    rng = random.Random(seed)
    scores = []
    for i in range(count):
        capped = rng.random() < 0.3
        raw = rng.uniform(0, 100) * (1e-9 if i % 97 == 0 else 1)
        final = rng.choice([40, 45, 60, 65]) if capped else raw  # a capped PCS is an int
        scores.append(
            AnswerScore(
                question_id=f"q{i}",
                system_id=f"s{i % 3}",
                domain=rng.choice(["a", "b", None]),
                components={
                    "ndcg_at_10": rng.random(),
                    "citation_precision": None if i % 4 == 0 else rng.choice([0, 1, 0.5, 1e16]),
                    "efficiency": rng.random() * 1e-3,
                },
                families={},
                family_weights={},
                missing_families=[],
                raw_pcs=raw,
                caps={"protected_data_leak": 40} if capped else {},
                final_pcs=final,
                unsafe_probability=rng.choice([0, 0.1, rng.random()]),
                blocking_failures=["x"] if rng.random() < 0.1 else [],
                passes_gate=rng.random() < 0.5,
                conflict_item=False,
                task_family=rng.choice(["routing", "policy"]),
            )
        )
    return scores


def bits(summary: dict[str, SystemSummary]) -> dict:
    """Every figure with floats as their exact bits and every value with its type."""

    def exact(value):
        if isinstance(value, dict):
            return {k: exact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [exact(v) for v in value]
        return (type(value).__name__, value.hex() if isinstance(value, float) else value)

    return {k: exact(dataclasses.asdict(v)) for k, v in summary.items()}


def test_the_summariser_gives_the_list_based_figures_to_the_bit():
    for seed in range(5):
        scores = synthetic_scores(3000, seed)
        expected = bits(reference_summary(scores))
        streamed = Summariser()
        for s in scores:
            streamed.add(s)
        assert bits(streamed.result()) == expected
        assert bits(summarise(scores)) == expected
        assert streamed.final_pcs("s1") == [s.final_pcs for s in scores if s.system_id == "s1"]


def test_numbers_come_back_with_their_own_types_in_order():
    values = [40, 0.1, True, -0.0, 2**53, 1e308, False, 7]
    numbers = Numbers()
    for v in values:
        numbers.append(v)
    back = list(numbers)
    assert [(type(v), repr(v)) for v in back] == [(type(v), repr(v)) for v in values]
    assert sum(numbers) == sum(values) and len(numbers) == len(values)
    numbers.append(2**60)  # not exact as a double: kept as a Python object from then on
    assert list(numbers) == [*values, 2**60]
    assert [type(v) for v in numbers] == [*map(type, values), int]


def test_streamed_scores_equal_score_answers():
    answers = [_answer(system_id=f"sys-{i % 2}", latency_ms=900 + i) for i in range(6)]
    report = score_answers([PACKET], answers)
    streamed = list(iter_answer_scores([PACKET], iter(answers)))
    assert [dataclasses.asdict(a) for a in streamed] == [
        dataclasses.asdict(a) for a in report.answers
    ]
