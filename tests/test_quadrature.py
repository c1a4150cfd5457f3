"""Bayesian quadrature (zoo/quadrature.py; Duvenaud 2014, ch. 8): every closed form against dense Gauss-Hermite
quadrature of the function it integrates (1e-8; the integrands are entire, and 80 nodes per dimension integrate them
to ~1e-14), and the variance's behaviour as nodes are added."""

import jax.numpy as jnp
import numpy as np
import pytest

from zoo import errors as zoo_errors
from zoo import gp
from zoo import kernels as K
from zoo import quadrature as bq

TOL = 1e-8


def hermite(mean, cov, n=80):
    """Nodes (m, D) and weights (m,) of tensor Gauss-Hermite quadrature for N(mean, cov)."""
    mean = np.atleast_1d(mean)
    t, w = np.polynomial.hermite.hermgauss(n)
    D = mean.size
    T = np.stack(np.meshgrid(*[t] * D, indexing="ij"), -1).reshape(-1, D)
    W = np.prod(np.stack(np.meshgrid(*[w] * D, indexing="ij"), -1).reshape(-1, D), 1) / np.pi ** (D / 2)
    L = np.linalg.cholesky(np.atleast_2d(cov))
    return mean + np.sqrt(2.0) * T @ L.T, W


def mixture_nodes(measure, n=80):
    nodes, weights = [], []
    for a, m, C in zip(*(np.asarray(v) for v in measure), strict=True):
        x, w = hermite(m, C, n)
        nodes.append(x)
        weights.append(a * w)
    return np.concatenate(nodes), np.concatenate(weights)


@pytest.fixture(scope="module")
def problem_1d():
    kernel = K.SE(variance=1.3, lengthscale=0.6)
    X = np.linspace(-2.0, 2.5, 7)[:, None]
    y = np.sin(3 * X[:, 0]) + X[:, 0] ** 2
    measure = bq.gaussian(0.3, 0.8)
    return kernel, X, y, measure


def test_mean_and_variance_equal_quadrature_of_the_posterior(problem_1d):
    kernel, X, y, measure = problem_1d
    for noise in (0.0, 1e-3):
        result = bq.integral_posterior(kernel, measure, X, y, noise=noise)
        assert float(result.jitter) == 0.0
        nodes, w = hermite(0.3, 0.8)
        post = gp.predict(kernel, X, y, noise, nodes)
        assert float(result.mean) == pytest.approx(float(w @ post.mean), abs=TOL)  # int m(x) p(x) dx
        assert float(result.var) == pytest.approx(float(w @ post.cov @ w), abs=TOL)  # iint Cov p p
    # a constant prior mean mu: E[Z] = mu + z^T K^-1 (y - mu) (8.33)
    shifted = bq.integral_posterior(kernel, measure, X, y, prior_mean=2.0)
    post = gp.predict(kernel, X, y - 2.0, 0.0, nodes)
    assert float(shifted.mean) == pytest.approx(2.0 + float(w @ post.mean), abs=TOL)


def test_two_dimensional_mixture_measure():
    kernel = K.SE(variance=0.7, lengthscale=np.array([0.8, 1.4]))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 2))
    y = np.cos(X[:, 0]) * X[:, 1]
    cov = np.array([[0.6, 0.2], [0.2, 0.9]])
    measure = bq.Mixture(
        jnp.array([0.3, 0.7]), jnp.array([[0.0, 0.5], [-1.0, 0.2]]), jnp.stack([jnp.asarray(cov), 0.4 * jnp.eye(2)])
    )
    nodes, w = mixture_nodes(measure, n=40)
    np.testing.assert_allclose(bq.kernel_mean(kernel, measure, X), w @ np.asarray(kernel(nodes, X)), atol=TOL)
    assert float(bq.prior_variance(kernel, measure)) == pytest.approx(float(w @ kernel(nodes) @ w), abs=TOL)
    result = bq.integral_posterior(kernel, measure, X, y, noise=1e-6)
    post = gp.predict(kernel, X, y, 1e-6, nodes)
    assert float(result.mean) == pytest.approx(float(w @ post.mean), abs=TOL)
    assert float(result.var) == pytest.approx(float(w @ post.cov @ w), abs=TOL)
    # w = l_bar p as a mixture (the log-GP's measure, 8.49): its kernel means are int k(x, X) l_bar(x) p(x) dx
    ell, cands, beta = K.SE(lengthscale=np.array([0.5, 0.7])), rng.normal(size=(4, 2)), rng.normal(size=4)
    weighted = bq.weighted_measure(ell, cands, jnp.asarray(beta), 0.3, measure)
    ell_bar = 0.3 + np.asarray(ell(nodes, cands)) @ beta
    np.testing.assert_allclose(
        bq.kernel_mean(kernel, weighted, X), (w * ell_bar) @ np.asarray(kernel(nodes, X)), atol=TOL
    )


