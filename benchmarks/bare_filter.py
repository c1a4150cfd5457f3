"""The floor of ``benchmarks.pf_throughput``: a bare bootstrap particle filter for x_t = A x_{t-1} + N(0, Q),
y_t = C x_t + N(0, R), written as briefly as JAX allows (float64, threefry keys, ``searchsorted`` systematic
resampling, one ``lax.scan``). A measuring stick, not an engine: no masks, controls, moments or genealogy.
"""

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp


def bare_bootstrap_log_likelihood(key, y, A, Q, C, R, num_particles: int):
    """log p(y_{1:T}) estimate for y (T, E), x_1 ~ N(0, I), with ``num_particles`` particles."""
    N, D = num_particles, A.shape[0]
    LQ, LR = jnp.linalg.cholesky(Q), jnp.linalg.cholesky(R)
    log_norm = -jnp.sum(jnp.log(jnp.diagonal(LR))) - 0.5 * R.shape[0] * jnp.log(2 * jnp.pi)

    def log_g(x, y_t):  # log N(y_t; C x_i, R) for all particles
        z = jax.scipy.linalg.solve_triangular(LR, (y_t - x @ C.T).T, lower=True)
        return -0.5 * jnp.sum(z**2, 0) + log_norm

    def step(carry, inputs):
        x, logw, ll = carry
        k, y_t = inputs
        k_u, k_z = jax.random.split(k)
        w = jnp.exp(logw - logsumexp(logw))
        u = (jax.random.uniform(k_u) + jnp.arange(N)) / N
        anc = jnp.clip(jnp.searchsorted(jnp.cumsum(w), u), 0, N - 1)
        x = x[anc] @ A.T + jax.random.normal(k_z, (N, D)) @ LQ.T
        logw = log_g(x, y_t)
        return (x, logw, ll + logsumexp(logw) - jnp.log(N)), None

    k0, k_scan = jax.random.split(key)
    x0 = jax.random.normal(k0, (N, D))
    logw0 = log_g(x0, y[0])
    ll0 = logsumexp(logw0) - jnp.log(N)
    (_, _, ll), _ = jax.lax.scan(step, (x0, logw0, ll0), (jax.random.split(k_scan, y.shape[0] - 1), y[1:]))
    return ll
