"""The variational input-noise GP (``zoo.variational_input``; McHutchon 2014 M7, Titsias & Lawrence 2010).

* With q(X) a point mass (variances -> 0) the collapsed bound is Titsias' bound at X = q's means minus the KL of
  q(X) from the input prior, to 1e-6 (the bound's variance terms vanish linearly).
* The bound equals an independent dense computation of the same expression (optimal q(u) plugged into the
  uncollapsed bound: the expected log-likelihood under q(X) q(u) minus KL(q(u)) minus KL(q(X))), to 1e-8.
* At clean test inputs the prediction is the sparse GP's at the optimal q(u) (``zoo.sparse.sparse_predict``).
* (slow) ``svi`` on the sigmoid learns the input noise within a factor 1.5 of the truth.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo import sparse as sp
from zoo import variational_input as vi
from zoo.kernels import SquaredExponential
from zoo.nvc import psi_statistics

RNG = np.random.default_rng(0)
N, M = 25, 6
X = RNG.uniform(-3, 3, (N, 1))
Y = np.sin(X[:, 0]) + 0.1 * RNG.normal(size=N)
Z = np.linspace(-3, 3, M)[:, None]
KERN = SquaredExponential(1.2, np.array([0.9]))
NOISE, INPUT = 0.05, np.array([0.2])
MU = X + 0.1 * RNG.normal(size=(N, 1))
VAR = RNG.uniform(0.01, 0.1, (N, 1))


def test_point_mass_q_gives_titsias_bound_minus_kl():
    tiny = np.full((N, 1), 1e-12)
    value = vi.collapsed_bound(KERN, Z, X, Y, NOISE, INPUT, MU, tiny)
    kl = vi.kl_inputs(MU, tiny, X, np.broadcast_to(INPUT, X.shape))
    np.testing.assert_allclose(value + kl, sp.vfe_bound(KERN, MU, Y, Z, NOISE), rtol=1e-6)


def test_bound_equals_the_uncollapsed_bound_at_the_optimal_q():
    q = vi.optimal_q(KERN, Z, Y, NOISE, MU, VAR)
    psi = psi_statistics(KERN, Z, MU, VAR)
    K = np.asarray(KERN(Z)) + 1e-6 * 1.2 * np.eye(M)  # the jitter zoo.gp.cholesky adds
    Kinv = np.linalg.inv(K)
    L = np.linalg.cholesky(K)
    m_u = L @ np.asarray(q.mean)
    S_u = L @ np.asarray(q.scale_tril) @ np.asarray(q.scale_tril).T @ L.T
    # E_q(X) E_q(u) sum_i log N(y_i | f_i, s2), f_i | u ~ p(f_i | u, x_i)
    psi1, psi2 = np.asarray(psi.psi1), np.asarray(psi.psi2).sum(0)
    expected_sq = (
        Y @ Y
        - 2 * Y @ psi1 @ Kinv @ m_u
        + np.trace(Kinv @ psi2 @ Kinv @ (S_u + np.outer(m_u, m_u)))
        + np.sum(np.asarray(psi.psi0))
        - np.trace(Kinv @ psi2)
    )
    ell = -0.5 * N * np.log(2 * np.pi * NOISE) - 0.5 * expected_sq / NOISE
    kl_u = 0.5 * (np.trace(Kinv @ S_u) + m_u @ Kinv @ m_u - M - np.linalg.slogdet(S_u)[1] + np.linalg.slogdet(K)[1])
    kl_x = float(vi.kl_inputs(MU, VAR, X, np.broadcast_to(INPUT, X.shape)))
    value = float(vi.collapsed_bound(KERN, Z, X, Y, NOISE, INPUT, MU, VAR))
    np.testing.assert_allclose(value, ell - kl_u - kl_x, rtol=1e-8)


def test_prediction_at_clean_inputs_is_the_sparse_gp_at_the_optimal_q():
    fit = vi.VariationalInputFit(KERN, NOISE, INPUT, Z, MU, VAR, Y)
    grid = np.linspace(-4, 4, 30)[:, None]
    mean, var = vi.predict(fit, grid, input_var=0.0)
    ref = sp.sparse_predict(KERN, Z, vi.optimal_q(KERN, Z, Y, NOISE, MU, VAR), grid)
    np.testing.assert_allclose(mean, ref.mean, atol=1e-9)
    np.testing.assert_allclose(var, ref.cov + NOISE, atol=1e-9)


@pytest.mark.slow  # one svi fit
def test_svi_learns_the_input_noise_of_the_sigmoid():
    import inference
    import zoo

    spec = zoo.get("gp/variational-input")
    data = spec.simulate(jax.random.key(1), n=200, m=20)
    run = inference.run(spec, data, engine="svi", guide="delta", num_steps=3000, learning_rate=0.02, num_samples=1)
    fit = vi.fit_from(run.point_estimates.isel(chain=0), data.observed["X"], data.observed["Z"], data.observed["y"])
    assert 1 / 1.5 < float(jnp.sqrt(fit.input_noise[0])) < 1.5
