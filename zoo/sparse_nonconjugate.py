"""SVGP with a non-Gaussian likelihood: Bernoulli (probit/logit), Poisson, Student-t; expectations by Gauss-Hermite.

Hensman, Matthews & Ghahramani 2015 (the SVGP bound for non-conjugate likelihoods); docs/sources/nonconjugate.md#svgp.
The bound is sum_n E_{q(f_n)} log p(y_n | f_n) - KL(q(v) || N(0, I)), with whitened inducing values u = L_ZZ v,
q(v) = N(m, S S^T) and q(f_n) = N(a_n^T m, k_nn - |a_n|^2 + |S^T a_n|^2), a_n = L_ZZ^{-1} k(Z, x_n), exactly as
``zoo.sparse`` (whose Gaussian-likelihood ``svgp_elbo`` this reproduces for ``Likelihood("gaussian")``). The
likelihoods are ``zoo.nonconjugate.Likelihood`` (one definition of log p(y | f) and of the support checks).

The one-dimensional expectations E_{N(f | mu, s2)} g(f) are Gauss-Hermite quadrature with ``quadrature_points``
(default ``GH_POINTS`` = 20) probabilists' nodes (``numpy.polynomial.hermite_e.hermegauss``): exact for polynomials
of degree <= 39 (so for the Gaussian likelihood); for Poisson's exp(f) the truncation error is of order s^40 / 40!.
log Phi, log sigmoid and the Student-t log density are analytic near the real axis, so the error falls geometrically
with the node count, at a rate set by s against the distance to the nearest complex singularity: for Student-t that
distance is the t scale, so when the sd of f is many t scales the default is not enough (measured in
docs/performance.md#svgp-quadrature; raise the option). tests/test_sparse_nonconjugate.py checks Poisson against
its closed form and probit against Monte Carlo.

Program (``gp/svgp-nonconjugate``): the SE-ARD hyperparameters ``lengthscale`` (D,), ``variance`` with the priors of
``gp/svgp``, ``mean`` ~ N(0, 1) (the constant log-rate) for Poisson, ``noise`` (squared scale) for Student-t;
v ~ N(0, I_M); inside ``plate("data", N, subsample_size=batch_size)`` (NumPyro scales by N/B: the minibatch ELBO is
unbiased) each point adds the factor E_{p(f_n | v)} log p(y_n | f_n), p(f_n | v) = N(a_n^T v + mean, k~_nn), by
quadrature. Under q(v) the ELBO's expectation over v of that factor is E_{q(f_n)} log p(y_n | f_n), so SVI with the
``guide`` view (q(v), point masses on the hyperparameters, as ``gp/svgp``) maximises the bound above. Without ``y``
the program draws f_n ~ p(f_n | v) and y_n ~ p(y_n | f_n) (prior predictive).
"""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo import gp
from zoo import nonconjugate as nc
from zoo import sparse as sp
from zoo.errors import OptionError
from zoo.kernels import Kernel, SquaredExponential
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family

Array = Any

GH_POINTS = 20
MAX_GH_POINTS = 200  # numpy's hermegauss weights overflow to NaN past about 370 nodes
LIKELIHOODS = ("bernoulli-probit", "bernoulli-logit", "poisson", "student-t")
VAR_FLOOR = 1e-30  # sqrt's gradient at a roundoff-zero variance would be inf; the floor moves f by 1e-15 at most


