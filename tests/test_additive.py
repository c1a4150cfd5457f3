"""The additive kernel (Duvenaud 2014, ch. 6), its dropout reading, the gp/additive family and the ch. 6 data.

Exact references: the elementary symmetric polynomials by brute-force enumeration of all subsets (eqs. 6.6,
6.9-6.13); the first-order kernel as a sum of SE kernels built with the kernel algebra; the order-D term as SE-ARD
(6.8); the derivative identity (6.15) by enumeration; the dropout mixture by Monte Carlo, with tolerances from its
standard error.
"""

from itertools import combinations
from math import comb

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import inference
import zoo
from zoo import additive, gp, kernels
from zoo.data import additive_benchmarks as bench
from zoo.errors import DataError, OptionError
from zoo.kernels import SE, Additive, KernelError
from zoo.kernels import additive as add


def points(n, D, seed=0):
    return np.random.default_rng(seed).normal(size=(n, D))


def base_values(D, seed=0):
    """Base-kernel values k_d(x_d, x'_d) (D, 6, 5) of SE bases at random points: entries in (0, 1]."""
    rng = np.random.default_rng(seed)
    k = Additive(lengthscale=jnp.asarray(rng.uniform(0.3, 2.0, D)), max_order=1)
    return np.asarray(k.base_grams(jnp.asarray(points(6, D, seed)), jnp.asarray(points(5, D, seed + 1))))


