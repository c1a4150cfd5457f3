"""Dependent transitions (McHutchon 2014 sec. 4.7, M19; docs/sources/mchutchon.md#dependent-transitions).

A simulation that carries only p(x_t) forward draws a fresh transition function at every step. Time-invariant
dynamics reuse one function, so the state comes to covary with the model, and that covariance changes every later
prediction. Two cases:

* the uncertain linear model x_t = a x_{t-1} + b with one draw of (a, b) (eqs. 4.29-4.38): moment matching over the
  joint z = (x_t, a, b) keeps Cov[x_t, (a, b)] ("dependent"); zeroing it before each step is the usual
  simulation ("independent", eq. 4.28's kind);
* a 1-D GP transition x_t = f(x_{t-1}) + eps (eqs. 4.39-4.48): the moments of f_2 given x_0 when the first
  transition stays in the conditioning set (4.47-4.48), against the independent second step (moment matching at an
  uncertain input, ``zoo.moments``).

The GP moments are closed-form 1-D Gaussian integrals of SE kernels times polynomials of degree 2; ``zoo.moments``
has no polynomial-weighted kernel expectations, so the few lines are written here.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import block_diag, cho_solve

from zoo.kernels import SquaredExponential
from zoo.moments import SEPredictor, predict_moments, predict_point

Array = Any

# ----------------------------------------------------------------------------------------------------------------
# The uncertain linear model (sec. 4.7.1)


class UncertainLinear(NamedTuple):
    """x_t = a x_{t-1} + b, one draw [a; b] ~ N(weights_mean (2,), weights_cov (2, 2)) for every step, and
    x_0 ~ N(m0, s0) independent of it (eqs. 4.29-4.31)."""

    weights_mean: Array
    weights_cov: Array
    m0: Array
    s0: Array


# y = a x + b = z^T PRODUCT z + BIAS^T z for z = (x, a, b)
PRODUCT = jnp.array([[0.0, 0.5, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]])
BIAS = jnp.array([0.0, 0.0, 1.0])


def linear_step(mean: Array, cov: Array) -> tuple[Array, Array]:
    """One transition from z = (x, a, b) ~ N(mean (3,), cov (3, 3)) to the Gaussian over (y, a, b), y = a x + b, that
    matches y's mean, variance and Cov[(a, b), y] (eq. 4.36). The moments are those of the quadratic form y under the
    Gaussian z (Isserlis): eqs. 4.32-4.35 at the first step, 4.37 and the corrected 4.38 after it."""
    M, c = PRODUCT, BIAS
    MS = M @ cov
    y_mean = jnp.trace(MS) + mean @ M @ mean + c @ mean
    y_var = 2.0 * jnp.trace(MS @ MS) + 4.0 * mean @ M @ cov @ M @ mean + c @ cov @ c + 4.0 * c @ cov @ M @ mean
    cross = cov @ (2.0 * M @ mean + c)  # Cov[z, y]
    new_cov = cov.at[0, :].set(cross).at[:, 0].set(cross).at[0, 0].set(y_var)
    return mean.at[0].set(y_mean), new_cov


def simulate_linear(system: UncertainLinear, horizon: int, dependent: bool = True) -> tuple[Array, Array]:
    """Means and variances (horizon + 1,) of x_0..x_T by moment matching; ``dependent=False`` forgets Cov[x, (a, b)]
    before every step, as a simulation that carries only p(x_t) does."""
    mean = jnp.concatenate([jnp.reshape(system.m0, (1,)), system.weights_mean])
    cov = block_diag(jnp.reshape(system.s0, (1, 1)), system.weights_cov)

    def step(carry, _):
        mean, cov = carry
        if not dependent:
            cov = block_diag(cov[:1, :1], cov[1:, 1:])
        mean, cov = linear_step(mean, cov)
        return (mean, cov), (mean[0], cov[0, 0])

    _, (means, variances) = jax.lax.scan(step, (mean, cov), None, length=horizon)
    return jnp.concatenate([mean[:1], means]), jnp.concatenate([cov[:1, 0], variances])


def sample_linear(key: Array, system: UncertainLinear, horizon: int, num: int) -> Array:
    """(num, horizon + 1) trajectories of the true system: each draws (a, b) and x_0 once and keeps (a, b)."""
    k_weights, k_start = jax.random.split(key)
    weights = jax.random.multivariate_normal(k_weights, system.weights_mean, system.weights_cov, (num,))
    x0 = system.m0 + jnp.sqrt(system.s0) * jax.random.normal(k_start, (num,))

    def step(x, _):
        x = weights[:, 0] * x + weights[:, 1]
        return x, x

    _, xs = jax.lax.scan(step, x0, None, length=horizon)
    return jnp.concatenate([x0[:, None], xs.T], 1)


def random_linear_system(key: Array) -> UncertainLinear:
    """One random 1-D uncertain linear system; the thesis does not say how its four were drawn, so ours are (stated
    in docs/sources/mchutchon.md#dependent-transitions): mu_a ~ U(-1, 1), mu_b ~ N(0, 1), the weights' covariance
    L L^T with L lower triangular, |L_ii| and L_21 ~ N(0, 0.1^2); m0 ~ N(0, 1), s0 = 0.1^2."""
    k_a, k_b, k_chol, k_m0 = jax.random.split(key, 4)
    raw = 0.1 * jax.random.normal(k_chol, (3,))
    chol = jnp.array([[jnp.abs(raw[0]), 0.0], [raw[1], jnp.abs(raw[2])]])
    weights_mean = jnp.array([jax.random.uniform(k_a, minval=-1.0, maxval=1.0), jax.random.normal(k_b)])
    return UncertainLinear(weights_mean, chol @ chol.T, jax.random.normal(k_m0), jnp.asarray(0.1**2))


# ----------------------------------------------------------------------------------------------------------------
# A GP transition (sec. 4.7.2): one output, one input, zero mean


class TransitionGP(NamedTuple):
    """A 1-D transition GP's posterior from noisy transitions: ``predictor`` (``zoo.moments.exact_gp_predictor`` with
    E = D = 1, its Gram matrix K + noise_var I) and noise_var, the process noise Sigma_eps of every transition."""

    predictor: SEPredictor
    noise_var: Array

    @property
    def inputs(self) -> Array:  # (N,)
        return self.predictor.inputs[0, :, 0]


def posterior_mean_var(gp: TransitionGP, x: Array) -> tuple[Array, Array]:
    """m(x) and s(x), the latent posterior at points x (n,): each (n,)."""
    mean, var = jax.vmap(lambda xi: predict_point(gp.predictor, jnp.reshape(xi, (1,))))(x)
    return mean[:, 0], var[:, 0]


def posterior_cov(gp: TransitionGP, x: Array, z: Array) -> Array:
    """Posterior covariance of f at x (n,) and z (m,): k(x, z) - k(x)^T (K + noise I)^{-1} k(z), (n, m) (eq. 4.45)."""
    p = gp.predictor
    kernel = SquaredExponential(p.variance[0], p.lengthscale[0])
    kx, kz = kernel(gp.inputs[:, None], x[:, None]), kernel(gp.inputs[:, None], z[:, None])
    return kernel(x[:, None], z[:, None]) - kx.T @ cho_solve((p.chol[0], True), kz)


def _bump_moments(centre: Array, width: Array, scale: Array, mu: Array, var: Array) -> tuple[Array, Array, Array]:
    """E[h(x) (x - mu)^p], p = 0, 1, 2, for h(x) = scale exp(-(x - centre)^2 / (2 width)), x ~ N(mu, var): h times the
    density is a scaled Gaussian N(x; m', v'), whose first two moments about mu give the rest (App. A)."""
    total = width + var
    weight = scale * jnp.sqrt(width / total) * jnp.exp(-0.5 * (centre - mu) ** 2 / total)
    shift = var * (centre - mu) / total  # m' - mu
    return weight, weight * shift, weight * (width * var / total + shift**2)


def _kernel_moments(gp: TransitionGP, z: Array, mu: Array, var: Array) -> tuple[Array, Array, Array]:
    """E[k(z_i, x) (x - mu)^p] (m,) for p = 0, 1, 2, x ~ N(mu, var)."""
    p = gp.predictor
    return _bump_moments(z, p.lengthscale[0, 0] ** 2, p.variance[0], mu, var)


def _kernel_pair_moments(gp: TransitionGP, z: Array, w: Array, mu: Array, var: Array) -> tuple[Array, Array, Array]:
    """E[k(z_i, x) k(w_j, x) (x - mu)^p] (m, n) for p = 0, 1, 2: the product of two SE bumps is one bump centred at
    (z_i + w_j) / 2 with half the squared lengthscale, scaled by sf2^2 exp(-(z_i - w_j)^2 / (4 l^2)) (App. A.28)."""
    p = gp.predictor
    ell2, sf2 = p.lengthscale[0, 0] ** 2, p.variance[0]
    scale = sf2**2 * jnp.exp(-((z[:, None] - w[None, :]) ** 2) / (4.0 * ell2))
    return _bump_moments(0.5 * (z[:, None] + w[None, :]), 0.5 * ell2, scale, mu, var)


def dependent_second_step(gp: TransitionGP, x0: Array) -> tuple[Array, Array]:
    """Mean and variance of f_2 given a known x_0 with the first transition kept in the conditioning set (eqs.
    4.46-4.48): x_1 ~ N(m(x_0), s(x_0) + Sigma_eps) and f_2 | x_1, x_0 as eq. 4.44, integrated over x_1 exactly.

    4.47-4.48 print m(x_0) where the integrand (4.44) has m(x_1), and 4.48's second line drops the covariance of
    m(x_1) with C_12 (x_1 - m(x_0)); we take the law of total variance whole (docs/sources/mchutchon.md#errata)."""
    p = gp.predictor
    X, beta, chol = gp.inputs, p.beta[0], p.chol[0]
    m0, s0 = (v[0] for v in posterior_mean_var(gp, jnp.reshape(x0, (1,))))
    mu1, var1 = m0, s0 + gp.noise_var
    # C_12(x_1) = sum_j w_j k(z_j, x_1): the prior covariance with x_0 less what the data explain
    kernel = SquaredExponential(p.variance[0], p.lengthscale[0])
    z = jnp.concatenate([jnp.reshape(x0, (1,)), X])
    w = jnp.concatenate([jnp.ones(1), -cho_solve((chol, True), kernel(X[:, None], jnp.reshape(x0, (1, 1)))[:, 0])])
    k0 = _kernel_moments(gp, X, mu1, var1)[0]
    g1 = _kernel_moments(gp, z, mu1, var1)[1]
    kk0 = _kernel_pair_moments(gp, X, X, mu1, var1)[0]
    kg1 = _kernel_pair_moments(gp, X, z, mu1, var1)[1]
    gg0, _, gg2 = _kernel_pair_moments(gp, z, z, mu1, var1)
    # f_2 | x_1 has mean h(x_1) = m(x_1) + C_12 d / var1 and variance s(x_1) - C_12^2 / var1, d = x_1 - mu1
    mean = beta @ k0 + w @ g1 / var1
    expected_var = p.variance[0] - jnp.trace(cho_solve((chol, True), kk0)) - w @ gg0 @ w / var1
    second_moment = beta @ kk0 @ beta + 2.0 * beta @ kg1 @ w / var1 + w @ gg2 @ w / var1**2
    return mean, expected_var + second_moment - mean**2


def independent_second_step(gp: TransitionGP, x0: Array) -> tuple[Array, Array]:
    """Mean and variance of f_2 given x_0 by the usual simulation: x_1 ~ N(m(x_0), s(x_0) + Sigma_eps) taken as
    independent of f, then the exact moments of f at that Gaussian input (``zoo.moments.predict_moments``)."""
    m0, s0 = (v[0] for v in posterior_mean_var(gp, jnp.reshape(x0, (1,))))
    moments = predict_moments(gp.predictor, jnp.reshape(m0, (1,)), jnp.reshape(s0 + gp.noise_var, (1, 1)))
    return moments.mean[0], moments.cov[0, 0]


def sample_second_state(key: Array, gp: TransitionGP, x0: Array) -> tuple[Array, Array]:
    """Draws of (x_1, x_2) (n,) each from x_0 (n,) under one function: x_1 = f(x_0) + eps_1 by the posterior, then
    f_2 | x_1, x_0 by eq. 4.44 (the posterior with the transition x_0 -> x_1 added), x_2 = f_2 + eps_2."""
    k1, k2 = jax.random.split(key)
    m0, s0 = posterior_mean_var(gp, x0)
    var1 = s0 + gp.noise_var
    x1 = m0 + jnp.sqrt(var1) * jax.random.normal(k1, x0.shape)
    m1, s1 = posterior_mean_var(gp, x1)
    c01 = jax.vmap(lambda a, b: posterior_cov(gp, a[None], b[None])[0, 0])(x0, x1)
    mean2 = m1 + c01 * (x1 - m0) / var1
    var2 = s1 - c01**2 / var1 + gp.noise_var
    # var2 >= noise_var > 0 in exact arithmetic; the clip only guards rounding
    return x1, mean2 + jnp.sqrt(jnp.maximum(var2, 0.0)) * jax.random.normal(k2, x0.shape)
