"""Sparse GPs (zoo/sparse.py): closed-form identities to float64 precision and an unbiased minibatch ELBO."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer import Trace_ELBO
from numpyro.infer.util import log_density

import zoo
from zoo import gp
from zoo import sparse as sp
from zoo.errors import DataError
from zoo.kernels import SquaredExponential

KERNEL = SquaredExponential(1.3, jnp.array([0.7]))
NOISE = 0.05


@pytest.fixture(scope="module")
def data():
    ds = zoo.get("gp/svgp").simulate(jax.random.PRNGKey(0), n=40, m=7)
    return tuple(jnp.asarray(ds.observed[k]) for k in ("X", "y", "Z"))


def dense_logpdf(y, cov):
    return dist.MultivariateNormal(jnp.zeros(y.shape[0]), covariance_matrix=cov).log_prob(y)


def test_svgp_at_optimal_q_equals_vfe_bound(data):
    X, y, Z = data
    q = sp.optimal_whitened_q(KERNEL, X, y, Z, NOISE)
    np.testing.assert_allclose(
        sp.svgp_elbo(KERNEL, X, y, Z, q, NOISE), sp.vfe_bound(KERNEL, X, y, Z, NOISE), rtol=1e-12
    )
    # ... and any other q(v) gives a smaller ELBO (the optimum is a maximum).
    other = sp.WhitenedQ(q.mean + 0.05, 0.9 * q.scale_tril)
    assert sp.svgp_elbo(KERNEL, X, y, Z, other, NOISE) < sp.vfe_bound(KERNEL, X, y, Z, NOISE)


def test_sparse_with_all_data_as_inducing_points_is_exact(data):
    """Z = X: Q = K, so VFE, FITC and DTC all equal the exact evidence and predictive (no Kzz jitter here).

    zoo.gp's exact evidence and predictive add no jitter where K + s2 I factorises (gp.cholesky_with_jitter), so the
    sparse forms get the same noise.
    """
    X, y, _ = data
    X = X[::2]  # 20 points: K_XX is well conditioned without jitter
    y = y[::2]
    exact = gp.log_marginal_likelihood(KERNEL, X, y, NOISE)
    noise_eff = NOISE
    np.testing.assert_allclose(sp.vfe_bound(KERNEL, X, y, X, noise_eff, jitter=0.0), exact, rtol=1e-9)
    np.testing.assert_allclose(sp.fitc_log_likelihood(KERNEL, X, y, X, noise_eff, jitter=0.0), exact, rtol=1e-9)
    X_new = jnp.linspace(-3.5, 3.5, 9)[:, None]
    ref = gp.predict(KERNEL, X, y, NOISE, X_new, full_cov=False)
    q = sp.optimal_whitened_q(KERNEL, X, y, X, noise_eff, jitter=0.0)
    vfe_pred = sp.sparse_predict(KERNEL, X, q, X_new, jitter=0.0)
    fitc_pred = sp.fitc_predict(KERNEL, X, y, X, noise_eff, X_new, jitter=0.0)
    for pred in (vfe_pred, fitc_pred):
        np.testing.assert_allclose(pred.mean, ref.mean, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(pred.cov, ref.cov, rtol=1e-6, atol=1e-9)


def test_low_rank_forms_equal_dense(data):
    """Woodbury/determinant-lemma evaluations vs dense MVN densities (Franzese 8.9-8.13, Kaiser 2.54, 2.57)."""
    X, y, Z = data
    Luu, A = sp.whitened_projection(KERNEL, Z, X)
    Q = A.T @ A
    np.testing.assert_allclose(sp.dtc_log_likelihood(A, y, NOISE), dense_logpdf(y, Q + NOISE * jnp.eye(40)), rtol=1e-11)
    lam = jnp.diag(KERNEL(X) - Q) + NOISE
    np.testing.assert_allclose(
        sp.fitc_log_likelihood(KERNEL, X, y, Z, NOISE), dense_logpdf(y, Q + jnp.diag(lam)), rtol=1e-11
    )
    # Predictives: DTC/VFE (Franzese 8.7-8.8) and FITC (k_FITC as a GP kernel) written densely.
    X_new = jnp.linspace(-3.0, 3.0, 5)[:, None]
    a_star = jnp.linalg.solve(Luu, KERNEL(Z, X_new))
    Q_sx = a_star.T @ A
    for cov_train, pred in (
        (Q + NOISE * jnp.eye(40), sp.sparse_predict(KERNEL, Z, sp.optimal_whitened_q(KERNEL, X, y, Z, NOISE), X_new)),
        (Q + jnp.diag(lam), sp.fitc_predict(KERNEL, X, y, Z, NOISE, X_new)),
    ):
        mean = Q_sx @ jnp.linalg.solve(cov_train, y)
        var = KERNEL.diag(X_new) - jnp.sum(Q_sx * jnp.linalg.solve(cov_train, Q_sx.T).T, 1)
        np.testing.assert_allclose(pred.mean, mean, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(pred.cov, var, rtol=1e-8, atol=1e-11)


def log_prior(params, D):
    return (
        dist.LogNormal(0.0, 1.0).expand([D]).to_event(1).log_prob(params["lengthscale"])
        + dist.LogNormal(0.0, 1.0).log_prob(params["variance"])
        + dist.LogNormal(-2.0, 1.0).log_prob(params["noise"])
    )


@pytest.mark.parametrize("name", ["gp/fitc", "gp/vfe"])
def test_program_log_density_is_prior_plus_objective(name, data):
    X, y, Z = data
    params = {"lengthscale": KERNEL.lengthscale, "variance": KERNEL.variance, "noise": NOISE}
    program = zoo.get(name).program
    logp, _ = log_density(program, (), {"X": X, "Z": Z, "y": y}, params)
    objective = sp.fitc_log_likelihood if name == "gp/fitc" else sp.vfe_bound
    np.testing.assert_allclose(logp, log_prior(params, 1) + objective(KERNEL, X, y, Z, NOISE), rtol=1e-11)


def test_minibatch_elbo_is_unbiased(data):
    """Trace_ELBO of the gp/svgp program and guide with minibatches of 8 of 40 points, averaged over 4000 draws
    (minibatch indices and v ~ q), equals the analytic full-data bound (Franzese 8.19-8.20 corrected) plus the log
    prior of the point-mass hyperparameters, within 5 Monte Carlo standard errors."""
    X, y, Z = data
    spec = zoo.get("gp/svgp")
    q = sp.optimal_whitened_q(KERNEL, X, y, Z, NOISE)
    q = sp.WhitenedQ(q.mean + 0.1, 1.5 * q.scale_tril)  # any q(v), not only the optimum
    param_map = {
        "lengthscale_map": KERNEL.lengthscale,
        "variance_map": KERNEL.variance,
        "noise_map": NOISE,
        "q_mean": q.mean,
        "q_scale_tril": q.scale_tril,
        "inducing_inputs": Z,
    }
    params = {"lengthscale": KERNEL.lengthscale, "variance": KERNEL.variance, "noise": NOISE}
    expected = sp.svgp_elbo(KERNEL, X, y, Z, q, NOISE) + log_prior(params, 1)

    @partial(jax.jit, static_argnums=1)
    def elbo_draws(keys, batch_size):
        loss = Trace_ELBO()
        return jax.vmap(
            lambda k: -loss.loss(k, param_map, spec.program, spec.views["guide"], X=X, Z=Z, y=y, batch_size=batch_size)
        )(keys)

    keys = jax.random.split(jax.random.PRNGKey(1), 4000)
    for batch_size in (8,):
        draws = np.asarray(elbo_draws(keys, batch_size))
        mcse = draws.std() / np.sqrt(draws.size)
        assert abs(draws.mean() - expected) < 5 * mcse, (batch_size, draws.mean(), expected, mcse)


def test_inducing_initialisation(data):
    X, _, _ = data
    for method in ("kmeans", "subset"):
        Z = sp.init_inducing(jax.random.PRNGKey(0), X, 6, method)
        assert Z.shape == (6, 1) and len(np.unique(Z)) == 6
        assert X.min() <= Z.min() and Z.max() <= X.max()


def test_bad_input_raises(data):
    X, y, Z = data
    with pytest.raises(DataError, match="exceed"):
        sp.init_inducing(jax.random.PRNGKey(0), X[:5], 6)
    with pytest.raises(DataError, match="exceed"), handlers.seed(rng_seed=0):
        zoo.get("gp/vfe").program(X=X[:5], Z=Z, y=y[:5])
    with pytest.raises(DataError, match="columns"):
        sp.check_sparse_data(X, y, jnp.zeros((3, 2)))
    with pytest.raises(DataError, match=r"y must be \(N,\)"):
        sp.check_sparse_data(X, y[:-1], Z)
    with pytest.raises(DataError, match="positive semi-definite"):
        sp.check_covariance(jnp.array([[1.0, 2.0], [2.0, 1.0]]), "q(u) covariance")
    with pytest.raises(DataError, match="M = 7"):  # the engine path: data validated, then the program raises
        import inference

        inference.run("gp/svgp", {"X": X[:5], "Z": Z, "y": y[:5]}, engine="svi", guide="model", num_steps=2)