def gauss_hermite(num_points: int = GH_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Nodes x_k and weights w_k (num_points,) with sum_k w_k g(x_k) ~ E_{N(0, 1)} g (weights normalised to 1)."""
    if not 2 <= num_points <= MAX_GH_POINTS:
        raise OptionError(f"Gauss-Hermite needs 2 to {MAX_GH_POINTS} nodes, got {num_points}.")
    nodes, weights = np.polynomial.hermite_e.hermegauss(num_points)
    return nodes, weights / weights.sum()


def expected_log_lik(
    likelihood: nc.Likelihood, y: Array, mean: Array, var: Array, params, num_points: int = GH_POINTS
) -> Array:
    """E_{N(f_n | mean_n, var_n)} log p(y_n | f_n): (N,) by Gauss-Hermite quadrature. y, mean, var: (N,)."""
    nodes, weights = gauss_hermite(num_points)
    f = mean[..., None] + jnp.sqrt(jnp.maximum(var, VAR_FLOOR))[..., None] * nodes  # (N, K)
    return likelihood.log_prob(f, y[..., None], params) @ weights


def svgp_expected_log_lik(
    likelihood: nc.Likelihood,
    kernel: Kernel,
    X: Array,
    y: Array,
    Z: Array,
    q: sp.WhitenedQ,
    params,
    prior_mean: Array = 0.0,
    jitter: float = gp.JITTER,
    num_points: int = GH_POINTS,
) -> Array:
    """Per-point E_{q(f_n)} log p(y_n | f_n): (N,), q(f_n) from ``sparse.sparse_predict`` shifted by the prior mean."""
    marginal = sp.sparse_predict(kernel, Z, q, X, jitter)
    return expected_log_lik(likelihood, y, marginal.mean + prior_mean, marginal.cov, params, num_points)


def svgp_elbo(
    likelihood: nc.Likelihood,
    kernel: Kernel,
    X: Array,
    y: Array,
    Z: Array,
    q: sp.WhitenedQ,
    params,
    prior_mean: Array = 0.0,
    jitter: float = gp.JITTER,
    num_points: int = GH_POINTS,
) -> Array:
    """The bound sum_n E_{q(f_n)} log p(y_n | f_n) - KL(q(v) || N(0, I)) (Hensman et al. 2015, eq. 3)."""
    expected = svgp_expected_log_lik(likelihood, kernel, X, y, Z, q, params, prior_mean, jitter, num_points)
    return jnp.sum(expected) - sp.kl_whitened(q)


def predictive_mean(
    likelihood: nc.Likelihood, kernel: Kernel, Z: Array, q: sp.WhitenedQ, params, X_new: Array, prior_mean=0.0
) -> Array:
    """E[y*] under q(f*) (n,): p(y* = 1) for Bernoulli, the rate's mean for Poisson, the location for Student-t."""
    marginal = sp.sparse_predict(kernel, Z, q, X_new)
    return likelihood.predictive_mean(params, marginal.mean + prior_mean, marginal.cov)


# ----------------------------------------------------------------------------------------------------------------
# NumPyro program and guide


def _hyperparameters(D: int, likelihood: nc.Likelihood) -> tuple[Kernel, Array, dict]:
    """SE-ARD sites as gp/svgp's; ``mean`` for Poisson (as gp/poisson); the likelihood's own ``noise`` site."""
    lengthscale = numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1))
    variance = numpyro.sample("variance", dist.LogNormal(0.0, 1.0))
    mean = numpyro.sample("mean", dist.Normal(*nc.MEAN_PRIOR)) if likelihood.name == "poisson" else 0.0
    return SquaredExponential(variance, lengthscale), mean, likelihood.sample_params()


def svgp_nonconjugate(X, Z, y=None, *, likelihood: nc.Likelihood, batch_size=None, num_points: int = GH_POINTS):
    """Whitened SVGP program with a non-Gaussian likelihood (module docstring). X (N, D), Z (M, D), y (N,)."""
    kernel, prior_mean, params = _hyperparameters(X.shape[1], likelihood)
    sp.check_sparse_data(X, None, Z)
    Z = numpyro.param("inducing_inputs", Z)
    M, N = Z.shape[0], X.shape[0]
    v = numpyro.sample("v", dist.Normal(0.0, 1.0).expand([M]).to_event(1))
    with numpyro.plate("data", N, subsample_size=batch_size) as idx:
        Xb = X[idx]
        _, A = sp.whitened_projection(kernel, Z, Xb)  # A (M, B)
        mean = A.T @ v + prior_mean
        k_tilde = jnp.maximum(kernel.diag(Xb) - jnp.sum(A**2, 0), 0.0)  # roundoff can make it slightly negative
        if y is None:
            f = numpyro.sample("f", dist.Normal(mean, jnp.sqrt(jnp.maximum(k_tilde, VAR_FLOOR))))
            numpyro.sample("y", likelihood.distribution(f, params))
        else:
            numpyro.factor("expected_log_lik", expected_log_lik(likelihood, y[idx], mean, k_tilde, params, num_points))


def _hyperparameter_params(D: int, likelihood: nc.Likelihood):
    """(site, param name, initial value, constraint) of the point-mass sites of the guide."""
    rows = [("lengthscale", jnp.ones(D), constraints.positive), ("variance", jnp.array(1.0), constraints.positive)]
    if likelihood.name == "poisson":
        rows.append(("mean", jnp.array(0.0), constraints.real))
    if likelihood.sites:
        rows.append(("noise", jnp.array(0.1), constraints.positive))
    return rows


def svgp_nonconjugate_guide(X, Z, y=None, *, likelihood: nc.Likelihood, batch_size=None):
    """q(v) = N(q_mean, q_scale_tril q_scale_tril^T); point masses ``<site>_map`` on the hyperparameters (gp/svgp's)."""
    M, D = Z.shape
    for name, init, constraint in _hyperparameter_params(D, likelihood):
        value = numpyro.param(f"{name}_map", init, constraint=constraint)
        numpyro.sample(name, dist.Delta(value, event_dim=jnp.ndim(init)))
    mean = numpyro.param("q_mean", jnp.zeros(M))
    scale_tril = numpyro.param("q_scale_tril", jnp.eye(M), constraint=constraints.lower_cholesky)
    numpyro.sample("v", dist.MultivariateNormal(mean, scale_tril=scale_tril))


