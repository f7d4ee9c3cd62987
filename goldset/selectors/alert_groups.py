"""The agreement alerts as a lead reads them (issue 25: eighteen boxes stacked before the first
chart): grouped by kind, the kinds in the order of how much they put the gold set at risk, and
within a kind the alert furthest past its threshold first. Pure: it orders what
:func:`goldset.selectors.agreement.list_agreement_alerts` found, and reads nothing."""

from dataclasses import dataclass

# Worst first: the gold set's own agreement, then a pair's, then the TRIAGE spot-checks, then
# one person's figures.
KINDS = {
    "gold_alpha_low": "Gold Krippendorff α below target for a task type",
    "gold_kappa_low": "Gold Cohen κ below target for an annotator pair",
    "spot_check_disagreement": "TRIAGE spot-check disagreement over the limit two weeks running",
    "severe_rate_gap": "Severe-safety rate apart from co-annotators",
    "annotator_outlier": "Annotator far from the adjudicated labels",
    "author_flag_rate": "Calibration session needed for an author",
}


@dataclass(frozen=True)
class AlertGroup:
    kind: str
    title: str
    alerts: list  # worst first

    @property
    def count(self) -> int:
        return len(self.alerts)

    @property
    def worst(self):
        return self.alerts[0]


def shortfall(alert) -> float:
    """How far the alert's figure is past its threshold (larger is worse)."""
    n = alert.numbers
    if alert.kind == "gold_alpha_low":
        return n["target"] - n["alpha"]
    if alert.kind == "gold_kappa_low":
        return n["target"] - n["kappa"]
    if alert.kind == "spot_check_disagreement":
        return max(n["rates"]) - n["limit"]
    if alert.kind == "severe_rate_gap":
        return abs(n["gap"]) - n["margin"]
    if alert.kind == "annotator_outlier":
        return n["median"] - n["rate"]
    if alert.kind == "author_flag_rate":
        return n["flags"] / n["reviews"] if n.get("reviews") else 0.0
    return 0.0


def group_alerts(alerts) -> list[AlertGroup]:
    """The alerts by kind, worst kind first (``KINDS``; an unknown kind last), each kind's
    alerts worst first (``shortfall``), ties in the order they came."""
    by_kind: dict[str, list] = {}
    for alert in alerts:
        by_kind.setdefault(alert.kind, []).append(alert)
    order = list(KINDS)
    kinds = sorted(by_kind, key=lambda k: (order.index(k) if k in KINDS else len(order), k))
    return [
        AlertGroup(
            kind,
            KINDS.get(kind, by_kind[kind][0].title),
            sorted(by_kind[kind], key=shortfall, reverse=True),
        )
        for kind in kinds
    ]
