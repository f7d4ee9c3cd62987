"""The agreement computation as it was before issue 17 (pandas groupby per scope, one Cohen κ call
per annotator pair), kept verbatim as the reference the vectorised path must equal bit for bit."""

import numpy as np
import pandas as pd

from goldset.models import Tier
from goldset.rules.axes import AXES
from goldset.services.agreement import PAIR_SCOPES, SCOPES, Figure
from scoring.agreement import (
    cohen_kappa_table,
    fleiss_kappa_counts,
    krippendorff_alpha_counts,
)

SEED = 8821


def _groups(frame: pd.DataFrame, dims: tuple[str, ...]):
    if not dims:
        yield {}, frame
        return
    for key, sub in frame.groupby(list(dims), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(dims, key, strict=True)), sub


def _count_table(sub: pd.DataFrame, n_categories: int) -> np.ndarray:
    items = pd.factorize(sub["item"])[0]
    flat = np.bincount(
        items * n_categories + sub["code"].to_numpy(), minlength=(items.max() + 1) * n_categories
    )
    return flat.reshape(-1, n_categories)


def compute_figures(
    ratings: pd.DataFrame,
    spot_checks: pd.DataFrame,
    facts: pd.DataFrame | None = None,
    *,
    n_resamples: int,
    seed: int = SEED,
) -> list[Figure]:
    """Every figure for the given rows (pure: no database)."""
    figures: list[Figure] = []
    if facts is not None:
        figures += [
            Figure(p, "annotator", m, float(v), "", int(n), 1, None, {}, subject=str(a))
            for p, m, a, v, n in facts.itertuples(index=False)
        ]
    for (protocol, axis), rows in ratings.groupby(["protocol", "axis"], sort=True):
        scale = AXES[axis]
        rows = _coded(protocol, axis, rows)
        figures += _scope_figures(protocol, axis, scale, rows, n_resamples, seed)
        figures += _pair_figures(protocol, axis, scale, rows, n_resamples, seed)
        if axis == "severe_safety":
            figures += _severe_rate_gaps(protocol, rows)
    figures += _spot_check_figures(spot_checks)
    return figures


def _coded(protocol: str, axis: str, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with ``code``, each value's position on the axis' scale (ValueError when a value
    is not on it)."""
    scale = AXES[axis]
    on_scale = rows["value"].isin(scale.categories)
    if not on_scale.all():
        unknown = sorted(set(rows["value"][~on_scale].astype(str)))
        raise ValueError(
            f"{protocol}/{axis}: values {unknown} are not on the scale {scale.categories}"
        )
    codes = pd.Categorical(rows["value"], categories=scale.categories).codes
    return rows.assign(code=codes.astype(np.int64))


def _scope_figures(protocol, axis, scale, rows, n_resamples, seed):
    out = []
    for dims in SCOPES:
        for scope, sub in _groups(rows, dims):
            counts = _count_table(sub, len(scale.categories))
            n_annotators = int(sub["annotator"].nunique())
            alpha = krippendorff_alpha_counts(
                counts,
                categories=scale.categories,
                level=scale.level,
                ci=True,
                n_resamples=n_resamples,
                seed=seed,
                n_annotators=n_annotators,
            )
            out.append(
                Figure(
                    protocol,
                    axis,
                    "krippendorff_alpha",
                    alpha.value,
                    alpha.reason or "",
                    alpha.n_items,
                    n_annotators,
                    alpha.ci,
                    scope,
                )
            )
            three = counts[counts.sum(axis=1) == 3]
            if len(three):
                fleiss = fleiss_kappa_counts(
                    three, ci=True, n_resamples=n_resamples, seed=seed, n_annotators=n_annotators
                )
                out.append(
                    Figure(
                        protocol,
                        axis,
                        "fleiss_kappa",
                        fleiss.value,
                        fleiss.reason or "",
                        fleiss.n_items,
                        n_annotators,
                        fleiss.ci,
                        scope,
                    )
                )
    return out


def _pair_figures(protocol, axis, scale, rows, n_resamples, seed):
    """Cohen's κ for every annotator pair: one confusion table per pair, counted at once."""
    out = []
    v = len(scale.categories)
    for dims in PAIR_SCOPES:
        for scope, sub in _groups(rows, dims):
            codes, names = pd.factorize(sub["annotator"], sort=True)
            slim = pd.DataFrame(
                {"item": sub["item"].to_numpy(), "who": codes, "code": sub["code"].to_numpy()}
            )
            pairs = slim.merge(slim, on="item", suffixes=("_a", "_b"))
            pairs = pairs[pairs["who_a"] < pairs["who_b"]]
            pair_index, pair_keys = pd.factorize(
                pairs["who_a"].to_numpy() * len(names) + pairs["who_b"].to_numpy(), sort=True
            )
            cells = pair_index * v * v + pairs["code_a"].to_numpy() * v + pairs["code_b"].to_numpy()
            tables = np.bincount(cells, minlength=len(pair_keys) * v * v).reshape(-1, v, v)
            for key, table in zip(pair_keys, tables, strict=True):
                a, b = names[key // len(names)], names[key % len(names)]
                kappa = cohen_kappa_table(
                    table, weights=scale.pair_weights, ci=True, n_resamples=n_resamples, seed=seed
                )
                out.append(
                    Figure(
                        protocol,
                        axis,
                        "cohen_kappa",
                        kappa.value,
                        kappa.reason or "",
                        kappa.n_items,
                        2,
                        kappa.ci,
                        scope,
                        subject=f"{a}|{b}",
                    )
                )
    return out


def _severe_rate_gaps(protocol, rows) -> list[Figure]:
    """Each annotator's severe-label rate minus their co-annotators' rate on the same items."""
    marks = rows.assign(yes=(rows["value"] == "yes").astype(float))
    per_item = marks.groupby("item")["yes"].agg(["sum", "size"])
    marks = marks.join(per_item, on="item")
    marks = marks[marks["size"] >= 2]
    marks = marks.assign(co=(marks["sum"] - marks["yes"]) / (marks["size"] - 1))
    out = []
    for annotator, own in marks.groupby("annotator", sort=True):
        gap = float(own["yes"].mean() - own["co"].mean())
        out.append(
            Figure(
                protocol,
                "annotator",
                "severe_rate_gap",
                gap,
                "",
                len(own),
                1,
                None,
                {},
                subject=str(annotator),
            )
        )
    return out


def _spot_check_figures(spot_checks: pd.DataFrame) -> list[Figure]:
    out = []
    for (protocol, week), rows in spot_checks.groupby(["protocol", "week"], sort=True):
        n = len(rows)
        disagreements = int((~rows["agree"].astype(bool)).sum())
        out.append(
            Figure(
                protocol,
                "spot_check",
                "spot_check_disagreement",
                disagreements / n,
                "",
                n,
                0,
                None,
                {"tier": Tier.TRIAGE.value, "week": week},
                subject=str(disagreements),
            )
        )
    return out