def test_variance_shrinks_and_greedy_design_takes_the_largest_reduction(problem_1d):
    kernel, _, _, measure = problem_1d
    candidates = np.linspace(-4.0, 4.0, 81)[:, None]
    chosen = np.asarray(bq.greedy_design(kernel, measure, candidates, 8))
    # V[Z | first n chosen] recomputed densely (NumPy) from the candidates' Gram and kernel means
    Kc, zc = np.asarray(kernel(candidates)), np.asarray(bq.kernel_mean(kernel, measure, candidates))
    variances = [float(bq.prior_variance(kernel, measure))]
    for n in range(1, 9):
        idx = chosen[:n]
        variances.append(variances[0] - zc[idx] @ np.linalg.solve(Kc[np.ix_(idx, idx)], zc[idx]))
    assert np.all(np.diff(variances) < 0)  # every node shrinks V[Z]
    assert len(set(chosen.tolist())) == 8
    continued = bq.greedy_design(kernel, measure, candidates, 5, X=candidates[chosen[:3]])  # from given nodes
    np.testing.assert_array_equal(continued, chosen[3:])
    # the rank-one reduction of variance_reduction equals the recomputed one, and the design took the largest
    gain = np.asarray(bq.variance_reduction(kernel, measure, candidates[chosen[:3]], candidates))
    assert gain[chosen[3]] == pytest.approx(variances[3] - variances[4], rel=1e-6)
    assert gain[chosen[3]] == pytest.approx(gain.max(), rel=1e-9)


def test_log_gp_integral_equals_quadrature_and_approaches_the_exact_expectation():
    log_kernel = K.SE(variance=4.0, lengthscale=0.7)
    X = np.array([-2.0, -1.0, -0.2, 0.5, 1.3, 2.2])[:, None]
    log_y = -0.5 * ((X[:, 0] - 0.4) / 0.5) ** 2  # log of a Gaussian-shaped likelihood
    measure = bq.gaussian(0.0, 1.0)
    candidates = np.linspace(-3.0, 3.0, 13)[:, None]
    result = bq.log_integral_posterior(log_kernel, measure, X, log_y, candidates, ell_mean=0.1)
    nodes, w = hermite(0.0, 1.0, 120)
    ell_bar = 0.1 + np.asarray(log_kernel(nodes, candidates)) @ np.asarray(result.beta)  # (8.28)
    assert float(result.mean) == pytest.approx(float(w @ ell_bar), abs=TOL)  # Z_0 (8.10)
    cov = np.asarray(gp.predict(log_kernel, X, log_y, 0.0, nodes).cov)
    assert float(result.var) == pytest.approx(float((w * ell_bar) @ cov @ (w * ell_bar)), abs=TOL)  # (8.49)
    # Z_0 -> E_GP[Z] = int exp(m + V/2) p dx as the candidates fill the domain (8.11)
    post = gp.predict(log_kernel, X, log_y, 0.0, nodes, full_cov=False)
    expected = float(w @ np.exp(np.asarray(post.mean) + 0.5 * np.asarray(post.cov)))
    errors = [
        abs(float(bq.log_integral_posterior(log_kernel, measure, X, log_y, np.linspace(-5, 5, m)[:, None]).mean)
            - expected)
        for m in (9, 33)
    ]  # fmt: skip
    assert errors[1] < errors[0] and errors[1] < 1e-3 * expected


def test_marginal_over_a_nuisance_input_equals_quadrature():
    kernel = K.SE(variance=1.1, lengthscale=np.array([0.7, 0.9]))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
    measure = bq.gaussian(0.2, 0.5)  # on the nuisance column 1
    x_new = np.linspace(-2, 2, 5)[:, None]
    result = bq.marginal_posterior(kernel, X, y, (0,), measure, x_new, noise=1e-4)
    t, w = hermite(0.2, 0.5)
    grid = np.array([[a, b] for a in x_new[:, 0] for b in t[:, 0]])  # (5 * 80, 2)
    post = gp.predict(kernel, X, y, 1e-4, grid)
    W = np.kron(np.eye(5), w[None, :])  # (5, 400): integrates the nuisance column at each x
    np.testing.assert_allclose(result.mean, W @ np.asarray(post.mean), atol=TOL)
    np.testing.assert_allclose(result.cov, W @ np.asarray(post.cov) @ W.T, atol=TOL)


def test_only_se_has_closed_form_kernel_means():
    with pytest.raises(K.KernelError, match="SE kernel"):
        bq.kernel_mean(K.M52(), bq.gaussian(0.0, 1.0), np.zeros((2, 1)))


def test_sequential_rejects_bad_schedules_before_fitting():
    from inference.applications.bayesian_quadrature import sequential

    pool = np.linspace(-3, 3, 7)[:, None]
    with pytest.raises(zoo_errors.OptionError, match="schedule must increase"):
        sequential(np.cos, bq.gaussian(0.0, 1.0), pool, [4, 4])
    with pytest.raises(zoo_errors.OptionError, match="the pool has 7"):
        sequential(np.cos, bq.gaussian(0.0, 1.0), pool, [4, 8])


@pytest.mark.slow
def test_sequential_bq_through_ml2_shrinks_its_variance_and_covers_the_truth():
    from inference.applications.bayesian_quadrature import sequential

    pool = np.linspace(-4.0, 4.0, 81)[:, None]
    steps = sequential(lambda X: np.cos(X[:, 0]), bq.gaussian(0.0, 1.0), pool, [4, 8])
    truth = np.exp(-0.5)  # E[cos x], x ~ N(0, 1)
    assert steps[1].sd < steps[0].sd
    assert all(abs(s.mean - truth) < 4 * s.sd for s in steps)
    assert len({float(x) for x in steps[1].nodes[:, 0]}) == 8
