"""scoring.pairwise (issue 30): Bradley–Terry equals choix, a planted ranking comes back, a
position-biased reviewer is caught, the bootstrap is seeded and stratified, agreement equals the
krippendorff package and scikit-learn, and the CLI reads JSONL and refuses bad lines (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import combinations

import choix
import krippendorff
import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from scoring import pairwise as pw
from scoring.errors import InputError
from scoring.stats import bootstrap_distribution

SYSTEMS = ["s0", "s1", "s2", "s3", "s4", "s5"]


def _simulate_comparisons(seed: int, k: int, n: int, theta: np.ndarray) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    data = []
    for _ in range(n):
        i, j = rng.choice(k, 2, replace=False)
        data.append((i, j) if rng.random() < expit(theta[i] - theta[j]) else (j, i))
    return data


def _judgments_from(data, *, ties=(), unacceptable=()) -> list[pw.Judgment]:
    """(winner, loser) index pairs -> judgments, one question each, A = the winner on odd rows."""
    out = []
    for q, (w, loser) in enumerate(data):
        a, b = (w, loser) if q % 2 else (loser, w)
        out.append(
            pw.Judgment(f"q{q}", SYSTEMS[a], SYSTEMS[b], SYSTEMS[a], "a" if a == w else "b", "r1")
        )
    for q, (a, b) in enumerate(ties):
        out.append(pw.Judgment(f"t{q}", SYSTEMS[a], SYSTEMS[b], SYSTEMS[b], "tie", "r1"))
    for q, (a, b) in enumerate(unacceptable):
        out.append(
            pw.Judgment(f"u{q}", SYSTEMS[a], SYSTEMS[b], SYSTEMS[a], "both_unacceptable", "r1")
        )
    return out


def _centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean()


# ---------------------------------------------------------------------------------------------
# Differential tests against choix


@pytest.mark.parametrize("alpha", [1e-6, 0.01, 0.5])
def test_strengths_equal_choix_opt_pairwise(alpha):
    theta = np.array([1.2, 0.4, 0.0, -0.3, -0.6, -1.1])
    data = _simulate_comparisons(11, 6, 500, theta)
    report = pw.analyse(_judgments_from(data), alpha=alpha, n_resamples=10)
    ours = np.array([{s.system: s.strength for s in report.strengths}[x] for x in SYSTEMS])
    theirs = _centred(choix.opt_pairwise(6, data, alpha=alpha, tol=1e-12))
    assert np.abs(ours - theirs).max() < 1e-6
    assert abs(ours.mean()) < 1e-12


def test_maximum_likelihood_equals_choix_ilsr_pairwise():
    theta = np.array([0.9, 0.5, 0.1, -0.2, -0.5, -0.8])
    data = _simulate_comparisons(12, 6, 400, theta)
    w = pw.win_matrix(_judgments_from(data), SYSTEMS)
    assert pw.strongly_connected(w)
    ours = pw.bradley_terry(w, alpha=0.0)
    theirs = choix.ilsr_pairwise(6, data, alpha=0.0, tol=1e-12, max_iter=1000)
    assert np.abs(ours - theirs).max() < 1e-6


def test_ties_count_as_half_wins_and_both_unacceptable_is_left_out():
    """Half wins = choix on doubled data (a win twice, a tie once each way) with alpha doubled;
    both-unacceptable judgments change nothing."""
    alpha = 1e-3
    theta = np.array([0.8, 0.3, 0.0, -0.1, -0.4, -0.6])
    data = _simulate_comparisons(13, 6, 300, theta)
    ties = [(0, 1), (2, 3), (1, 4), (0, 5), (0, 1), (3, 5)]
    unacceptable = [(0, 2), (0, 2), (4, 5)]
    judged = _judgments_from(data, ties=ties, unacceptable=unacceptable)
    doubled = [pair for pair in data for _ in range(2)]
    doubled += [(a, b) for a, b in ties] + [(b, a) for a, b in ties]
    theirs = _centred(choix.opt_pairwise(6, doubled, alpha=2 * alpha, tol=1e-12))
    ours = pw.bradley_terry(pw.win_matrix(judged, SYSTEMS), alpha=alpha)
    assert np.abs(ours - theirs).max() < 1e-6
    without_unacceptable = _judgments_from(data, ties=ties)
    again = pw.bradley_terry(pw.win_matrix(without_unacceptable, SYSTEMS), alpha=alpha)
    assert np.abs(ours - again).max() < 1e-12


def test_no_maximum_likelihood_without_a_strongly_connected_graph():
    """s0 beats everyone and never loses: the MLE does not exist, the penalised fit does (and
    equals choix's, solved to a tight gradient), and the report says so."""
    data = [(0, 1)] * 3 + [(1, 2)] * 2 + [(2, 1)] + [(0, 2)]
    judged = _judgments_from(data)
    w = pw.win_matrix(judged, SYSTEMS[:3])
    assert not pw.strongly_connected(w)
    with pytest.raises(pw.PairwiseError, match="do not exist"):
        pw.bradley_terry(w, alpha=0.0)
    theirs = _centred(choix.opt_pairwise(3, data, alpha=1e-6, method="BFGS", tol=1e-13))
    assert np.abs(pw.bradley_terry(w) - theirs).max() < 1e-6
    report = pw.analyse(judged, n_resamples=20)
    assert report.mle_exists is False


def test_batch_fit_equals_one_fit_per_matrix():
    rng = np.random.default_rng(5)
    batch = rng.poisson(3.0, size=(7, 4, 4)).astype(float) * (1 - np.eye(4))
    together = pw.fit_bradley_terry_batch(batch, alpha=0.01)
    for b in range(7):
        alone = pw.fit_bradley_terry_batch(batch[b : b + 1], alpha=0.01)[0]
        assert np.abs(together[b] - alone).max() < 1e-9


def test_large_counts_converge_to_the_same_strengths():
    """Scaling every count and alpha by 10^6 leaves the optimum unchanged; the fit must still
    find it (objectives near 10^9, where rounding defeats a naive line search)."""
    rng = np.random.default_rng(6)
    w = rng.poisson(40.0, size=(5, 5)).astype(float) * (1 - np.eye(5))
    small = pw.bradley_terry(w, alpha=1e-3)
    large = pw.bradley_terry(w * 1e6, alpha=1e3)
    assert np.abs(small - large).max() < 1e-8


# ---------------------------------------------------------------------------------------------
# Simulated reviewers


def _simulate_reviews(
    seed: int,
    theta: dict[str, float],
    *,
    questions: int,
    reviewers: dict[str, float],
    tie_band: float = 0.0,
    strata: tuple[str, ...] = ("",),
) -> list[pw.Judgment]:
    """Every pair on every question by every reviewer; ``reviewers[name]`` is the probability
    that the reviewer ignores quality and picks whatever was shown left."""
    rng = np.random.default_rng(seed)
    names = sorted(theta)
    out = []
    for q in range(questions):
        stratum = strata[q % len(strata)] or None
        for x, y in combinations(names, 2):
            a, b = (x, y) if rng.random() < 0.5 else (y, x)
            for reviewer, lean_left in reviewers.items():
                left = a if rng.random() < 0.5 else b
                p_a = expit(theta[a] - theta[b])
                if rng.random() < lean_left:
                    pref = "a" if left == a else "b"
                elif abs(rng.random() - p_a) < tie_band:
                    pref = "tie"
                else:
                    pref = "a" if rng.random() < p_a else "b"
                out.append(pw.Judgment(f"q{q}", a, b, left, pref, reviewer, stratum=stratum))
    return out


PLANTED = {"alpha": 1.5, "bravo": 0.8, "charlie": 0.1, "delta": -0.7, "echo": -1.7}


def test_a_planted_ranking_is_recovered():
    # No ties here: half wins pull strengths toward each other, so only tie-free reviews
    # estimate the planted scale itself.
    judged = _simulate_reviews(2024, PLANTED, questions=120, reviewers={"r1": 0.0, "r2": 0.0})
    report = pw.analyse(judged, n_resamples=500)
    assert [s.system for s in report.strengths] == sorted(PLANTED, key=lambda s: -PLANTED[s])
    assert [s.rank for s in report.strengths] == [1, 2, 3, 4, 5]
    truth = np.array([PLANTED[s.system] for s in report.strengths])
    fitted = np.array([s.strength for s in report.strengths])
    assert spearmanr(truth, fitted).statistic == pytest.approx(1.0)
    # Each planted (centred) strength lies in its interval.
    centred = truth - truth.mean()
    for strength, true in zip(report.strengths, centred, strict=True):
        assert strength.ci.low <= true <= strength.ci.high
    # Neighbours 0.7+ apart: every pair's P(B beats A) interval excludes one half, on the
    # right side, and nearly every resample agrees.
    for pair in report.pairs:
        b_better = PLANTED[pair.system_b] > PLANTED[pair.system_a]
        ci = pair.p_b_beats_a_ci
        assert (ci.low > 0.5) if b_better else (ci.high < 0.5)
        assert pair.share_resamples_b_stronger == (1.0 if b_better else 0.0)
    assert report.mle_exists


def test_a_planted_ranking_is_recovered_with_ties_and_unacceptable_pairs():
    judged = _simulate_reviews(2025, PLANTED, questions=80, reviewers={"r1": 0.0}, tie_band=0.15)
    assert sum(j.preference == "tie" for j in judged) > 100
    judged += [
        pw.Judgment(f"u{i}", "echo", "alpha", "echo", "both_unacceptable", "r1") for i in range(30)
    ]
    report = pw.analyse(judged, n_resamples=200)
    assert [s.system for s in report.strengths] == sorted(PLANTED, key=lambda s: -PLANTED[s])
    pair = next(p for p in report.pairs if (p.system_a, p.system_b) == ("alpha", "echo"))
    assert pair.both_unacceptable == 30


def test_a_position_biased_reviewer_is_detected_and_a_fair_one_is_not():
    close = {"x": 0.1, "y": 0.0, "z": -0.1}
    judged = _simulate_reviews(77, close, questions=60, reviewers={"fair": 0.0, "leans_left": 0.5})
    bias = {b.reviewer: b for b in pw.position_bias(judged)}
    assert bias["leans_left"].pvalue < 0.01
    assert bias["leans_left"].share_left > 0.65
    assert bias["fair"].pvalue >= 0.01
    # Counts are the decisive judgments whose winner was shown left.
    mine = [j for j in judged if j.reviewer == "fair" and j.winner is not None]
    assert bias["fair"].n_decisive == len(mine)
    assert bias["fair"].n_left == sum(j.winner == j.left for j in mine)
    assert bias[None].n_decisive == bias["fair"].n_decisive + bias["leans_left"].n_decisive
    assert list(bias) == [None, "fair", "leans_left"]


def test_position_bias_ignores_ties_and_both_unacceptable():
    judged = [
        pw.Judgment("q1", "x", "y", "x", "a", "r"),
        pw.Judgment("q2", "x", "y", "y", "a", "r"),
        pw.Judgment("q3", "x", "y", "y", "b", "r"),
        pw.Judgment("q4", "x", "y", "x", "tie", "r"),
        pw.Judgment("q5", "x", "y", "x", "both_unacceptable", "r"),
    ]
    overall = pw.position_bias(judged)[0]
    assert (overall.n_left, overall.n_decisive) == (2, 3)
    assert overall.pvalue == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# Win rates and the bootstrap


def test_win_rates_counts_and_p_b_beats_a_by_hand():
    prefs = ["a", "a", "a", "b", "tie", "tie", "both_unacceptable"]
    judged = [
        pw.Judgment(f"q{i}", "x", "y", "x" if i % 2 else "y", p, "r1") for i, p in enumerate(prefs)
    ]
    report = pw.analyse(judged, n_resamples=50, alpha=0.1)
    (pair,) = report.pairs
    assert (pair.system_a, pair.system_b) == ("x", "y")
    assert (pair.wins_a, pair.wins_b, pair.ties, pair.both_unacceptable) == (3, 1, 2, 1)
    assert pair.n_judgments == 7
    assert pair.win_rate_a == pytest.approx((3 + 1) / 6)
    theta = {s.system: s.strength for s in report.strengths}
    assert pair.p_b_beats_a == pytest.approx(1 / (1 + np.exp(theta["x"] - theta["y"])))
    assert pair.p_b_beats_a < 0.5


def test_bootstrap_is_reproducible_with_the_seed():
    judged = _simulate_reviews(3, PLANTED, questions=20, reviewers={"r1": 0.1}, tie_band=0.05)
    first = pw.analyse(judged, n_resamples=300, seed=8821).to_dict()
    again = pw.analyse(judged, n_resamples=300, seed=8821).to_dict()
    other = pw.analyse(judged, n_resamples=300, seed=8822).to_dict()
    assert first == again
    assert first["strengths"] != other["strengths"]
    assert first["settings"]["seed"] == 8821
    assert [s["strength"] for s in first["strengths"]] == [
        s["strength"] for s in other["strengths"]
    ]


def test_resamples_are_stats_bootstrap_draws_within_strata():
    """The question multiplicities reproduce scoring.stats.bootstrap_distribution replicates
    for the same seed and strata, and each resample keeps every stratum's size."""
    rng = np.random.default_rng(9)
    values = rng.normal(size=37)
    strata = np.array(["a"] * 20 + ["b"] * 12 + ["c"] * 5)
    expected = bootstrap_distribution(values, n=700, seed=8821, strata=strata)
    counts = np.concatenate(list(pw.resample_counts(37, strata, n=700, seed=8821)))
    assert counts.shape == (700, 37)
    np.testing.assert_allclose(counts @ values / 37, expected, rtol=0, atol=1e-12)
    for label, size in (("a", 20), ("b", 12), ("c", 5)):
        assert (counts[:, strata == label].sum(axis=1) == size).all()


def test_report_bootstraps_within_strata():
    judged = _simulate_reviews(
        8, PLANTED, questions=18, reviewers={"r1": 0.0}, strata=("easy", "hard", "hard")
    )
    report = pw.analyse(judged, n_resamples=100)
    assert report.strata == {"easy": 6, "hard": 12}
    assert report.settings["bootstrap"] == "questions, within strata"


# ---------------------------------------------------------------------------------------------
# Agreement on preferences


def test_agreement_equals_krippendorff_and_sklearn():
    rng = np.random.default_rng(31)
    labels = ["a", "b", "tie", "both_unacceptable"]
    reviewers = ["ann", "bob", "cyd"]
    judged = []
    truth = rng.choice(4, size=40, p=[0.4, 0.35, 0.15, 0.1])
    for q in range(40):
        for r in reviewers:
            if rng.random() < 0.15:
                continue  # not every reviewer judges every pair
            code = truth[q] if rng.random() < 0.7 else rng.integers(4)
            # Display order and A/B naming vary per reviewer; the preference must not.
            flipped = rng.random() < 0.5
            a, b = ("y", "x") if flipped else ("x", "y")
            pref = labels[code]
            if flipped and pref in ("a", "b"):
                pref = "b" if pref == "a" else "a"
            judged.append(pw.Judgment(f"q{q}", a, b, rng.choice([a, b]), pref, r))
    # Reference data in the x-vs-y frame: 0 x better, 1 y better, 2 tie, 3 both unacceptable.
    grid = np.full((3, 40), np.nan)
    for j in judged:
        code = {"tie": 2, "both_unacceptable": 3}.get(j.preference)
        if code is None:
            code = 0 if j.winner == "x" else 1
        grid[reviewers.index(j.reviewer), int(j.question_id[1:])] = code
    result = pw.preference_agreement(judged)
    expected = krippendorff.alpha(reliability_data=grid, level_of_measurement="nominal")
    assert result.alpha == pytest.approx(expected, abs=1e-12)
    assert result.n_reviewers == 3
    by_pair = {(k.reviewer_a, k.reviewer_b): k for k in result.kappa}
    assert set(by_pair) == {("ann", "bob"), ("ann", "cyd"), ("bob", "cyd")}
    for (ra, rb), k in by_pair.items():
        row_a, row_b = grid[reviewers.index(ra)], grid[reviewers.index(rb)]
        both = ~np.isnan(row_a) & ~np.isnan(row_b)
        assert k.n_items == int(both.sum())
        assert k.kappa == pytest.approx(cohen_kappa_score(row_a[both], row_b[both]), abs=1e-12)


def test_agreement_is_undefined_with_one_reviewer():
    judged = [pw.Judgment("q1", "x", "y", "x", "a", "solo")]
    result = pw.preference_agreement(judged)
    assert result.alpha is None and "two or more" in result.alpha_reason
    assert result.kappa == []


# ---------------------------------------------------------------------------------------------
# Reading judgments


GOOD = {
    "question_id": "q1",
    "system_a": "x",
    "system_b": "y",
    "left": "y",
    "preference": "a",
    "reviewer": "r1",
    "strength": "clearly",
    "stratum": "legal",
}


def _lines(*records) -> list[str]:
    return [json.dumps(r) if isinstance(r, dict) else r for r in records]


@pytest.mark.parametrize(
    ("change", "line", "message"),
    [
        ({"preference": "left"}, 2, "field 'preference'"),
        ({"left": "z"}, 2, "field 'left'"),
        ({"system_b": "x", "left": "x"}, 2, "field 'system_b'"),
        ({"strength": "very"}, 2, "field 'strength'"),
        ({"preference": "tie"}, 2, "field 'strength'"),
        ({"reviewer": ""}, 2, "field 'reviewer'"),
        ({"reviewer": 7}, 2, "field 'reviewer' must be a string"),
        ({"colour": "red"}, 2, "unknown field 'colour'"),
        ({"stratum": "tax"}, 2, "field 'stratum'"),
    ],
)
def test_bad_fields_are_named_with_their_line(change, line, message):
    second = {**GOOD, "question_id": "q1", "reviewer": "r2", **change}
    with pytest.raises(InputError) as exc:
        pw.read_judgments(_lines(GOOD, second))
    assert exc.value.line == line
    assert message in exc.value.message


def test_missing_field_bad_json_duplicates_and_empty_input():
    missing = {k: v for k, v in GOOD.items() if k != "left"}
    with pytest.raises(InputError, match="line 1: missing field 'left'"):
        pw.read_judgments(_lines(missing))
    with pytest.raises(InputError, match="line 2: invalid JSON"):
        pw.read_judgments(_lines(GOOD, "{not json"))
    swapped = {**GOOD, "system_a": "y", "system_b": "x", "preference": "b"}
    with pytest.raises(InputError, match="line 3: reviewer 'r1' already judged x vs y") as exc:
        pw.read_judgments(_lines(GOOD, "", swapped))
    assert "on line 1" in exc.value.message
    with pytest.raises(InputError, match="no judgments"):
        pw.read_judgments(["", "  "])
    with pytest.raises(InputError, match="file not found"):
        pw.read_judgments("/nonexistent/judgments.jsonl")


def test_unreadable_paths_and_deep_json_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="cannot read the file"):
        pw.read_judgments(str(tmp_path))
    with pytest.raises(InputError, match="line 1: invalid JSON: nested too deeply"):
        pw.read_judgments(["[" * 100_000 + "]" * 100_000])