@pytest.mark.parametrize("D", [1, 2, 3, 5, 8])
def test_newton_girard_equals_recursion_equals_subsets(D):
    """Base-kernel values of nearby points (in [0.2, 1], where no order's terms nearly cancel): both algorithms
    equal the subset sum to rtol 1e-10."""
    ks = np.random.default_rng(D).uniform(0.2, 1.0, (D, 6, 5))
    reference = add.esp_brute_force(ks, D)
    np.testing.assert_allclose(np.asarray(add.esp_recursion(ks, D)), reference, rtol=1e-10, atol=0)
    np.testing.assert_allclose(np.asarray(add.esp_newton_girard(ks, D)), reference, rtol=1e-10, atol=0)
    # A lower maximum order computes the same leading polynomials.
    low = max(1, D // 2)
    np.testing.assert_allclose(np.asarray(add.esp_recursion(ks, low)), reference[: low + 1], rtol=1e-10)


@pytest.mark.parametrize("D", [2, 5, 8])
def test_recursion_is_exact_where_newton_girard_cancels(D):
    """SE values of points far apart span many decades. The recursion adds non-negative terms only and keeps rtol
    1e-10 on every entry; Newton-Girard's alternating sums lose digits relative to e_n. Its error is bounded by a
    few eps times the largest term it sums, s_1^n (bound 100 eps s_1^n), and on these values its relative error on
    the smallest entries exceeds 1e-10: why the recursion is the kernel's default."""
    ks = base_values(D, seed=D)
    reference = add.esp_brute_force(ks, D)
    np.testing.assert_allclose(np.asarray(add.esp_recursion(ks, D)), reference, rtol=1e-10, atol=0)
    ng = np.asarray(add.esp_newton_girard(ks, D))
    scale = np.stack([ks.sum(0) ** n for n in range(D + 1)])
    assert np.all(np.abs(ng - reference) <= 100 * np.finfo(float).eps * scale)
    if D >= 5:
        assert np.max(np.abs(ng - reference) / reference) > 1e-10


def test_gram_by_both_methods_equals_the_weighted_subset_sum():
    D, R = 6, 4
    rng = np.random.default_rng(1)
    lengthscale, variance = rng.uniform(0.5, 2.0, D), rng.uniform(0.1, 1.0, R)
    X1, X2 = points(7, D, 2), points(4, D, 3)
    reference = np.zeros((7, 4))
    for n in range(1, R + 1):
        for subset in combinations(range(D), n):
            term = SE(variance=1.0, lengthscale=lengthscale[list(subset)]).on(list(subset))
            reference += variance[n - 1] * np.asarray(term(X1, X2))
    for method in add.METHODS:
        k = Additive(jnp.asarray(lengthscale), jnp.asarray(variance), max_order=R, method=method)
        np.testing.assert_allclose(np.asarray(k(X1, X2)), reference, rtol=1e-10)
    k = Additive(jnp.asarray(lengthscale), jnp.asarray(variance), max_order=R)
    np.testing.assert_allclose(np.asarray(k.diag(X1)), np.diag(np.asarray(k(X1))), rtol=1e-12)


def test_first_order_is_a_sum_of_se_kernels_and_order_d_is_se_ard():
    D = 5
    lengthscale = np.array([0.5, 1.0, 1.5, 2.0, 3.0])
    X = points(9, D, 4)
    first = Additive(jnp.asarray(lengthscale), 0.7, max_order=1)
    algebra = sum(SE(variance=0.7, lengthscale=lengthscale[d]).on(d) for d in range(D))
    np.testing.assert_allclose(np.asarray(first(X)), np.asarray(algebra(X)), rtol=1e-12)
    only_top = Additive(jnp.asarray(lengthscale), jnp.array([0.0, 0.0, 0.0, 0.0, 1.3]), max_order=D)
    np.testing.assert_allclose(
        np.asarray(only_top(X)), np.asarray(SE(variance=1.3, lengthscale=jnp.asarray(lengthscale))(X)), rtol=1e-12
    )


def test_derivative_with_respect_to_a_base_kernel_is_e_n_minus_1_of_the_others():
    """Eq. 6.15: d e_n / d k_j = e_{n-1}(k without k_j), here through autodiff of the recursion."""
    D = 6
    ks = jnp.asarray(np.random.default_rng(5).uniform(0.1, 1.0, D))
    jac = np.asarray(jax.jacfwd(lambda k: add.esp_recursion(k, D))(ks))  # (D + 1, D)
    for j in range(D):
        others = np.delete(np.asarray(ks), j)
        np.testing.assert_allclose(jac[1:, j], add.esp_brute_force(others, D - 1), rtol=1e-10)


def test_additive_is_a_kernel_value_under_algebra_jit_grad_and_sample_sites():
    D, R = 3, 2
    X = points(6, D, 6)
    k = Additive(jnp.ones(D), jnp.array([0.5, 0.2]), max_order=R)
    np.testing.assert_allclose(np.asarray((k + SE())(X)), np.asarray(k(X) + SE()(X)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray((2.0 * k)(X)), 2.0 * np.asarray(k(X)), rtol=1e-12)
    total = jax.jit(lambda kern: jnp.sum(kern(X)))
    np.testing.assert_allclose(float(total(k)), float(jnp.sum(k(X))), rtol=1e-12)
    grads = jax.grad(lambda kern: jnp.sum(kern(X)))(k)
    assert grads.variance.shape == (R,) and grads.lengthscale.shape == (D,)
    # The gradient in sigma_n^2 is the sum of the order-n Gram.
    e = np.asarray(k.order_grams(X)) / np.array([0.5, 0.2])[:, None, None]
    np.testing.assert_allclose(np.asarray(grads.variance), e.sum((1, 2)), rtol=1e-10)
    sites = kernels.site_names(k)
    assert sites == ["lengthscale", "variance"]
    assert kernels.num_params(k, D) == D + R
    trace = numpyro.handlers.trace(numpyro.handlers.seed(lambda: kernels.sample_sites(k, D), 0)).get_trace()
    assert trace["lengthscale"]["value"].shape == (D,) and trace["variance"]["value"].shape == (R,)


def test_dropout_weights_are_the_exact_mixture_covariance():
    D, keep = 5, 0.3
    ks = base_values(D, seed=7)
    e = add.esp_brute_force(ks, D)
    weights = add.dropout_order_weights(D, keep)
    np.testing.assert_allclose(
        np.asarray(add.dropout_covariance(ks, keep)), np.tensordot(weights, e, axes=1), rtol=1e-12
    )
    # At p = 1/2 the weights are the thesis's 2^-D for every order (6.23).
    np.testing.assert_allclose(add.dropout_order_weights(D, 0.5), np.full(D + 1, 2.0**-D), rtol=1e-14)


def test_dropout_by_monte_carlo_matches_the_corrected_weights_not_the_printed_ones():
    """Simulate dropout on the inputs (6.21): r_d ~ Ber(p) kept, then (f(x), f(x')) ~ N(0, [prod_d k_d^{r_d}]) at two
    points; the sample mean of f(x) f(x') estimates the mixture's covariance. Tolerance: 4.5 Monte Carlo standard
    errors (sample sd / sqrt(M)); a false alarm has probability < 1e-5."""
    D, keep, M = 4, 0.25, 200_000
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, D))
    k = Additive(jnp.full(D, 0.8), max_order=1)
    ks = np.asarray(k.base_grams(jnp.asarray(x), jnp.asarray(x)))  # (D, 2, 2), unit diagonal
    r = rng.random((M, D)) < keep
    cross = np.prod(np.where(r, ks[None, :, 0, 1], 1.0), axis=1)  # prod_d k_d(x, x')^{r_d}; the variances are 1
    z1, z2 = rng.normal(size=(2, M))
    f1, f2 = z1, cross * z1 + np.sqrt(1.0 - cross**2) * z2
    products = f1 * f2
    estimate, se = products.mean(), products.std() / np.sqrt(M)
    exact = float(add.dropout_covariance(ks[:, 0, 1], keep))
    assert abs(estimate - exact) < 4.5 * se
    e = add.esp_brute_force(ks[:, 0, 1], D)
    printed = float(add.printed_dropout_weights(D) @ e)
    assert abs(estimate - printed) > 10 * se


