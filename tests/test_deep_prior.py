"""Exact checks of the deep-GP prior draws (zoo.deep_prior, Duvenaud 2014 ch. 5).

Monte Carlo tolerances are 4 standard errors of the estimate, the standard error computed from the same sample: for
a mean sd / sqrt(n); for a variance sqrt((m4 - s^4) / n) with m4 the fourth central moment (the large-n variance of
the sample variance). At 4 SE a correct implementation fails one comparison in about 16 000; the printed forms are
shown to sit far outside (> 10 SE), so the checks can fail.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import zoo  # noqa: F401  (float64)
from zoo import deep_prior as dp

Z = 4.0  # standard errors allowed
DEPTH = 4
# sigma^2 / w^2 = pi / 2: E|f'| = 1 per layer (sec. 5.2.1)
VARIANCE, LENGTHSCALE = 1.0, float(np.sqrt(2.0 / np.pi))


def variance_and_se(samples):
    n = len(samples)
    centred = samples - samples.mean()
    s2 = np.mean(centred**2)
    return samples.var(ddof=1), np.sqrt((np.mean(centred**4) - s2**2) / n)


@pytest.fixture(scope="module")
def log_derivatives():
    """log|d f^(1:l)/dx| at x = 0 for l = 1..DEPTH, one value per draw (draws independent): (num_draws, DEPTH).
    Three points are sampled jointly with their derivatives, so the joint sampler and jitter are exercised."""
    x = jnp.array([[0.0], [0.7], [-1.5]])
    d = dp.draws(jax.random.PRNGKey(3), x, DEPTH, VARIANCE, LENGTHSCALE, 6000, with_jacobian=True)
    assert d.jacobians.shape == (6000, DEPTH, 3, 1, 1)
    return np.log(np.abs(np.asarray(d.jacobians[:, :, 0, 0, 0])))


def test_value_gradient_covariance_is_the_kernel_derivatives():
    z = jax.random.normal(jax.random.PRNGKey(1), (3, 2))
    variance, w = 1.3, 0.7

    def k(a, b):
        return variance * jnp.exp(-0.5 * jnp.sum((a - b) ** 2) / w**2)

    n, p = z.shape
    pairs = jax.vmap(jax.vmap(lambda f, a, b: f(a, b), (None, None, 0)), (None, 0, None))  # over a, then b
    kk = pairs(k, z, z)  # (n, n)
    dk_db = pairs(jax.grad(k, 1), z, z)  # (n, n, p)
    d2k = pairs(jax.jacfwd(jax.grad(k, 0), 1), z, z)  # (n, n, p, p)
    value_grad = np.asarray(dk_db).reshape(n, n * p)
    grad_grad = np.asarray(d2k).transpose(0, 2, 1, 3).reshape(n * p, n * p)
    ref = np.block([[kk, value_grad], [value_grad.T, grad_grad]])
    # cov(d_i f(a), f(b)) = dk/da_i is the transpose block, checked separately
    np.testing.assert_allclose(np.asarray(pairs(jax.grad(k, 0), z, z)).transpose(1, 0, 2).reshape(n, n * p), value_grad)
    np.testing.assert_allclose(dp.se_value_gradient_cov(z, variance, w), ref, rtol=1e-12, atol=1e-14)


def test_log_derivative_moments_match_the_corrected_closed_forms(log_derivatives):
    for depth in range(1, DEPTH + 1):
        sample = log_derivatives[:, depth - 1]
        mean, var = dp.log_abs_derivative_moments(VARIANCE, LENGTHSCALE, depth)
        se_mean = sample.std(ddof=1) / np.sqrt(len(sample))
        sample_var, se_var = variance_and_se(sample)
        assert abs(sample.mean() - mean) < Z * se_mean, (depth, sample.mean(), mean, se_mean)
        assert abs(sample_var - var) < Z * se_var, (depth, sample_var, var, se_var)
        printed_mean, printed_var = dp.printed_log_abs_derivative_moments(VARIANCE, LENGTHSCALE, depth)
        assert abs(sample.mean() - printed_mean) > 10 * se_mean
        assert abs(sample_var - printed_var) > 10 * se_var


def test_jacobian_norm_follows_the_product_recursions():
    """E||J^(1:L)||_F^2 for D = 3 at one point: standard (5.15) D (D s^2)^L; input-connected (5.17)
    a_l = D s^2 (a_{l-1} + D), a_1 = D^2 s^2, with s^2 = sigma^2 / w^2 the variance of each Jacobian entry (5.14)."""
    D, depth, n = 3, 5, 4000
    variance, w = 1.0, 1.6
    s2 = variance / w**2
    x = jnp.zeros((1, D))
    for connected in (False, True):
        d = dp.draws(jax.random.PRNGKey(7), x, depth, variance, w, n, connected=connected, with_jacobian=True)
        norms = np.sum(np.asarray(d.jacobians[:, :, 0]) ** 2, axis=(-2, -1))  # (n, depth)
        if connected:
            expected = [D * D * s2]
            for _ in range(depth - 1):
                expected.append(D * s2 * (expected[-1] + D))
        else:
            expected = [D * (D * s2) ** layer for layer in range(1, depth + 1)]
        se = norms.std(0, ddof=1) / np.sqrt(n)
        assert np.all(np.abs(norms.mean(0) - expected) < Z * se), (connected, norms.mean(0), expected, se)


def test_connected_kernel_limit_solves_5_23_and_is_the_limit_of_5_22():
    r = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 6.0])
    k = dp.connected_kernel_limit(r**2)
    np.testing.assert_allclose(k - np.log(k), 1.0 + 0.5 * r**2, rtol=1e-13)
    assert np.all((k > 0) & (k <= 1))
    np.testing.assert_allclose(dp.connected_deep_kernel(r[1:] ** 2, 400), k[1:], rtol=1e-10)
    # the values quoted in docs/sources/duvenaud.md#deep-kernel-limit, to their 4 digits
    np.testing.assert_allclose(k[1:6], [0.9033, 0.5796, 0.3017, 0.0525, 0.0041], atol=6e-5)


@pytest.mark.parametrize("depth", [1, None])  # one layer from SE, and the fixed point (depth infinity)
def test_sampled_connected_kernel_matches_5_22_and_the_lambert_w_limit(depth):
    x = np.array([[0.0], [0.1], [0.5], [1.0], [2.0], [3.0]])
    sq = (x - x.T) ** 2
    K = dp.connected_kernel_limit(sq) if depth is None else dp.connected_deep_kernel(sq, depth)
    expected = K if depth is None else dp.connected_deep_kernel(sq, depth + 1)
    sampled, se = dp.sampled_connected_kernel_step(jax.random.PRNGKey(11), K, x, 40000)
    off = ~np.eye(len(x), dtype=bool)
    assert np.all(np.abs(sampled - expected)[off] < Z * se[off]), np.max(np.abs(sampled - expected)[off] / se[off])
    # the printed sign of (5.22) (minus ||x - x'||^2) is rejected by the same samples
    printed = np.exp(-(1.0 - K) + 0.5 * sq)
    far = sq >= 0.25
    assert np.all(np.abs(sampled - printed)[far] > 10 * se[far])


def test_jitter_only_when_needed_and_recorded():
    A = np.array([[2.0, 0.3], [0.3, 1.0]])
    L, added = dp.cholesky_when_needed(jnp.asarray(A))
    assert float(added) == 0.0
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-14)
    # well-separated points: no jitter; a dense grid under a long lengthscale is singular in float64
    sparse = dp.draw(jax.random.PRNGKey(0), np.array([[-3.0], [3.0]]), 1, 1.0, 0.5)
    assert float(sparse.jitter[0]) == 0.0
    dense = dp.draw(jax.random.PRNGKey(0), np.linspace(-1, 1, 60)[:, None], 1, 1.0, 2.0)
    assert 0.0 < float(dense.jitter[0]) <= 1e-6
    assert np.all(np.isfinite(dense.layers))


@pytest.mark.parametrize(
    "x, depth, variance, lengthscale",
    [
        (np.zeros(3), 2, 1.0, 1.0),  # not (N, D)
        (np.zeros((3, 1)), 0, 1.0, 1.0),  # depth < 1
        (np.zeros((3, 1)), 2, -1.0, 1.0),  # negative variance
        (np.full((3, 1), np.nan), 2, 1.0, 1.0),
    ],
)
def test_bad_input_is_refused(x, depth, variance, lengthscale):
    with pytest.raises(dp.DeepPriorError):
        dp.draw(jax.random.PRNGKey(0), x, depth, variance, lengthscale)


@pytest.mark.parametrize("scale", [0.3, 1e-3, 1e-7])
def test_offset_features_give_the_centred_se_covariance(scale):
    """phi(a) . phi(b) = cov(f(a) - f(c), f(b) - f(c)) = expm1(-q_ab) - expm1(-q_a) - expm1(-q_b) for unit variance
    (a form without the 1 - k cancellation, so it is a reference at every scale); at scale 0.3 the value and gradient
    blocks also equal the Gram-based joint covariance of (5.13). Deterministic: rounding tolerances."""
    w = 1.3
    z = jnp.asarray(np.random.default_rng(0).normal(size=(6, 2)) * scale + 0.7)
    c = z.mean(0)
    exponents = dp.taylor_exponents(2)
    phi = jax.jit(jax.vmap(lambda d: dp.offset_features(d, w, exponents)))(z - c)
    q = lambda a, b: 0.5 * jnp.sum((a - b) ** 2, -1) / w**2  # noqa: E731
    reference = jnp.expm1(-q(z[:, None], z[None])) - jnp.expm1(-q(z, c))[:, None] - jnp.expm1(-q(z, c))[None, :]
    np.testing.assert_allclose(phi @ phi.T, reference, rtol=1e-9, atol=1e-15 * scale**2)
    if scale == 0.3:
        dphi = jax.jit(jax.vmap(jax.jacfwd(lambda d: dp.offset_features(d, w, exponents))))(z - c)
        full = np.asarray(dp.se_value_gradient_cov(jnp.vstack([z, c[None]]), 1.0, w))  # [f(z), f(c), grads]
        A = np.zeros((18, 21))
        A[np.arange(6), np.arange(6)], A[:6, 6] = 1.0, -1.0  # f(z_i) - f(c)
        A[6 + np.arange(12), 7 + np.arange(12)] = 1.0  # grad f(z_i)
        features = np.concatenate([phi, np.asarray(dphi).transpose(0, 2, 1).reshape(12, -1)])
        np.testing.assert_allclose(features @ features.T, A @ full @ A.T, atol=1e-14)


def test_centred_layers_keep_values_and_jacobians_consistent_after_collapse():
    """A 2-D standard map at two inputs 1e-5 apart through 30 layers: deep layers see inputs far inside a lengthscale
    and are drawn as offsets; the drawn difference of the outputs must equal J (x2 - x1) to O(|x2 - x1|) relative
    (the map is smooth), which the jittered Gram (noise sd 1e-6 per layer) cannot resolve."""
    h = 1e-5
    x = np.array([[0.2, -0.1], [0.2 + h, -0.1]])
    d = dp.draw(jax.random.PRNGKey(7), x, 30, 1.0, float(np.sqrt(2.0)), with_jacobian=True, centre_small=True)
    assert bool(np.all(d.centred))
    difference = np.asarray(d.layers[-1, 1] - d.layers[-1, 0])
    predicted = np.asarray(d.jacobians[-1, 0]) @ (x[1] - x[0])
    np.testing.assert_allclose(difference, predicted, rtol=1e-3)