def test_reads_integer_question_ids_and_optional_fields():
    (j,) = pw.read_judgments(
        _lines(
            {k: v for k, v in GOOD.items() if k not in ("strength", "stratum")} | {"question_id": 4}
        )
    )
    assert j.question_id == "4" and j.strength is None and j.stratum is None
    assert j.chose_left is False and j.winner == "x"


# ---------------------------------------------------------------------------------------------
# CLI


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scoring", *args], capture_output=True, text=True, check=False
    )


def test_cli_pairwise_end_to_end(write):
    judged = _simulate_reviews(
        41, PLANTED, questions=10, reviewers={"r1": 0.0, "r2": 0.3}, tie_band=0.05
    )
    lines = "\n".join(
        json.dumps({k: v for k, v in vars(j).items() if v is not None}) for j in judged
    )
    path = write("judgments.jsonl", lines + "\n")
    proc = _cli("pairwise", path, "--resamples", "200", "--seed", "8821")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    expected = pw.analyse(pw.read_judgments(path), n_resamples=200, seed=8821).to_dict()
    assert payload == json.loads(json.dumps(expected))
    assert payload["n_judgments"] == len(judged)
    assert {b["reviewer"] for b in payload["position_bias"]} == {None, "r1", "r2"}

    text = _cli("pairwise", path, "--resamples", "200", "--format", "text")
    assert text.returncode == 0, text.stderr
    assert "Krippendorff alpha (nominal)" in text.stdout
    assert text.stdout.splitlines()[3].split()[:2] == ["1", payload["strengths"][0]["system"]]


