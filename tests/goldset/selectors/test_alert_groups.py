"""Agreement alerts as a lead reads them: grouped by kind, the worst kind first, each kind's
alerts furthest past their threshold first."""

from goldset.selectors.agreement import Alert
from goldset.selectors.alert_groups import KINDS, group_alerts, shortfall


def _alpha(task, alpha):
    return Alert("gold_alpha_low", f"α low for {task}", "", {"alpha": alpha, "target": 0.75})


def _kappa(alpha):
    return Alert("gold_kappa_low", "κ low", "", {"kappa": alpha, "target": 0.70})


def _author(flags, reviews):
    return Alert("author_flag_rate", "author", "", {"flags": flags, "reviews": reviews})


def test_kinds_come_worst_first_each_with_its_count_and_its_worst_alert_first():
    alerts = [
        _author(6, 20),
        _kappa(0.61),
        _alpha("summarization", 0.70),
        _kappa(0.12),
        _alpha("rag_synthesis", 0.31),
        _author(15, 20),
        _alpha("factual_qa", 0.52),
    ]
    groups = group_alerts(alerts)
    assert [(g.kind, g.count) for g in groups] == [
        ("gold_alpha_low", 3),
        ("gold_kappa_low", 2),
        ("author_flag_rate", 2),
    ]
    assert [a.numbers["alpha"] for a in groups[0].alerts] == [0.31, 0.52, 0.70]
    assert groups[1].worst.numbers["kappa"] == 0.12
    assert groups[2].worst.numbers["flags"] == 15
    assert groups[0].title == KINDS["gold_alpha_low"]
    assert sum(g.count for g in groups) == len(alerts)


def test_an_unknown_kind_comes_last_under_its_own_title_and_nothing_is_lost():
    odd = Alert("new_kind", "Something new", "", {})
    groups = group_alerts([odd, _kappa(0.5)])
    assert [(g.kind, g.title) for g in groups] == [
        ("gold_kappa_low", KINDS["gold_kappa_low"]),
        ("new_kind", "Something new"),
    ]
    assert shortfall(odd) == 0.0
    assert group_alerts([]) == []