def test_order_variance_shares():
    shares = add.order_variance_shares([1.0, 0.0, 0.5], D=3)
    np.testing.assert_allclose(shares, np.array([3.0, 0.0, 0.5]) / 3.5)


def test_bad_input():
    with pytest.raises(OptionError):
        zoo.get("gp/additive", max_order=0)
    with pytest.raises(KernelError):
        Additive(max_order=0)
    with pytest.raises(KernelError):
        Additive(max_order=4)(points(3, 3))
    with pytest.raises(KernelError):
        Additive(base="Per")
    with pytest.raises(KernelError):
        add.dropout_order_weights(3, 1.5)
    X = points(10, 3)
    with pytest.raises(DataError, match="max_order 4 exceeds"):
        inference.run(zoo.get("gp/additive", max_order=4), {"X": X, "y": X[:, 0]}, engine="ml2")
    X[:, 1] = 2.0
    with pytest.raises(DataError, match="constant"):
        bench.standardise(X, X[:, 0])
    # gp/additive called directly (not through the loader): refused in validate, before anything is traced
    with pytest.raises(DataError, match=r"column\(s\) \[1\] of X are constant"):
        inference.run(zoo.get("gp/additive"), {"X": X, "y": X[:, 0]}, engine="ml2")
    X[:, 1] += 1e-15 * np.arange(10)  # rounding-level spread is still constant; a real one is not
    assert additive.constant_columns(X) == [1]
    assert additive.constant_columns(points(10, 3)) == []


def test_data_sets_and_splits():
    X, y = bench.bach(seed=0)
    assert X.shape == (200, 8) and np.isfinite(y).all()
    # The target is the unit-sd pairwise sum plus N(0, 0.2^2): its sd is sqrt(1 + 0.04) up to sampling error.
    assert abs(y.std() - np.sqrt(1.04)) < 0.15
    splits = bench.random_splits(50, 3, seed=1)
    for train, test in splits:
        assert len(test) == 5 and len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == 50


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(12, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=12)
    return {"X": X, "y": y}


def test_ml2_reaches_the_evidence_it_reports(tiny):
    spec = zoo.get("gp/additive")
    fit = inference.run(spec, tiny, engine="ml2", init=additive.initial_values(2), num_steps=100)
    kernel, mean, noise = additive.fitted(fit.point_estimates.isel(chain=0))
    assert kernel.max_order == 2
    direct = gp.log_marginal_likelihood(kernel, jnp.asarray(tiny["X"]), jnp.asarray(tiny["y"]), noise, mean)
    np.testing.assert_allclose(float(fit.point_estimates["log_likelihood"][0]), float(direct), rtol=1e-10)
    start, _, _ = additive.fitted(additive.initial_values(2))
    at_start = gp.log_marginal_likelihood(start, jnp.asarray(tiny["X"]), jnp.asarray(tiny["y"]), np.exp(-2.0), 0.0)
    assert float(direct) > float(at_start)


# SVI here runs with the slow tests: the additive program's density and gradient run under NUTS (this test) and
# ml2 (above), and SVI on a collapsed GP program in tests/test_hyperposterior.py (docs/performance.md#test-suite).
@pytest.mark.parametrize(
    "engine, options",
    [("nuts", {"num_warmup": 30, "num_samples": 20}), pytest.param("svi", {"num_steps": 50}, marks=pytest.mark.slow)],
)
def test_sampling_and_variational_engines_run(tiny, engine, options):
    result = inference.run(zoo.get("gp/additive", max_order=1), tiny, engine=engine, num_chains=1, **options)
    draws = result.posterior
    assert draws["variance"].shape[-1] == 1 and draws["lengthscale"].shape[-1] == 2
    assert all(np.isfinite(draws[name].values).all() for name in ("variance", "lengthscale", "mean", "noise"))