def test_cli_pairwise_bad_input_exits_2_naming_line_and_field(write):
    bad = {**GOOD, "reviewer": "r2", "preference": "maybe"}
    path = write("bad.jsonl", json.dumps(GOOD) + "\n" + json.dumps(bad) + "\n")
    proc = _cli("pairwise", path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"error: {path}, line 2: field 'preference'")

    empty = write("empty.jsonl", "")
    assert _cli("pairwise", empty).returncode == 2
    usage = _cli("pairwise", path, "--resamples", "0")
    assert usage.returncode == 2 and "--resamples" in usage.stderr
    good = write("good.jsonl", json.dumps(GOOD) + "\n")
    for option, value, message in (
        ("--alpha", "nan", "alpha must be a finite number > 0"),
        ("--alpha", "0", "alpha must be a finite number > 0"),
        ("--seed", "-1", "seed must be 0 or more"),
    ):
        proc = _cli("pairwise", good, "--resamples", "5", option, value)
        assert proc.returncode == 2, (option, value)
        assert proc.stdout == "" and message in proc.stderr


def test_analyse_refuses_a_question_with_two_strata():
    judged = [
        pw.Judgment("q1", "x", "y", "x", "a", "r1", stratum="legal"),
        pw.Judgment("q1", "x", "y", "x", "a", "r2", stratum="tax"),
    ]
    with pytest.raises(pw.PairwiseError, match="two strata"):
        pw.analyse(judged, n_resamples=5)


def test_cli_help_lists_pairwise():
    proc = _cli("--help")
    assert proc.returncode == 0
    assert "pairwise" in proc.stdout
    sub = _cli("pairwise", "--help")
    assert sub.returncode == 0
    for option in ("FILE.jsonl", "--seed", "--resamples", "--format", "--alpha"):
        assert option in sub.stdout
