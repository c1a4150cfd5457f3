"""The variational input-noise GP (McHutchon 2014, sec. 2.3, eqs. 2.28-2.58, model M7; after Titsias & Lawrence 2010):
the true inputs are latent, x_i ~ N(y_in^i, diag(input_noise)), with a Gaussian q(x_i) = N(mu_i, diag(s_i)), M inducing
outputs u at fixed inducing inputs Z, and q(u) collapsed to its optimum (docs/sources/mchutchon.md#variational-input).

The collapsed bound, with the SE Psi-statistics Psi0 = sum_i E k(x_i, x_i), Psi1 (N, M) = E k(x_i, Z),
Psi2 = sum_i E k(Z, x_i) k(x_i, Z) under q (``zoo.nvc.psi_statistics``), K = K_ZZ = L L^T, A = L^-1 Psi2 L^-T / s2,
B = I + A, c = LB^-1 L^-1 Psi1^T y / s2 (LB = chol B):

    L* = -N/2 log(2 pi s2) - 1/2 log|B| - y^T y / (2 s2) + c^T c / 2 - Psi0 / (2 s2) + tr(A) / 2 - KL(q(X) || p(X)),

the printed (2.49)/(2.51) corrected (docs/sources/mchutchon.md#variational-input). With q(X) a point mass it is
Titsias' collapsed bound (``zoo.sparse.vfe_bound``). The optimal q(v) of the whitened v = L^-1 u is N(B^-1 L^-1
Psi1^T y / s2, B^-1).

Prediction at a noisy test input y* (x* ~ N(y*, input_noise), eqs. 2.57-2.58): with the test point's psi0*, psi1* (M,),
Psi2* (M, M) and P = L^-1 Psi2* L^-T, mean = psi1* L^-T m_v, variance of f = psi0* - tr P + tr(P (S_v + m_v m_v^T))
- mean^2 (the exact second moment under q(u) and x*), plus s2 for y.

The program ``gp/variational-input``: sites ``lengthscale`` (D,), ``variance`` (LogNormal(0, 1)), ``noise`` = s2
(LogNormal(-2, 1)) and ``input_noise`` (D,) (LogNormal(-2, 1)); q(X)'s means and variances are the model's
``numpyro.param``s ``q_x_mean`` (N, D, starting at the observed inputs) and ``q_x_var`` (N, D, starting at 0.01), so
``svi`` (guide ``delta``: MAP of the hyperparameters) maximises L* + log p(theta) over everything at once. With y
absent the program simulates the generative model M3 (x ~ N(y_in, input_noise), y ~ N(0, K(x) + s2 I)).
Shapes: X (N, D) noisy inputs, Z (M, D), y (N,).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular
from numpyro.distributions import constraints

from zoo import gp, nigp
from zoo import sparse as sp
from zoo.kernels import SquaredExponential
from zoo.nvc import psi_statistics
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register

Array = Any
LOG_2PI = jnp.log(2.0 * jnp.pi)
Q_VAR_INIT = 0.01

__all__ = ["VariationalInputFit", "collapsed_bound", "fit_from", "optimal_q", "predict", "variational_input_gp"]


class VariationalInputFit(NamedTuple):
    """Kernel, noise s2, input noise (D,), Z (M, D), q(X) means and variances (N, D), targets y (N,)."""

    kernel: Any
    noise: Array
    input_noise: Array
    Z: Array
    q_mean: Array
    q_var: Array
    y: Array


def _whitened(kernel, Z, y, noise, mu, var):
    psi = psi_statistics(kernel, Z, mu, var)
    L = gp.cholesky(kernel(Z))
    A = solve_triangular(L, solve_triangular(L, jnp.sum(psi.psi2, 0), lower=True).T, lower=True) / noise
    LB = jnp.linalg.cholesky(jnp.eye(Z.shape[0]) + A)
    b = solve_triangular(L, psi.psi1.T @ y, lower=True) / noise  # L^-1 Psi1^T y / s2
    return psi, L, A, LB, b


def kl_inputs(mu: Array, var: Array, prior_mean: Array, prior_var: Array) -> Array:
    """KL(prod_i N(mu_i, diag var_i) || prod_i N(prior_mean_i, diag prior_var)): mu, var, prior_mean (N, D)."""
    return 0.5 * jnp.sum(jnp.log(prior_var / var) + (var + (mu - prior_mean) ** 2) / prior_var - 1.0)


def collapsed_bound(kernel, Z, X, y, noise, input_noise, mu, var) -> Array:
    """L* (module docstring): X (N, D) the observed noisy inputs (the prior means), mu, var (N, D) q(X)."""
    N = y.shape[0]
    psi, _, A, LB, b = _whitened(kernel, Z, y, noise, mu, var)
    c = solve_triangular(LB, b, lower=True)
    bound = -0.5 * N * (LOG_2PI + jnp.log(noise)) - jnp.sum(jnp.log(jnp.diagonal(LB)))
    bound = bound - 0.5 * y @ y / noise + 0.5 * c @ c - 0.5 * jnp.sum(psi.psi0) / noise + 0.5 * jnp.trace(A)
    return bound - kl_inputs(mu, var, X, jnp.broadcast_to(input_noise, X.shape))


def optimal_q(kernel, Z, y, noise, mu, var) -> sp.WhitenedQ:
    """The optimal q(v) = N(B^-1 L^-1 Psi1^T y / s2, B^-1) of the whitened inducing values."""
    _, _, _, LB, b = _whitened(kernel, Z, y, noise, mu, var)
    LB_inv = solve_triangular(LB, jnp.eye(LB.shape[0]), lower=True)
    return sp.WhitenedQ(cho_solve((LB, True), b), jnp.linalg.cholesky(LB_inv.T @ LB_inv))


def predict(fit: VariationalInputFit, X_new: Array, input_var: Array | None = None) -> tuple[Array, Array]:
    """Mean and variance of y at test inputs X_new (m, D) observed with input noise ``input_var`` (default: the
    learnt one; 0 gives the prediction at clean inputs), eqs. 2.57-2.58."""
    q = optimal_q(fit.kernel, fit.Z, fit.y, fit.noise, fit.q_mean, fit.q_var)
    var_in = fit.input_noise if input_var is None else input_var
    psi = psi_statistics(fit.kernel, fit.Z, X_new, jnp.broadcast_to(jnp.asarray(var_in, float), X_new.shape))
    L = gp.cholesky(fit.kernel(fit.Z))
    a = solve_triangular(L, psi.psi1.T, lower=True)  # (M, m)
    mean = a.T @ q.mean
    P = jnp.einsum("ai,nij,bj->nab", jnp.linalg.inv(L), psi.psi2, jnp.linalg.inv(L))
    second = q.scale_tril @ q.scale_tril.T + jnp.outer(q.mean, q.mean)
    var_f = psi.psi0 - jnp.trace(P, axis1=1, axis2=2) + jnp.einsum("nab,ab->n", P, second) - mean**2
    return mean, jnp.maximum(var_f, 0.0) + fit.noise


def variational_input_gp(X, Z, y=None):
    """gp/variational-input (module docstring): the collapsed bound as a factor, or the M3 generative model."""
    N, D = X.shape
    lengthscale = numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1))
    variance = numpyro.sample("variance", dist.LogNormal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    input_noise = numpyro.sample("input_noise", dist.LogNormal(-2.0, 1.0).expand([D]).to_event(1))
    kernel = SquaredExponential(variance, lengthscale)
    if y is None:
        x = numpyro.sample("x", dist.Normal(X, jnp.sqrt(input_noise)).to_event(2))
        numpyro.sample("y", gp.GaussianEvidence(kernel(x) + noise * jnp.eye(N)))
        return
    mu = numpyro.param("q_x_mean", X)
    var = numpyro.param("q_x_var", jnp.full((N, D), Q_VAR_INIT), constraint=constraints.positive)
    numpyro.factor("collapsed_bound", collapsed_bound(kernel, Z, X, y, noise, input_noise, mu, var))


def fit_from(estimates, X: Array, Z: Array, y: Array) -> VariationalInputFit:
    """The fit of one chain of an ``svi`` (guide ``delta``) result's point estimates."""
    value = {name: jnp.asarray(estimates[name]) for name in estimates.data_vars}
    kernel = SquaredExponential(value["variance"], value["lengthscale"])
    return VariationalInputFit(
        kernel,
        value["noise"],
        value["input_noise"],
        jnp.asarray(Z),
        value["q_x_mean"],
        value["q_x_var"],
        jnp.asarray(y),
    )


