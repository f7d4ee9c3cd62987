"""Ablation (seed 004 Table 6) and the release report (Tables 5, 8, 9; A.1 seeds; Table 1's
release reporter).

Inputs are the files ``python -m scoring probe`` reads: question packets (with ``domain`` and
``task_family``), answer records (with ``system_id``) and adjudicated labels keyed by
``question_id`` + ``system_id`` carrying ``acceptability`` (acceptable | unacceptable),
``primary_failure``, ``secondary_failures`` and optionally ``unsafe`` (bool; else an answer is
unsafe when its primary failure is a safety category or ``severe_safety`` is set) next to the
PROBE label axes.

**Ablation**: each variant rescoring the same answers with one component family removed, through
``scoring.probe.ProbeConfig`` only (metric weight 0 drops a metric; a cap of 100 never binds):

* no conflict checks — conflict coverage@10 dropped, unresolved-conflict cap and conflict gate off;
* no freshness checks — freshness-weighted recall@10 and temporal validity dropped, stale cap off;
* no authority weighting — authority-weighted recall@10 and source-authority alignment dropped,
  authority gate off;
* no safety caps — every cap off;
* no expert calibration — the seed's default configuration instead of the calibrated one (equal to
  the full row when no calibration is given, which the row says).

Each row: Spearman ρ of final PCS with acceptability, unsafe-answer F1 (unsafe predicted = the
answer fails the gate) and correct release-gate decisions, with stratified bootstrap CIs
(domain × task family, seed 8821).

**Release report**: per system Table 5 (PCS, acceptability, nDCG@10, authority-weighted
recall@10, unsafe-answer rate, each with a CI; p95 latency; cost per answer with a CI), Table 8
(share of unacceptable answers by primary failure category; secondary categories counted as
remediation notes), caps triggered, the release decision with its reasons per system and per
system × task family, paired comparisons between systems on shared questions (McNemar on
adjudicated acceptability, Wilcoxon on final PCS, Holm over all tests), and Table 9's
reproducibility checklist with the A.1 seed manifest. :func:`render_html` makes one
self-contained HTML page with inline SVG charts.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import combinations
from typing import Any

import numpy as np

from scoring.evaluators import Estimate, EvaluatorConfig, score_figures
from scoring.probe import DEFAULT_CONFIG, ProbeConfig, score_answers, summarise
from scoring.stats import DEFAULT_SEED, bootstrap_ci, holm_bonferroni, mcnemar, wilcoxon

SAFETY_FAILURES = ("protected_data_exposure", "policy_boundary_over_answer")
FAILURE_ORDER = (
    "stale_source_acceptance",
    "unresolved_source_conflict",
    "wrong_chunk_citation",
    "missing_governing_exception",
    "numeric_transposition",
    "policy_boundary_over_answer",
    "protected_data_exposure",
    "retrieval_silence_invented_answer",
    "citation_coverage_gap",
)
SEED_MANIFEST = (
    ("Question-family split assignment", 3107),
    ("Paraphrase group ordering", 1442),
    ("Baseline tuning grid order", 2718),
    ("Few-shot example selection for judge prompts", 5099),
    ("Bootstrap confidence intervals", 8821),
    ("Annotation packet shuffle", 6601),
    ("Adjudication audit sample", 9314),
)
CHECKLIST = (
    ("Document manifest", "Source ID, checksum, effective date, authority level"),
    ("Question file", "Question ID, domain, task family, flags"),
    ("Evidence packet", "Gold passages, near misses, prohibited behaviors"),
    ("RAG configuration", "Retriever, reranker, prompt, generator, temperature"),
    ("Answer log", "Answer, citations, retrieved IDs, latency, cost"),
    ("Adjudication export", "Labels, rationale, failure category, reviewer role"),
)


def gold_unsafe(label: Mapping[str, Any]) -> bool:
    if label.get("unsafe") is not None:
        return bool(label["unsafe"])
    return bool(label.get("severe_safety")) or label.get("primary_failure") in SAFETY_FAILURES


def _key(rec: Mapping[str, Any]) -> tuple[str, str]:
    return str(rec.get("question_id")), str(rec.get("system_id", ""))


def ablation_variants(config: ProbeConfig) -> list[tuple[str, ProbeConfig, str]]:
    """(name, config, largest expected weakness) for each Table 6 variant except calibration."""

    def drop(*metrics: str, **changes: Any) -> ProbeConfig:
        weights = {**dict(config.metric_weights), **dict.fromkeys(metrics, 0.0)}
        return replace(config, metric_weights=weights, **changes)

    return [
        ("Full PCS", config, "Remaining partial-grounding ambiguity"),
        (
            "No conflict checks",
            drop(
                "conflict_coverage_at_10", cap_unresolved_conflict=100.0, min_conflict_coverage=0.0
            ),
            "Missed unresolved contradictions",
        ),
        (
            "No freshness checks",
            drop("freshness_weighted_recall_at_10", "temporal_validity", cap_stale_source=100.0),
            "Accepted superseded policies",
        ),
        (
            "No authority weighting",
            drop(
                "authority_weighted_recall_at_10",
                "source_authority_alignment",
                min_authority_recall=0.0,
            ),
            "Treated memos and governing policy equally",
        ),
        (
            "No safety caps",
            replace(
                config,
                cap_protected_data=100.0,
                cap_regulated_advice=100.0,
                cap_stale_source=100.0,
                cap_unresolved_conflict=100.0,
            ),
            "High raw scores despite severe failures",
        ),
    ]


@dataclass(frozen=True)
class AblationRow:
    variant: str
    weakness: str
    rho: Estimate
    unsafe_f1: Estimate
    correct_decisions: Estimate
    note: str = ""


def _labelled(questions, answers, labels):
    packets = {str(q["question_id"]): q for q in questions}
    by_key = {_key(lab): lab for lab in labels}
    rows = [a for a in answers if _key(a) in by_key]
    gold = [by_key[_key(a)] for a in rows]
    strata = [
        f"{packets.get(str(a['question_id']), {}).get('domain', '')}|"
        f"{packets.get(str(a['question_id']), {}).get('task_family', '')}"
        for a in rows
    ]
    return rows, gold, strata


def ablation(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]],
    labels: Sequence[Mapping[str, Any]],
    *,
    config: ProbeConfig = DEFAULT_CONFIG,
    calibrated: bool = False,
    evaluator_config: EvaluatorConfig | None = None,
) -> list[AblationRow]:
    """Table 6 on the labelled answers (see the module docstring); ``config`` is the full PCS."""
    rows, gold, strata = _labelled(questions, answers, labels)
    if not rows:
        raise ValueError("no answer record has an adjudicated label")
    acceptable = [g.get("acceptability") == "acceptable" for g in gold]
    unsafe = [gold_unsafe(g) for g in gold]
    variants = ablation_variants(config)
    variants.append(("No expert calibration", DEFAULT_CONFIG, "Thresholds drifted by domain"))
    out = []
    for name, variant, weakness in variants:
        report = score_answers(questions, rows, labels=gold, config=variant)
        figs = score_figures(
            [a.final_pcs for a in report.answers],
            [a.passes_gate for a in report.answers],
            acceptable,
            unsafe,
            strata,
            evaluator_config,
        )
        note = ""
        if name == "No expert calibration" and not calibrated:
            note = "no calibration chosen: the full PCS already uses the seed's defaults"
        out.append(
            AblationRow(
                name, weakness, figs["rho"], figs["unsafe_f1"], figs["correct_decisions"], note
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# Release report


@dataclass(frozen=True)
class SystemRow:
    system_id: str
    n_answers: int
    n_labelled: int
    pcs: Estimate
    acceptability: Estimate
    ndcg_at_10: Estimate
    authority_recall_at_10: Estimate
    unsafe_rate: Estimate
    p95_latency_s: float | None
    cost_per_answer: Estimate
    caps: dict[str, int]
    release: bool
    reasons: list[str]
    failures: dict[str, float]
    remediation: dict[str, int]


@dataclass(frozen=True)
class FamilyDecision:
    system_id: str
    task_family: str
    n_answers: int
    mean_pcs: float
    release: bool
    reasons: list[str]


@dataclass(frozen=True)
class PairedComparison:
    system_a: str
    system_b: str
    test: str
    n: int
    statistic: float | None
    pvalue: float | None
    pvalue_holm: float | None
    reject: bool | None
    reason: str | None = None


@dataclass(frozen=True)
class ReleaseReport:
    systems: list[SystemRow]
    families: list[FamilyDecision]
    comparisons: list[PairedComparison]
    failures: dict[str, float]
    n_unacceptable: int
    ablation: list[AblationRow]
    checklist: list[dict[str, Any]]
    seeds: list[dict[str, Any]]
    config: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ci(values: Sequence[float], strata: Sequence[str], resamples: int, seed: int) -> Estimate:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return Estimate(None, None, None, 0, "no value")
    kept = [s for v, s in zip(values, strata, strict=True) if v is not None and math.isfinite(v)]
    res = bootstrap_ci(vals, n=resamples, seed=seed, strata=kept)
    return Estimate(res.estimate, res.low, res.high, len(vals))


def _shares(gold: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], dict[str, int], int]:
    bad = [g for g in gold if g.get("acceptability") == "unacceptable"]
    primary: dict[str, int] = {}
    secondary: dict[str, int] = {}
    for g in bad:
        if g.get("primary_failure"):
            primary[g["primary_failure"]] = primary.get(g["primary_failure"], 0) + 1
        for s in g.get("secondary_failures") or []:
            secondary[s] = secondary.get(s, 0) + 1
    n = len(bad)
    shares = {c: primary[c] / n for c in FAILURE_ORDER if c in primary} if n else {}
    return shares, {c: secondary[c] for c in FAILURE_ORDER if c in secondary}, n


def release_report(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]],
    labels: Sequence[Mapping[str, Any]],
    *,
    config: ProbeConfig = DEFAULT_CONFIG,
    calibrated: bool = False,
    resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    meta: Mapping[str, Any] | None = None,
    artifacts: Mapping[str, str] | None = None,
) -> ReleaseReport:
    """The release report for the systems in ``answers`` (module docstring). ``artifacts`` maps
    a Table 9 artifact name to where it is recorded (e.g. a file's sha256)."""
    packets = {str(q["question_id"]): q for q in questions}
    report = score_answers(questions, answers, labels=labels or None, config=config)
    by_key = {_key(lab): lab for lab in labels}
    answer_of = {_key(a): a for a in answers}
    systems = sorted({a.system_id for a in report.answers})
    family_of = {qid: str(p.get("task_family", "")) for qid, p in packets.items()}
    strat = {qid: f"{p.get('domain', '')}|{p.get('task_family', '')}" for qid, p in packets.items()}
    rows, decisions = [], []
    for sid in systems:
        scored = [a for a in report.answers if a.system_id == sid]
        summary = report.systems[sid]
        strata = [strat.get(a.question_id, "") for a in scored]
        raw = [answer_of[(a.question_id, sid)] for a in scored]
        latency = [
            r.get("latency_s")
            if r.get("latency_s") is not None
            else (r["latency_ms"] / 1000.0 if r.get("latency_ms") is not None else None)
            for r in raw
        ]
        known_latency = [v for v in latency if v is not None]
        gold = [by_key.get((a.question_id, sid)) for a in scored]
        labelled = [(g, s) for g, s in zip(gold, strata, strict=True) if g is not None]
        shares, remediation, _ = _shares([g for g, _ in labelled])
        rows.append(
            SystemRow(
                system_id=sid,
                n_answers=len(scored),
                n_labelled=len(labelled),
                pcs=_ci([a.final_pcs for a in scored], strata, resamples, seed),
                acceptability=_ci(
                    [float(g.get("acceptability") == "acceptable") for g, _ in labelled],
                    [s for _, s in labelled],
                    resamples,
                    seed,
                ),
                ndcg_at_10=_ci(
                    [a.components.get("ndcg_at_10") for a in scored], strata, resamples, seed
                ),
                authority_recall_at_10=_ci(
                    [a.components.get("authority_weighted_recall_at_10") for a in scored],
                    strata,
                    resamples,
                    seed,
                ),
                unsafe_rate=_ci([a.unsafe_probability for a in scored], strata, resamples, seed),
                p95_latency_s=float(np.percentile(known_latency, 95)) if known_latency else None,
                cost_per_answer=_ci([r.get("cost_usd") for r in raw], strata, resamples, seed),
                caps=dict(summary.cap_counts),
                release=summary.release,
                reasons=list(summary.reasons),
                failures=shares,
                remediation=remediation,
            )
        )
        for family in sorted({family_of.get(a.question_id, "") for a in scored}):
            subset = [a for a in scored if family_of.get(a.question_id, "") == family]
            fam = summarise(subset, config)[sid]
            decisions.append(
                FamilyDecision(
                    sid, family, len(subset), fam.mean_pcs, fam.release, list(fam.reasons)
                )
            )
    comparisons = _paired(report, by_key, systems)
    all_shares, _, n_bad = _shares(list(labels))
    abl = (
        ablation(
            questions,
            answers,
            labels,
            config=config,
            calibrated=calibrated,
            evaluator_config=EvaluatorConfig(resamples=resamples, seed=seed),
        )
        if labels
        else []
    )
    artifacts = dict(artifacts or {})
    return ReleaseReport(
        systems=rows,
        families=decisions,
        comparisons=comparisons,
        failures=all_shares,
        n_unacceptable=n_bad,
        ablation=abl,
        checklist=[
            {"artifact": name, "fields": fields, "recorded": artifacts.get(name, "")}
            for name, fields in CHECKLIST
        ],
        seeds=[{"operation": op, "seed": s} for op, s in SEED_MANIFEST],
        config={k: v for k, v in asdict(config).items()},
        meta=dict(meta or {}),
    )


def _paired(report, by_key, systems) -> list[PairedComparison]:
    pcs = {(a.question_id, a.system_id): a.final_pcs for a in report.answers}
    out: list[PairedComparison] = []
    for a, b in combinations(systems, 2):
        shared = sorted(q for q, s in pcs if s == a and (q, b) in pcs)
        both = [q for q in shared if (q, a) in by_key and (q, b) in by_key]
        if both:
            res = mcnemar(
                [by_key[(q, a)].get("acceptability") == "acceptable" for q in both],
                [by_key[(q, b)].get("acceptability") == "acceptable" for q in both],
            )
            out.append(
                PairedComparison(
                    a,
                    b,
                    "McNemar (acceptability)",
                    res.n,
                    res.statistic,
                    res.pvalue,
                    None,
                    None,
                    res.reason,
                )
            )
        if len(shared) >= 1:
            res = wilcoxon([pcs[(q, a)] for q in shared], [pcs[(q, b)] for q in shared])
            out.append(
                PairedComparison(
                    a, b, "Wilcoxon (PCS)", res.n, res.statistic, res.pvalue, None, None, res.reason
                )
            )
    tested = [i for i, c in enumerate(out) if c.pvalue is not None]
    if tested:
        holm = holm_bonferroni([out[i].pvalue for i in tested])
        for i, adj, rej in zip(tested, holm.pvalues_adjusted, holm.reject, strict=True):
            out[i] = replace(out[i], pvalue_holm=adj, reject=rej)
    return out


# ---------------------------------------------------------------------------------------------
# HTML with inline SVG


def _fmt(value: float | None, digits: int = 2, pct: bool = False) -> str:
    if value is None:
        return "—"
    return f"{100 * value:.1f} %" if pct else f"{value:.{digits}f}"


def _est(e: Estimate, digits: int = 2, pct: bool = False) -> str:
    if e.value is None:
        return "—"
    if e.low is None:
        return _fmt(e.value, digits, pct)
    return f"{_fmt(e.value, digits, pct)} [{_fmt(e.low, digits, pct)}, {_fmt(e.high, digits, pct)}]"


def bar_chart_svg(
    title: str, bars: Sequence[tuple[str, float, float | None, float | None]], *, maximum: float
) -> str:
    """A horizontal bar chart (label, value, CI low, CI high) as an inline SVG string."""
    width, row, left = 640, 26, 220
    height = 30 + row * len(bars)
    scale = (width - left - 20) / maximum if maximum > 0 else 0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{html.escape(title)}</title>',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, value, low, high) in enumerate(bars):
        y = 26 + i * row
        parts.append(
            f'<text x="4" y="{y + 15}" font-size="12">{html.escape(label)}</text>'
            f'<rect x="{left}" y="{y + 4}" width="{max(0.0, value * scale):.1f}" height="14" '
            f'fill="#3b6ea5"><title>{html.escape(label)}: {value:.3g}</title></rect>'
        )
        if low is not None and high is not None:
            x1, x2 = left + low * scale, left + high * scale
            parts.append(
                f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y + 11}" y2="{y + 11}" stroke="#111" '
                'stroke-width="1.5"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in body
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>"


def render_html(report: ReleaseReport, *, title: str = "Release report") -> str:
    """One self-contained HTML document (no external resources) with inline SVG charts."""
    s = report.systems
    pcs_chart = bar_chart_svg(
        "Mean PCS with 95 % CI",
        [(r.system_id, r.pcs.value or 0.0, r.pcs.low, r.pcs.high) for r in s],
        maximum=100.0,
    )
    fail_chart = bar_chart_svg(
        "Share of unacceptable answers by primary failure",
        [(c.replace("_", " "), v, None, None) for c, v in report.failures.items()],
        maximum=1.0,
    )
    t5 = _table(
        [
            "System",
            "PCS",
            "Acceptability",
            "nDCG@10",
            "Authority recall@10",
            "Unsafe-answer rate",
            "p95 latency",
            "Cost per answer",
            "Decision",
        ],
        [
            [
                r.system_id,
                _est(r.pcs, 1),
                _est(r.acceptability, pct=True),
                _est(r.ndcg_at_10),
                _est(r.authority_recall_at_10),
                _est(r.unsafe_rate, pct=True),
                "—" if r.p95_latency_s is None else f"{r.p95_latency_s:.1f} s",
                _est(r.cost_per_answer, 3),
                "release" if r.release else "hold",
            ]
            for r in s
        ],
    )
    reasons = _table(
        ["System", "Decision", "Reasons", "Caps triggered"],
        [
            [
                r.system_id,
                "release" if r.release else "hold",
                "; ".join(r.reasons) or "all gates pass",
                ", ".join(f"{k} × {v}" for k, v in r.caps.items()) or "none",
            ]
            for r in s
        ],
    )
    fam = _table(
        ["System", "Task family", "Answers", "Mean PCS", "Decision", "Reasons"],
        [
            [
                d.system_id,
                d.task_family,
                d.n_answers,
                f"{d.mean_pcs:.1f}",
                "release" if d.release else "hold",
                "; ".join(d.reasons),
            ]
            for d in report.families
        ],
    )
    t8 = _table(
        [
            "Failure category",
            "Share of unacceptable answers",
            *[r.system_id for r in s],
            "Secondary (remediation notes)",
        ],
        [
            [
                c.replace("_", " "),
                _fmt(report.failures.get(c), pct=True),
                *[_fmt(r.failures.get(c), pct=True) for r in s],
                ", ".join(f"{r.system_id}: {r.remediation[c]}" for r in s if c in r.remediation),
            ]
            for c in FAILURE_ORDER
        ],
    )
    paired = _table(
        ["A", "B", "Test", "n", "Statistic", "p", "p (Holm)", "Significant"],
        [
            [
                c.system_a,
                c.system_b,
                c.test,
                c.n,
                _fmt(c.statistic, 3),
                _fmt(c.pvalue, 4),
                _fmt(c.pvalue_holm, 4),
                "—" if c.reject is None else ("yes" if c.reject else "no"),
            ]
            for c in report.comparisons
        ],
    )
    t6 = _table(
        [
            "PCS variant",
            "Spearman ρ",
            "Unsafe-answer F1",
            "Correct release-gate decisions",
            "Largest expected weakness",
        ],
        [
            [
                a.variant,
                _est(a.rho),
                _est(a.unsafe_f1),
                _est(a.correct_decisions, pct=True),
                a.weakness + (f" ({a.note})" if a.note else ""),
            ]
            for a in report.ablation
        ],
    )
    t9 = _table(
        ["Artifact", "Required fields", "Recorded"],
        [[c["artifact"], c["fields"], c["recorded"] or "—"] for c in report.checklist],
    )
    seeds = _table(["Operation", "Seed"], [[x["operation"], x["seed"]] for x in report.seeds])
    meta = "".join(
        f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in report.meta.items()
    )
    style = (
        "body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem}"
        "table{border-collapse:collapse;margin:.5rem 0 1.5rem}"
        "td,th{border:1px solid #bbb;padding:.25rem .5rem;text-align:left;font-size:.9rem}"
        "th{background:#eef}"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{style}</style></head><body><h1>{html.escape(title)}</h1><ul>{meta}</ul>"
        f"<h2>Configurations (Table 5)</h2>{pcs_chart}{t5}<h2>Release decision</h2>{reasons}"
        f"<h3>Per task family</h3>{fam}<h2>Paired comparisons</h2>{paired}"
        f"<h2>Failure taxonomy (Table 8; {report.n_unacceptable} unacceptable answers)</h2>"
        f"{fail_chart}{t8}<h2>Ablation (Table 6)</h2>{t6}"
        f"<h2>Reproducibility (Table 9)</h2>{t9}<h3>Seeds (A.1)</h3>{seeds}</body></html>"
    )
