"""Moment matching (zoo/moments.py) against 10^6-sample Monte Carlo, the plain GP predictive and finite differences.

Monte Carlo: draw x ~ N(mu, Sigma) and evaluate the GP predictive mean m(x) and variance s(x) at every draw. By the
law of total variance E[f] = E[m(x)], Cov[f] = Cov[m(x)] + diag E[s(x)] and Cov[x, f] = Cov[x, m(x)], so each moment
is the mean of a per-draw quantity h; its Monte Carlo standard error is std(h) / sqrt(n). We require
|analytic - MC| < 5 MCSE for every entry (a two-sided 5-sigma band: false alarms ~6e-7 per entry).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import zoo  # noqa: F401  (float64)
from zoo import gp
from zoo import moments as mm
from zoo.errors import DataError
from zoo.kernels import SquaredExponential

N_MC = 1_000_000
CHUNKS = 50


def random_problem(key, n_in, n_out, n_train=15, sparse=False, n_control=0):
    """A random GP predictor (exact, or sparse with a random q(u)) and a random Gaussian input."""
    k = jax.random.split(key, 8)
    X = 1.5 * jax.random.normal(k[0], (n_train, n_in))
    variance = jnp.exp(0.5 * jax.random.normal(k[1], (n_out,)))
    lengthscale = jnp.exp(0.3 * jax.random.normal(k[2], (n_out, n_in))) * jnp.sqrt(n_in)
    if sparse:
        u_mean = jax.random.normal(k[3], (n_out, n_train))
        u_sqrt = jnp.tril(0.3 * jax.random.normal(k[4], (n_out, n_train, n_train)))
        predictor = mm.sparse_gp_predictor(X, u_mean, u_sqrt, variance, lengthscale, whitened=True)
    else:
        Y = jax.random.normal(k[3], (n_train, n_out))
        noise = jnp.exp(-2.0 + 0.5 * jax.random.normal(k[4], (n_out,)))
        predictor = mm.exact_gp_predictor(X, Y, variance, lengthscale, noise)
    mu = jax.random.normal(k[5], (n_in,))
    F = 0.6 * jax.random.normal(k[6], (n_in, n_in))
    Sigma = F @ F.T + 0.05 * jnp.eye(n_in)
    mean_fn = mm.identity_mean(n_in - n_control, n_control) if n_control else None
    return predictor, mu, Sigma, mean_fn


@jax.jit
def monte_carlo_moments(key, predictor, mu, Sigma, mean_fn):
    """Per-moment MC estimates and standard errors (dicts of arrays)."""
    n_in = mu.shape[0]
    x = mu + jax.random.normal(key, (N_MC, n_in)) @ jnp.linalg.cholesky(Sigma).T
    point = jax.vmap(lambda xi: mm.predict_point(predictor, xi, mean_fn))
    means, variances = jax.lax.map(point, x.reshape(CHUNKS, N_MC // CHUNKS, n_in))
    means = means.reshape(N_MC, -1)
    variances = variances.reshape(N_MC, -1)
    dm = means - means.mean(0)
    dx = x - x.mean(0)
    h_cov = dm[:, :, None] * dm[:, None, :] + jax.vmap(jnp.diag)(variances)
    h_io = dx[:, :, None] * dm[:, None, :]
    sqrt_n = jnp.sqrt(N_MC)
    return {
        "mean": (means.mean(0), means.std(0) / sqrt_n),
        "cov": (h_cov.mean(0), h_cov.std(0) / sqrt_n),
        "input_output": (h_io.mean(0), h_io.std(0) / sqrt_n),
    }


CASES = [
    # (n_in, n_out, sparse, n_control); the default pair covers D_in = 5, D_out = 4, the identity mean with a
    # control concatenated to a 4-D state, and a sparse (pseudo-point) predictor.
    (5, 4, False, 1),
    (4, 4, True, 0),
    pytest.param(1, 1, False, 0, marks=pytest.mark.slow),
    pytest.param(5, 4, False, 0, marks=pytest.mark.slow),
    pytest.param(5, 3, False, 2, marks=pytest.mark.slow),
    pytest.param(2, 3, False, 0, marks=pytest.mark.slow),
    pytest.param(3, 2, True, 0, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("n_in,n_out,sparse,n_control", CASES)
def test_moments_match_monte_carlo(n_in, n_out, sparse, n_control):
    key = jax.random.PRNGKey(10 * n_in + n_out + 100 * sparse)
    predictor, mu, Sigma, mean_fn = random_problem(key, n_in, n_out, sparse=sparse, n_control=n_control)
    mm.check_gaussian_input(predictor, mu, Sigma)
    analytic = jax.jit(mm.predict_moments)(predictor, mu, Sigma, mean_fn)
    mc = monte_carlo_moments(jax.random.fold_in(key, 1), predictor, mu, Sigma, mean_fn)
    for name, (estimate, mcse) in mc.items():
        err = np.abs(np.asarray(getattr(analytic, name)) - np.asarray(estimate))
        z = err / np.asarray(mcse)
        assert np.all(z < 5.0), (
            f"{name}: max |err|/MCSE = {z.max():.2f}\nanalytic {getattr(analytic, name)}\nmc {estimate}"
        )


@pytest.mark.parametrize("n_in,n_out", [(1, 1), pytest.param(3, 2, marks=pytest.mark.slow), (5, 4)])
def test_zero_input_covariance_is_plain_gp(n_in, n_out):
    predictor, mu, _, _ = random_problem(jax.random.PRNGKey(n_in), n_in, n_out)
    out = mm.predict_moments(predictor, mu, jnp.zeros((n_in, n_in)))
    # The same data through zoo.gp.predict, output by output.
    key = jax.random.split(jax.random.PRNGKey(n_in), 8)
    X = 1.5 * jax.random.normal(key[0], (15, n_in))
    Y = jax.random.normal(key[3], (15, n_out))
    noise = jnp.exp(-2.0 + 0.5 * jax.random.normal(key[4], (n_out,)))
    for a in range(n_out):
        kernel = SquaredExponential(predictor.variance[a], predictor.lengthscale[a])
        # the predictor factorises K + s2 I with gp.cholesky's jitter (1e-6 x mean diagonal); gp.predict adds none
        ref = gp.predict(kernel, X, Y[:, a], noise[a] + gp.JITTER * (predictor.variance[a] + noise[a]), mu[None, :])
        np.testing.assert_allclose(out.mean[a], ref.mean[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out.cov[a, a], ref.cov[0, 0], rtol=1e-9, atol=1e-12)
    off_diag = out.cov - jnp.diag(jnp.diagonal(out.cov))
    np.testing.assert_allclose(off_diag, 0.0, atol=1e-12)
    np.testing.assert_array_equal(out.input_output, 0.0)


def test_zero_input_covariance_sparse_matches_direct_formula():
    """Sparse predictor at Sigma = 0 vs the textbook q(u) predictive written with dense solves."""
    predictor, mu, _, _ = random_problem(jax.random.PRNGKey(3), 3, 2, sparse=True)
    out = mm.predict_moments(predictor, mu, jnp.zeros((3, 3)))
    k = jax.random.split(jax.random.PRNGKey(3), 8)
    u_mean = jax.random.normal(k[3], (2, 15))
    u_sqrt = jnp.tril(0.3 * jax.random.normal(k[4], (2, 15, 15)))
    for a in range(2):
        kern = SquaredExponential(predictor.variance[a], predictor.lengthscale[a])
        Z = predictor.inputs[a]
        Lz = gp.cholesky(kern(Z))
        kzx = kern(Z, mu[None, :])[:, 0]
        a_vec = jnp.linalg.solve(Lz, kzx)  # Lz^{-1} k (whitened projection)
        mean = a_vec @ u_mean[a]
        S = u_sqrt[a] @ u_sqrt[a].T
        var = predictor.variance[a] - a_vec @ a_vec + a_vec @ S @ a_vec
        np.testing.assert_allclose(out.mean[a], mean, rtol=1e-10)
        np.testing.assert_allclose(out.cov[a, a], var, rtol=1e-9)


def test_batched_matches_loop():
    predictor, mu, Sigma, _ = random_problem(jax.random.PRNGKey(7), 2, 2)
    mus = jnp.stack([mu, mu + 0.5, mu - 1.0])
    Sigmas = jnp.stack([Sigma, 2 * Sigma, 0.5 * Sigma])
    batch = jax.jit(mm.predict_moments_batch)(predictor, mus, Sigmas)
    single_fn = jax.jit(mm.predict_moments)
    for i in range(3):
        single = single_fn(predictor, mus[i], Sigmas[i])
        np.testing.assert_allclose(batch.cov[i], single.cov, rtol=1e-12)


def test_gradients_match_finite_differences():
    """Reverse-mode gradients of all moments w.r.t. the input mean, input covariance and lengthscales."""
    k = jax.random.split(jax.random.PRNGKey(5), 4)
    X = jax.random.normal(k[0], (8, 2))
    Y = jax.random.normal(k[1], (8, 2))

    def moments(mu, F, log_ell):
        predictor = mm.exact_gp_predictor(X, Y, jnp.array([1.0, 0.7]), jnp.exp(log_ell), 0.1)
        out = mm.predict_moments(predictor, mu, F @ F.T + 0.01 * jnp.eye(2), mm.linear_mean(0.3 * jnp.ones((2, 2))))
        return out.mean, out.cov, out.input_output

    args = (jnp.array([0.3, -0.2]), jnp.array([[0.5, 0.0], [0.2, 0.4]]), jnp.zeros((2, 2)))
    check_grads(jax.jit(moments), args, order=1, modes=("rev",), eps=1e-5, atol=1e-6, rtol=1e-6)


def test_input_output_gain():
    predictor, mu, Sigma, _ = random_problem(jax.random.PRNGKey(2), 3, 2)
    out = mm.predict_moments(predictor, mu, Sigma)
    np.testing.assert_allclose(Sigma @ mm.input_output_gain(out, Sigma), out.input_output, atol=1e-12)


def test_join_state_control_known_control():
    mu, Sigma = mm.join_state_control(jnp.ones(2), jnp.eye(2), jnp.array([3.0]))
    np.testing.assert_array_equal(mu, [1.0, 1.0, 3.0])
    np.testing.assert_array_equal(Sigma, jnp.diag(jnp.array([1.0, 1.0, 0.0])))


def test_bad_input_raises():
    predictor, mu, Sigma, _ = random_problem(jax.random.PRNGKey(1), 3, 2)
    with pytest.raises(DataError, match="positive semi-definite"):
        mm.check_gaussian_input(predictor, mu, Sigma - 10.0 * jnp.eye(3))
    with pytest.raises(DataError, match="match"):
        mm.check_gaussian_input(predictor, mu[:2], Sigma[:2, :2])
    with pytest.raises(DataError, match="symmetric"):
        mm.check_gaussian_input(predictor, mu, Sigma + jnp.triu(jnp.ones((3, 3)), 1))
    with pytest.raises(DataError, match="NaN"):
        mm.check_gaussian_input(predictor, mu.at[0].set(jnp.nan), Sigma)
    with pytest.raises(DataError, match=r"\(N, E\)"):
        mm.exact_gp_predictor(jnp.zeros((5, 2)), jnp.zeros((4, 1)), 1.0, 1.0, 0.1)