def simulate_variational_input(key, n: int = 200, m: int = 20, n_test: int = 200) -> Dataset:
    """E2.2's sigmoid tanh(x / 3) on U(-10, 10), input-noise sd 1, output-noise sd 0.025; Z: m points evenly on the
    observed inputs' range."""
    n, m, n_test = (positive_int(k, v) for k, v in (("n", n), ("m", m), ("n_test", n_test)))
    ds = nigp.simulate_input_noise(key, nigp.sigmoid, n, n_test, -10.0, 10.0, 1.0, 0.025)
    X = jnp.asarray(ds.observed["Yin"])
    Z = jnp.linspace(X.min(), X.max(), m)[:, None]
    test = {"X": ds.test["Yin"], "y": ds.test["Yout"]}
    return Dataset(observed={"X": X, "Z": Z, "y": ds.observed["Yout"]}, truth=ds.truth, test=test)


register(
    ModelSpec(
        name="gp/variational-input",
        summary="Variational input-noise GP: latent inputs with q(X), collapsed optimal q(u) (Titsias-Lawrence bound)",
        source="McHutchon 2014, sec. 2.3 (eqs. 2.28-2.58), model M7; Titsias & Lawrence 2010",
        program=variational_input_gp,
        simulate=simulate_variational_input,
        data_shapes=frozen({"X": ("N", "D"), "Z": ("M", "D"), "y": ("N",)}),
        default_params=frozen({"lengthscale": 1.0, "variance": 1.0, "noise": 0.01, "input_noise": 0.1}),
        capabilities=frozenset({"continuous"}),
    )
)
