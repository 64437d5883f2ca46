"""The statistics module checked against independent implementations.

Every figure is compared with scipy or statsmodels (test-only dependencies) or
with a count by brute force, on fixed data; the clustered cases use data whose
replicates are correlated, where an interval that ignores clustering is
visibly too narrow.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

from verifleet.errors import StatisticsError
from verifleet.results.stats import (
    binom_cdf_half,
    classification,
    cluster_bootstrap_mean,
    clustered_mean,
    cohen_kappa,
    fleiss_kappa,
    mcnemar_exact,
    naive_mean,
    paired_comparison,
    pass_at_k,
    pass_hat_k,
    rate_interval,
    rate_interval_from_sums,
    replicate_stats,
    wilson,
)


def _clustered_verdicts(
    questions: int, replicates: int, seed: int
) -> tuple[list[float], list[str]]:
    """Verdicts whose replicates mostly agree within a question (each question
    has its own difficulty), the shape of real replicated runs."""
    rng = np.random.default_rng(seed)
    values: list[float] = []
    labels: list[str] = []
    for q in range(questions):
        difficulty = rng.choice([0.05, 0.5, 0.95])
        for _ in range(replicates):
            values.append(float(rng.random() < difficulty))
            labels.append(f"q{q}")
    return values, labels


def _statsmodels_cluster(values: list[float], labels: list[str]) -> tuple[float, float, float]:
    codes = np.unique(labels, return_inverse=True)[1]
    fit = sm.OLS(np.asarray(values), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=False
    )
    low, high = fit.conf_int(alpha=0.05)[0]
    return float(fit.bse[0]), float(low), float(high)


@pytest.mark.parametrize(
    ("count", "nobs"), [(0, 10), (3, 10), (10, 10), (1, 1), (57, 200), (499, 500)]
)
def test_wilson_matches_statsmodels(count: int, nobs: int) -> None:
    got = wilson(count, nobs)
    low, high = proportion_confint(count, nobs, alpha=0.05, method="wilson")
    assert got.low == pytest.approx(low, abs=1e-12)
    assert got.high == pytest.approx(high, abs=1e-12)
    assert got.estimate == count / nobs
    # A 90 % interval is narrower and also matches.
    low90, high90 = proportion_confint(count, nobs, alpha=0.10, method="wilson")
    assert wilson(count, nobs, 0.90).low == pytest.approx(low90, abs=1e-12)
    assert wilson(count, nobs, 0.90).high == pytest.approx(high90, abs=1e-12)


def test_wilson_rejects_impossible_counts() -> None:
    with pytest.raises(StatisticsError, match="successes"):
        wilson(4, 3)
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)


def test_clustered_mean_matches_statsmodels_sandwich() -> None:
    values, labels = _clustered_verdicts(30, 5, seed=1)
    got = clustered_mean(values, labels)
    se, low, high = _statsmodels_cluster(values, labels)
    assert got.estimate == pytest.approx(float(np.mean(values)))
    assert got.se == pytest.approx(se, rel=1e-10)
    assert (got.low, got.high) == (pytest.approx(low, rel=1e-10), pytest.approx(high, rel=1e-10))
    assert got.clusters == 30 and got.n == 150


def test_clustered_mean_of_unbalanced_clusters_matches_statsmodels() -> None:
    # Trait scores, clusters of 1 to 4 observations.
    values = [3.0, 4.0, 4.0, 1.0, 2.0, 5.0, 5.0, 5.0, 4.0, 2.0, 3.0, 1.0, 1.0]
    labels = ["a", "a", "a", "b", "b", "c", "c", "c", "c", "d", "e", "e", "f"]
    got = clustered_mean(values, labels)
    se, low, high = _statsmodels_cluster(values, labels)
    assert got.se == pytest.approx(se, rel=1e-10)
    assert got.low == pytest.approx(low, rel=1e-10)
    assert got.high == pytest.approx(high, rel=1e-10)


def test_naive_interval_is_visibly_too_narrow_on_clustered_data() -> None:
    values, labels = _clustered_verdicts(40, 8, seed=2)
    clustered = clustered_mean(values, labels)
    naive = naive_mean(values)
    # The naive one is statsmodels' ordinary OLS standard error ...
    ols = sm.OLS(np.asarray(values), np.ones(len(values))).fit()
    assert naive.se == pytest.approx(float(ols.bse[0]), rel=1e-10)
    # ... and on correlated replicates it is far too narrow.
    assert clustered.width > 2.0 * naive.width
    # Control: with one observation per question the two agree.
    single = values[::8]
    assert clustered_mean(single, labels[::8]).width == pytest.approx(
        naive_mean(single).width, rel=0.02
    )


def test_cluster_bootstrap_is_fixed_by_its_seed_and_agrees_with_the_sandwich() -> None:
    values, labels = _clustered_verdicts(200, 4, seed=3)
    first = cluster_bootstrap_mean(values, labels)
    assert first == cluster_bootstrap_mean(values, labels)
    assert first != cluster_bootstrap_mean(values, labels, seed=7)
    sandwich = clustered_mean(values, labels)
    assert first.width == pytest.approx(sandwich.width, rel=0.15)
    assert first.width > 1.5 * naive_mean(values).width


def test_rate_interval_uses_wilson_without_replicates_and_clusters_with_them() -> None:
    assert rate_interval([True, False, True], ["a", "b", "c"]).method == "wilson"
    values, labels = _clustered_verdicts(10, 3, seed=4)
    got = rate_interval([v == 1.0 for v in values], labels)
    assert got.method == "clustered" and 0.0 <= got.low <= got.high <= 1.0


def test_rate_interval_from_sums_is_rate_interval_of_the_counts() -> None:
    values, labels = _clustered_verdicts(10, 3, seed=4)
    passes: dict[str, float] = {}
    for value, label in zip(values, labels, strict=True):
        passes[label] = passes.get(label, 0.0) + value
    # A question without a verdict (every replicate errored) takes no part.
    got = rate_interval_from_sums([*passes.values(), 0.0], [3.0] * len(passes) + [0.0])
    assert got == rate_interval([v == 1.0 for v in values], labels)
    assert got == clustered_mean(values, labels, bounds=(0.0, 1.0))
    assert rate_interval_from_sums([1, 0, 1], [1, 1, 1]) == wilson(2, 3)
    assert rate_interval_from_sums([2], [3]) == wilson(2, 3)  # one question: no clustering
    assert rate_interval_from_sums([], []) == wilson(0, 0)
    with pytest.raises(StatisticsError):
        rate_interval_from_sums([3, 1], [2, 2])
    with pytest.raises(StatisticsError):
        rate_interval_from_sums([1, 1], [2])


@pytest.mark.parametrize(("k", "n"), [(0, 0), (0, 5), (2, 5), (5, 5), (17, 40), (480, 1000)])
def test_binomial_cdf_matches_scipy(k: int, n: int) -> None:
    from scipy.stats import binom

    assert binom_cdf_half(k, n) == pytest.approx(float(binom.cdf(k, n, 0.5)), rel=1e-9)


@pytest.mark.parametrize(
    ("a_only", "b_only"), [(0, 0), (0, 1), (3, 10), (10, 3), (7, 7), (1, 25), (40, 61)]
)
def test_mcnemar_exact_matches_statsmodels_and_scipy(a_only: int, b_only: int) -> None:
    table = [[12, a_only], [b_only, 30]]
    expected = mcnemar(table, exact=True).pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(float(expected), rel=1e-9)
    if a_only + b_only:
        scipy_p = binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue
        assert mcnemar_exact(a_only, b_only) == pytest.approx(scipy_p, rel=1e-9)


def test_paired_comparison_counts_rates_and_intervals() -> None:
    # 25 questions x 4 replicates.
    rng = np.random.default_rng(5)
    a: list[bool] = []
    b: list[bool] = []
    labels: list[str] = []
    for q in range(25):
        base = rng.random()
        for _ in range(4):
            x = bool(rng.random() < base)
            a.append(x)
            # B fixes every replicate of a quarter of the questions: the gains
            # cluster by question, as a better template or model makes them.
            b.append(x or q % 4 == 0)
            labels.append(f"q{q}")
    got = paired_comparison(a, b, labels)
    table = [[got.both_pass, got.a_only], [got.b_only, got.both_fail]]
    assert sum(map(sum, table)) == 100
    assert got.b_only == sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    assert got.mcnemar_p == pytest.approx(float(mcnemar(table, exact=True).pvalue), rel=1e-9)
    diffs = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    se, low, high = _statsmodels_cluster(diffs, labels)
    assert got.difference is not None and got.naive is not None and got.bootstrap is not None
    assert got.difference.estimate == pytest.approx(got.rate_b - got.rate_a)
    assert got.difference.se == pytest.approx(se, rel=1e-10)
    assert got.difference.low == pytest.approx(low, rel=1e-10)
    assert got.difference.high == pytest.approx(high, rel=1e-10)
    assert got.difference.width > got.naive.width
    assert got.bootstrap.low <= got.difference.estimate <= got.bootstrap.high


def test_paired_comparison_rejects_pairs_that_do_not_line_up() -> None:
    with pytest.raises(StatisticsError, match="line up"):
        paired_comparison([True], [True, False], ["a"])
    one_question = paired_comparison([True, False], [True, True], ["a", "a"])
    assert one_question.difference is None and one_question.b_only == 1


def _brute(n: int, c: int, k: int) -> tuple[float, float]:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    return (
        sum(1 for s in subsets if any(s)) / len(subsets),
        sum(1 for s in subsets if all(s)) / len(subsets),
    )


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(1, 0, 1), (1, 1, 1), (5, 2, 1), (5, 2, 3), (8, 5, 4), (10, 1, 10), (10, 9, 5)],
)
def test_pass_at_k_and_pass_hat_k_match_counting_subsets(n: int, c: int, k: int) -> None:
    at_k, hat_k = _brute(n, c, k)
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)


def test_replicate_stats_by_hand() -> None:
    verdicts = {
        "steady": [True, True, True, True],
        "coin": [True, False, True, False],
        "mostly": [True, True, True, False],
        "never": [False, False, False, False],
        "short": [True],
    }
    got = replicate_stats(verdicts, k=2, top=5)
    assert got.questions == 5 and got.questions_with_k == 4
    # pass@2: 1, 1 - C(2,2)/C(4,2) = 5/6, 1 (one failure cannot fill two draws), 0.
    assert got.pass_at_k == pytest.approx((1 + 5 / 6 + 1 + 0) / 4)
    # pass^2: 1, 1/6, C(3,2)/C(4,2) = 1/2, 0.
    assert got.pass_hat_k == pytest.approx((1 + 1 / 6 + 0.5 + 0) / 4)
    assert got.consistency == pytest.approx((1 + 0.5 + 0.75 + 1 + 1) / 5)
    assert got.flaky == 2
    assert [q.key for q in got.flakiest] == ["coin", "mostly"]
    with pytest.raises(StatisticsError, match="between 1"):
        pass_at_k(3, 1, 4)


def test_cohen_kappa_matches_statsmodels() -> None:
    first = ["pass"] * 20 + ["fail"] * 15 + ["pass"] * 5 + ["fail"] * 10
    second = ["pass"] * 20 + ["fail"] * 15 + ["fail"] * 5 + ["pass"] * 10
    got = cohen_kappa(first, second)
    table = np.array([[20, 5], [10, 15]])  # rows: first (pass, fail); cols: second
    expected = cohens_kappa(table)
    assert got.kappa == pytest.approx(expected.kappa, rel=1e-10)
    assert got.se == pytest.approx(expected.std_kappa, rel=1e-10)
    assert got.low == pytest.approx(expected.kappa_low, rel=1e-10)
    assert got.high == pytest.approx(expected.kappa_upp, rel=1e-10)
    assert got.observed == pytest.approx(35 / 50)


def test_cohen_kappa_three_categories_and_undefined_case() -> None:
    rng = np.random.default_rng(6)
    first = list(rng.choice(["pass", "fail", "none"], size=80, p=[0.5, 0.4, 0.1]))
    second = [x if rng.random() < 0.7 else str(rng.choice(["pass", "fail", "none"])) for x in first]
    got = cohen_kappa(first, second)
    cats = ["pass", "fail", "none"]
    table = np.array(
        [
            [sum(1 for x, y in zip(first, second, strict=True) if x == r and y == c) for c in cats]
            for r in cats
        ]
    )
    expected = cohens_kappa(table)
    assert got.kappa == pytest.approx(expected.kappa, rel=1e-10)
    assert got.se == pytest.approx(expected.std_kappa, rel=1e-10)
    assert cohen_kappa(["pass"] * 4, ["pass"] * 4).kappa is None


def test_fleiss_kappa_matches_statsmodels_with_a_bootstrap_interval() -> None:
    rng = np.random.default_rng(8)
    ratings = []
    for _ in range(60):
        truth = bool(rng.random() < 0.6)
        ratings.append([truth if rng.random() < 0.8 else not truth for _ in range(3)])
    got = fleiss_kappa(ratings)
    table, _ = aggregate_raters(np.asarray(ratings, dtype=int))
    assert got.kappa == pytest.approx(sm_fleiss_kappa(table, method="fleiss"), rel=1e-10)
    assert got.low is not None and got.high is not None
    assert got.low < got.kappa < got.high
    assert got == fleiss_kappa(ratings)  # fixed seed
    # With two raters Fleiss' kappa is Scott's pi: check by hand on a small table.
    two = [[1, 1]] * 6 + [[0, 0]] * 2 + [[1, 0]] * 2
    shares = (14 / 20, 6 / 20)
    pe = shares[0] ** 2 + shares[1] ** 2
    assert fleiss_kappa(two).kappa == pytest.approx((0.8 - pe) / (1 - pe))
    with pytest.raises(StatisticsError, match="same number"):
        fleiss_kappa([[1, 1], [1, 1, 0]])


def test_classification_against_labels_by_hand_and_statsmodels() -> None:
    predicted = [True] * 30 + [True] * 5 + [False] * 10 + [False] * 5
    truth = [True] * 30 + [False] * 5 + [False] * 10 + [True] * 5
    got = classification(predicted, truth)
    assert (got.true_pass, got.false_pass, got.true_fail, got.false_fail) == (30, 5, 10, 5)
    assert got.accuracy.estimate == pytest.approx(40 / 50)
    assert got.precision is not None and got.recall is not None
    assert got.precision.estimate == pytest.approx(30 / 35)
    assert got.recall.estimate == pytest.approx(30 / 35)
    low, high = proportion_confint(30, 35, method="wilson")
    assert (got.precision.low, got.precision.high) == (pytest.approx(low), pytest.approx(high))
    low, high = proportion_confint(40, 50, method="wilson")
    assert (got.accuracy.low, got.accuracy.high) == (pytest.approx(low), pytest.approx(high))
    assert classification([False, False], [False, False]).precision is None


def test_end_of_run_table_gives_the_clustered_interval_of_each_pair() -> None:
    from _support.factories import make_result

    from verifleet.orchestrator._local.tally import PassRateTally

    values, labels = _clustered_verdicts(12, 3, seed=9)
    tally = PassRateTally()
    for i, (value, label) in enumerate(zip(values, labels, strict=True)):
        tally.add(make_result(label, replicate=i % 3 + 1, verified=value == 1.0))
    tally.add(make_result("q-error", error="boom", verified=None))  # no verdict: left out
    (counts,) = tally.pairs.values()
    interval = counts.interval()
    assert interval is not None and interval.method == "clustered"
    expected = clustered_mean(values, labels, bounds=(0.0, 1.0))
    assert (interval.low, interval.high) == (
        pytest.approx(expected.low),
        pytest.approx(expected.high),
    )
    assert "95% CI" in [column.header for column in tally.table().columns]
    # One verdict per question: Wilson's interval.
    single = PassRateTally()
    for q in range(5):
        single.add(make_result(f"q{q}", verified=q < 4))
    (counts,) = single.pairs.values()
    assert counts.interval() == wilson(4, 5)