def fit_from(
    estimates, likelihood: nc.Likelihood, fixed: dict | None = None
) -> tuple[Kernel, Array, sp.WhitenedQ, dict, Array]:
    """(kernel, inducing inputs Z, q(v), likelihood params, prior mean) of one chain of an ``svi`` fit's point
    estimates with the ``guide`` view. ``fixed``: the parameters the run held fixed (``inference.run(..., params=)``,
    recorded as the posterior's ``fixed_params``), which the fit did not train and which replace the guide's
    untouched ``<site>_map`` values."""
    value = {name: jnp.asarray(estimates[name]) for name in estimates.data_vars}
    value |= {f"{name}_map": jnp.asarray(v, dtype=float) for name, v in (fixed or {}).items()}
    kernel = SquaredExponential(value["variance_map"], value["lengthscale_map"])
    params = {"noise": value["noise_map"]} if likelihood.sites else {}
    prior_mean = value["mean_map"] if likelihood.name == "poisson" else jnp.array(0.0)
    q = sp.WhitenedQ(value["q_mean"], value["q_scale_tril"])
    return kernel, value["inducing_inputs"], q, params, prior_mean


# ----------------------------------------------------------------------------------------------------------------
# Data and registration


class SparseNonconjugateSpec(ModelSpec):
    """A ModelSpec whose ``validate`` also checks the observations against the likelihood's support."""

    def validate(self, data) -> Dataset:
        dataset = super().validate(data)
        likelihood = self.views["likelihood"]
        likelihood.check(self.name, dataset.observed["y"])
        if "y" in dataset.test:
            likelihood.check(self.name, dataset.test["y"], where="test y")
        return dataset


def simulate(key, likelihood: nc.Likelihood, n: int = 200, d: int = 1, m: int = sp.DEFAULT_INDUCING, n_test=100):
    """zoo.nonconjugate's simulated data for the likelihood (f = 2 sin(2x) on [-3, 3]^d) plus Z = k-means of X."""
    k_data, k_z = jax.random.split(key)
    draw = {
        "bernoulli-probit": partial(nc.simulate_classification, link="probit"),
        "bernoulli-logit": partial(nc.simulate_classification, link="logit"),
        "poisson": nc.simulate_poisson,
        "student-t": nc.simulate_robust,
    }[likelihood.name]
    data = draw(k_data, n=n, d=d, n_test=n_test)
    Z = sp.init_inducing(k_z, data.observed["X"], positive_int("m", m), "kmeans")
    return Dataset(observed={**data.observed, "Z": Z}, truth=data.truth, test=data.test)


SOURCE = "Hensman, Matthews & Ghahramani 2015 (SVGP classification); docs/sources/nonconjugate.md#svgp"


@register_family(
    "gp/svgp-nonconjugate",
    {
        "likelihood": Option("str", "bernoulli-probit", "p(y_n | f_n); Bernoulli labels are 0/1", choices=LIKELIHOODS),
        "df": Option("float", 4.0, "Student-t degrees of freedom (fixed; student-t only)", above=0.0),
        "num_inducing": sp.INDUCING_OPTION,
        "batch_size": sp.BATCH_OPTION,
        "quadrature_points": Option(
            "int", GH_POINTS, "Gauss-Hermite nodes per expectation", minimum=2, maximum=MAX_GH_POINTS
        ),
    },
    "SVGP with a non-Gaussian likelihood (Gauss-Hermite expectations), whitened q(v), minibatch plate; guide view",
    SOURCE,
)
def _svgp_nonconjugate(
    likelihood: str, df: float, num_inducing: int, batch_size: int | None, quadrature_points: int
) -> ModelSpec:
    lik = nc.Likelihood(likelihood, df=float(df))
    defaults = {"lengthscale": 1.0, "variance": 1.0} | ({"mean": 0.0} if likelihood == "poisson" else {})
    if lik.sites:
        defaults["noise"] = 0.1
    return SparseNonconjugateSpec(
        name="gp/svgp-nonconjugate",
        summary=f"SVGP, {likelihood} likelihood, {quadrature_points}-point Gauss-Hermite, whitened q(v), minibatches",
        source=SOURCE,
        program=partial(svgp_nonconjugate, likelihood=lik, batch_size=batch_size, num_points=quadrature_points),
        simulate=partial(simulate, likelihood=lik, m=num_inducing),
        data_shapes=sp.SPARSE_SHAPES,
        default_params=frozen(defaults),
        capabilities=frozenset({"continuous"}),
        views=frozen(
            {
                "guide": partial(svgp_nonconjugate_guide, likelihood=lik, batch_size=batch_size),
                "likelihood": lik,
            }
        ),
    )


__all__ = [
    "GH_POINTS",
    "LIKELIHOODS",
    "expected_log_lik",
    "fit_from",
    "gauss_hermite",
    "predictive_mean",
    "svgp_elbo",
    "svgp_expected_log_lik",
    "svgp_nonconjugate",
    "svgp_nonconjugate_guide",
]
