"""The agreement service against the reference libraries called directly on the same data,
and each trigger at its boundary."""

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from goldset.models import AgreementSnapshot, Tier
from goldset.rules.calendar import iso_week
from goldset.selectors.agreement import list_agreement_alerts
from goldset.services.agreement import (
    AXES,
    compute_figures,
    ratings_frame,
    spot_check_frame,
    store_agreement_snapshots,
)
from tests.goldset.project_support import default_project

GOLD, TRIAGE = Tier.GOLD.value, Tier.TRIAGE.value
GROUNDING = AXES["grounding"].categories


def make_ratings(
    seed=5,
    n_items=60,
    *,
    task_type="rag_synthesis",
    tier=GOLD,
    week="2026-W45",
    protocol="answer_label",
):
    """Three annotators, ~15 % missing, values correlated with a latent truth on both axes."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        truth = rng.integers(0, 4)
        for annotator in (1, 2, 3):
            if rng.random() < 0.15:
                continue
            grade = int(np.clip(truth + rng.choice([-1, 0, 0, 0, 1]), 0, 3))
            rows.append(
                (
                    protocol,
                    f"{task_type}-{item}",
                    annotator,
                    "grounding",
                    GROUNDING[grade],
                    tier,
                    task_type,
                    "healthcare_ops",
                    week,
                )
            )
            rows.append(
                (
                    protocol,
                    f"{task_type}-{item}",
                    annotator,
                    "acceptability",
                    "acceptable" if grade >= 2 else "unacceptable",
                    tier,
                    task_type,
                    "healthcare_ops",
                    week,
                )
            )
    return rows


def reliability_matrix(rows, axis, categories):
    items = sorted({r[1] for r in rows if r[3] == axis})
    annotators = sorted({r[2] for r in rows if r[3] == axis})
    matrix = np.full((len(annotators), len(items)), np.nan)
    for r in rows:
        if r[3] == axis:
            matrix[annotators.index(r[2]), items.index(r[1])] = categories.index(r[4])
    return matrix


SCOPE_KEYS = ("tier", "task_type", "domain", "week")


def figure(figures, **match):
    """The one figure with these fields; scope dimensions not named must be "all" (empty)."""
    wanted = {**dict.fromkeys(SCOPE_KEYS, ""), "subject": "", **match}
    found = [
        f
        for f in figures
        if all(
            (f.scope.get(k, "") if k in SCOPE_KEYS else getattr(f, k)) == v
            for k, v in wanted.items()
        )
    ]
    assert len(found) == 1, (match, len(found))
    return found[0]


@pytest.fixture
def rows():
    return make_ratings()


@pytest.fixture
def figures(rows):
    return compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=200)


@pytest.mark.parametrize("axis,level", [("grounding", "ordinal"), ("acceptability", "nominal")])
def test_alpha_equals_krippendorff_called_directly_with_missing_labels(rows, figures, axis, level):
    expected = krippendorff.alpha(
        reliability_data=reliability_matrix(rows, axis, AXES[axis].categories),
        level_of_measurement=level,
        value_domain=list(range(len(AXES[axis].categories))),
    )
    for scope in (
        {},
        {"tier": GOLD},
        {"tier": GOLD, "task_type": "rag_synthesis"},
        {"tier": GOLD, "week": "2026-W45"},
    ):
        got = figure(figures, axis=axis, metric="krippendorff_alpha", **scope)
        assert got.value == pytest.approx(expected, abs=1e-12)
        assert got.ci[0] < got.value < got.ci[1]


def test_fleiss_uses_exactly_the_items_with_three_ratings(rows, figures):
    matrix = reliability_matrix(rows, "grounding", GROUNDING).T
    complete = matrix[~np.isnan(matrix).any(axis=1)].astype(int)
    counts, _ = aggregate_raters(complete, n_cat=4)
    got = figure(figures, axis="grounding", metric="fleiss_kappa")
    assert got.n_items == len(complete)
    assert got.value == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=1e-12)


def test_pairwise_cohen_is_weighted_on_ordinal_axes_and_equals_statsmodels(rows, figures):
    matrix = reliability_matrix(rows, "grounding", GROUNDING)
    both = ~np.isnan(matrix[0]) & ~np.isnan(matrix[1])
    table = np.zeros((4, 4))
    for a, b in zip(matrix[0][both].astype(int), matrix[1][both].astype(int), strict=True):
        table[a, b] += 1
    got = figure(figures, axis="grounding", metric="cohen_kappa", subject="1|2", tier="")
    assert got.n_items == int(both.sum())
    assert got.value == pytest.approx(cohens_kappa(table, wt="linear").kappa, abs=1e-12)
    nominal = figure(figures, axis="acceptability", metric="cohen_kappa", subject="1|3", tier=GOLD)
    assert nominal.value is not None


def test_two_rater_items_give_alpha_but_no_fleiss():
    rows = [r for r in make_ratings(seed=9, n_items=30) if r[2] != 3]
    figures = compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=100)
    assert figure(figures, axis="acceptability", metric="krippendorff_alpha").value is not None
    assert not [f for f in figures if f.metric == "fleiss_kappa"]


def test_undefined_agreement_is_stored_with_its_reason():
    rows = [
        ("triple_review", f"t{i}", a, "verdict", "confirm", GOLD, "factual_qa", "sq", "2026-W45")
        for i in range(5)
        for a in (1, 2)
    ]
    figures = compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=50)
    alpha = figure(figures, axis="verdict", metric="krippendorff_alpha")
    assert alpha.value is None and "0/0" in alpha.reason


def test_bootstrap_cis_are_reproducible_from_the_seed(rows):
    a = compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=300)
    b = compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=300)
    assert [f.ci for f in a] == [f.ci for f in b]
    c = compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=300, seed=1)
    assert [f.ci for f in a] != [f.ci for f in c]


def test_a_value_off_the_scale_is_an_error():
    rows = [("answer_label", "i1", 1, "grounding", "sort_of", GOLD, "x", "d", "2026-W01")]
    with pytest.raises(ValueError, match="sort_of"):
        compute_figures(ratings_frame(rows), spot_check_frame([]), n_resamples=10)


def test_iso_week_labels():
    import datetime as dt

    assert iso_week(dt.date(2026, 11, 21)) == "2026-W47"
    assert iso_week(dt.date(2027, 1, 1)) == "2026-W53"


@pytest.mark.django_db
def test_storing_is_a_no_op_for_unchanged_data_and_replaces_figures_after_a_change(rows):
    version, n = store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame(rows),
        spot_checks=spot_check_frame([]),
        n_resamples=50,
    )
    first_ids = set(AgreementSnapshot.objects.values_list("id", flat=True))
    stored = set(AgreementSnapshot.objects.values_list("data_version", flat=True))
    assert n == len(first_ids) > 0
    again, _ = store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame(list(reversed(rows))),
        spot_checks=spot_check_frame([]),
        n_resamples=50,
    )
    assert (
        again == version
        and set(AgreementSnapshot.objects.values_list("id", flat=True)) == first_ids
    )
    changed, _ = store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame(rows[:-4]),
        spot_checks=spot_check_frame([]),
        n_resamples=50,
    )
    assert changed != version
    # One protocol here: its rows carry that protocol's data version, a new one after the change.
    now_stored = set(AgreementSnapshot.objects.values_list("data_version", flat=True))
    assert len(now_stored) == 1 and now_stored != stored


# ---------------------------------------------------------------- triggers at their boundaries


def spot_rows(week, disagree, total, protocol="triple_review"):
    return [(protocol, f"{week}-{i}", week, i >= disagree) for i in range(total)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "weeks,fires",
    [
        ([("2026-W44", 120, 1000), ("2026-W45", 120, 1000)], False),  # exactly 12 %: does not fire
        ([("2026-W44", 121, 1000), ("2026-W45", 121, 1000)], True),  # 12.1 % twice in a row
        ([("2026-W44", 121, 1000), ("2026-W45", 50, 1000)], False),  # one week only
        ([("2026-W43", 121, 1000), ("2026-W45", 121, 1000)], False),  # not consecutive
        ([("2026-W52", 200, 1000), ("2026-W53", 200, 1000)], True),
        ([("2026-W53", 200, 1000), ("2027-W01", 200, 1000)], True),  # across a year boundary
    ],
)
def test_spot_check_trigger_fires_exactly_above_12_percent_in_two_consecutive_weeks(weeks, fires):
    spot = spot_check_frame([row for week in weeks for row in spot_rows(*week)])
    store_agreement_snapshots(
        project=default_project(), ratings=ratings_frame([]), spot_checks=spot, n_resamples=10
    )
    alerts = [
        a
        for a in list_agreement_alerts(project=default_project())
        if a.kind == "spot_check_disagreement"
    ]
    assert bool(alerts) is fires
    if fires:
        assert "12%" in alerts[0].title and alerts[0].numbers["weeks"] == [w[0] for w in weeks]


@pytest.mark.django_db
def test_gold_alpha_below_target_fires_for_that_task_type_only():
    agreeing = [  # one annotator in three disagrees on every 20th item: α well above 0.75
        (
            "answer_label",
            f"ok-{i}",
            a,
            axis,
            value if not (i % 20 == 0 and a == 3) else other,
            GOLD,
            "factual_qa",
            "healthcare_ops",
            "2026-W45",
        )
        for i in range(60)
        for a in (1, 2, 3)
        for axis, value, other in [
            (
                "acceptability",
                ["acceptable", "unacceptable"][i % 2],
                ["unacceptable", "acceptable"][i % 2],
            ),
            ("grounding", GROUNDING[i % 4], GROUNDING[(i + 1) % 4]),
        ]
    ]
    noisy = []
    rng = np.random.default_rng(3)
    for item in range(60):
        for annotator in (1, 2, 3):
            noisy.append(
                (
                    "answer_label",
                    f"noisy-{item}",
                    annotator,
                    "acceptability",
                    rng.choice(["acceptable", "unacceptable"]),
                    GOLD,
                    "rag_synthesis",
                    "healthcare_ops",
                    "2026-W45",
                )
            )
    store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame(agreeing + noisy),
        spot_checks=spot_check_frame([]),
        n_resamples=50,
    )
    alpha_alerts = [
        a for a in list_agreement_alerts(project=default_project()) if a.kind == "gold_alpha_low"
    ]
    assert {a.numbers["task_type"] for a in alpha_alerts} == {"rag_synthesis"}
    assert all(a.numbers["alpha"] < 0.75 for a in alpha_alerts)


@pytest.mark.django_db
def test_alerts_need_enough_items(settings):
    settings.AGREEMENT_MIN_ITEMS = 1000
    rows = [
        (
            "answer_label",
            f"i{i}",
            a,
            "acceptability",
            ["acceptable", "unacceptable"][(i + a) % 2],
            GOLD,
            "rag_synthesis",
            "d",
            "2026-W45",
        )
        for i in range(40)
        for a in (1, 2)
    ]
    store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame(rows),
        spot_checks=spot_check_frame([]),
        n_resamples=10,
    )
    assert list_agreement_alerts(project=default_project()) == []
    settings.AGREEMENT_MIN_ITEMS = 10
    kinds = {a.kind for a in list_agreement_alerts(project=default_project())}
    assert kinds == {"gold_alpha_low", "gold_kappa_low"}


def snapshot(**fields):
    base = {
        "protocol": "answer_label",
        "axis": "acceptability",
        "tier": GOLD,
        "task_type": "",
        "domain": "",
        "week": "",
        "subject": "",
        "n_items": 50,
        "n_annotators": 3,
        "data_version": "v",
        "ci_low": None,
        "ci_high": None,
    }
    return AgreementSnapshot(**{**base, **fields})


@pytest.mark.django_db
@pytest.mark.parametrize(
    "metric,value,fires,kind",
    [
        ("krippendorff_alpha", 0.75, False, "gold_alpha_low"),
        ("krippendorff_alpha", 0.7499, True, "gold_alpha_low"),
        ("cohen_kappa", 0.70, False, "gold_kappa_low"),
        ("cohen_kappa", 0.6999, True, "gold_kappa_low"),
    ],
)
def test_alpha_and_kappa_triggers_fire_just_below_their_targets(metric, value, fires, kind):
    fields = (
        {"task_type": "rag_synthesis"} if metric == "krippendorff_alpha" else {"subject": "1|2"}
    )
    alerts = [
        a
        for a in list_agreement_alerts(
            project=default_project(), snapshots=[snapshot(metric=metric, value=value, **fields)]
        )
        if a.kind == kind
    ]
    assert bool(alerts) is fires


@pytest.mark.django_db
def test_alpha_trigger_ignores_triage_weekly_and_domain_figures():
    rows = [
        snapshot(metric="krippendorff_alpha", value=0.1, task_type="rag_synthesis", tier=TRIAGE),
        snapshot(
            metric="krippendorff_alpha", value=0.1, task_type="rag_synthesis", week="2026-W45"
        ),
        snapshot(metric="krippendorff_alpha", value=0.1, domain="supply_chain"),
    ]
    assert [
        a
        for a in list_agreement_alerts(project=default_project(), snapshots=rows)
        if a.kind == "gold_alpha_low"
    ] == []


@pytest.mark.django_db
@pytest.mark.parametrize("rate,fires", [(0.75, False), (0.7499, True)])
def test_annotator_outlier_fires_more_than_the_margin_below_the_median(make_user, rate, fires):
    users = [make_user(username=f"outlier-{i}") for i in range(4)]
    rows = [
        snapshot(
            axis="annotator", metric="adjudication_agreement", tier="", subject=str(u.pk), value=v
        )
        for u, v in zip(users, [0.9, 0.9, 0.92, rate], strict=True)
    ]
    alerts = [
        a
        for a in list_agreement_alerts(project=default_project(), snapshots=rows)
        if a.kind == "annotator_outlier"
    ]
    assert bool(alerts) is fires  # median 0.9, margin 0.15: the boundary is 0.75
    if fires:
        assert users[3].username in alerts[0].detail


@pytest.mark.django_db
@pytest.mark.parametrize("gap,fires", [(0.10, False), (0.1001, True), (-0.1001, True)])
def test_severe_rate_gap_fires_beyond_the_margin(make_user, gap, fires):
    user = make_user(username="severe-gap")
    rows = [
        snapshot(
            axis="annotator", metric="severe_rate_gap", tier="", subject=str(user.pk), value=gap
        )
    ]
    alerts = [
        a
        for a in list_agreement_alerts(project=default_project(), snapshots=rows)
        if a.kind == "severe_rate_gap"
    ]
    assert bool(alerts) is fires