def test_first_order_binomial_counts():
    k = Additive(jnp.ones(4), jnp.ones(4), max_order=4)
    assert float(k.diag(points(1, 4))[0]) == sum(comb(4, n) for n in range(1, 5))


def test_table_bolding_follows_the_paired_t_test():
    from paper_figures.duvenaud_additive_tables import bold_set, scores

    base = np.random.default_rng(10).normal(1.0, 0.1, 10)
    wiggle = 0.02 * (-1.0) ** np.arange(10)  # paired differences of mean 0 (c) or 0.5 (b), sd 0.02
    per_split = {"a": base, "b": base + 0.5 + wiggle, "c": base + wiggle}
    assert bold_set(per_split) == {"a", "c"}
    # The mean negative log density of N(0, 1) at y = 0 is log(2 pi) / 2.
    mse, nll = scores(np.zeros(3), np.ones(3), np.zeros(3))
    assert mse == 0.0 and abs(nll - 0.5 * np.log(2 * np.pi)) < 1e-12


def test_least_squares_baseline_and_the_companion_codes_nll():
    """The thesis's linear baseline (least squares, ML noise variance) and its NLL convention: the Gaussian's log
    normaliser counted twice (docs/sources/duvenaud.md#linear-nll). References: the normal equations and
    scipy's normal log density."""
    from scipy import stats

    from paper_figures.duvenaud_additive_tables import companion_nll, least_squares, scores

    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([0.5, -1.0, 0.2]) + 0.3 * rng.normal(size=40)
    prediction, s2 = least_squares(X[:30], y[:30], X[30:])
    weights = np.linalg.solve(X[:30].T @ X[:30], X[:30].T @ y[:30])
    np.testing.assert_allclose(prediction, X[30:] @ weights, rtol=1e-10)
    np.testing.assert_allclose(s2, np.mean((y[:30] - X[:30] @ weights) ** 2), rtol=1e-10)
    _, nll = scores(prediction, np.full(10, s2), y[30:])
    np.testing.assert_allclose(nll, -np.mean(stats.norm.logpdf(y[30:], prediction, np.sqrt(s2))), rtol=1e-12)
    np.testing.assert_allclose(companion_nll(prediction, s2, y[30:]), nll + 0.5 * np.log(2 * np.pi * s2), rtol=1e-12)


def test_table_rows_of_the_structure_search():
    """The search's predictions, made in its standardised units, equal those of its best model in the data's units
    (SearchResult.kernel / noise / mean, one input column); its table row is bolded with the ML-II rows only when it
    ran on their splits (a paired test needs the same splits)."""
    from inference.applications.structure_search import search
    from paper_figures.duvenaud_additive_tables import fit_search, summarise

    rng = np.random.default_rng(12)
    X = np.sort(rng.uniform(0.0, 10.0, (30, 1)), axis=0)  # one column: a series, increasing
    y = 3.0 + 2.0 * np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    settings = {"search_depth": 1, "restarts": 1, "steps": 30}
    predict, expression = fit_search(X, y, settings, seed=0)
    result = search(X, y, depth=1, base=("SE", "RQ"), restarts=1, num_steps=30, seed=0)
    assert expression == result.best.expression
    X_new = np.linspace(-1.0, 11.0, 7)[:, None]
    post = gp.predict(result.kernel, jnp.asarray(X), jnp.asarray(y - result.mean), result.noise, X_new, False)
    mean, var = predict(X_new)
    np.testing.assert_allclose(mean, result.mean + post.mean, rtol=1e-8)
    np.testing.assert_allclose(var, post.cov + result.noise, rtol=1e-8)

    def rows(method, splits, shift):
        wiggle = 0.02 * (-1.0) ** np.arange(4) * (method == "structure_search")  # paired differences of sd 0.02
        return [{"dataset": "bach", "split": s, "method": method, "mse": shift + wiggle[s], "nll": 0.0} for s in splits]

    fitted = [r for m in ("linear", "gp_1st", "se_ard", "additive") for r in rows(m, range(4), 0.5)]
    paired = {(s["method"], s["bold"]) for s in summarise(fitted + rows("structure_search", range(4), 0.0))}
    assert ("structure_search", True) in paired and ("additive", False) in paired
    unpaired = {(s["method"], s["bold"]) for s in summarise(fitted + rows("structure_search", range(2), 0.0))}
    assert ("structure_search", False) in unpaired and ("additive", True) in unpaired
