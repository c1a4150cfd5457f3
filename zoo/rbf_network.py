"""The Bayesian RBF network: Bayesian linear regression on Gaussian radial-basis features (McHutchon 2014, sec. 1.4,
eqs. 1.31-1.35, Fig. 1.8; docs/sources/mchutchon.md#bayes-rbf).

    f(x) = sum_j w_j phi_j(x) = w^T phi(x)                                  (eq. 1.31)
    phi_j(x) = exp(-1/2 (x - c_j)^T Lambda^{-1} (x - c_j)),  Lambda = diag(width^2)   (eq. 1.32)
    w_j ~ N(0, sigma_w^2)                                                   (eq. 1.33)
    y = Phi w + eps,  eps ~ N(0, sigma_n^2 I),  Phi_ij = phi_j(x_i)  (N, M)

The centres C (M, D) are data (fixed), as in Fig. 1.8; one width vector is shared by the basis functions (the thesis
allows a Lambda_j per function). Given sigma_w^2, sigma_n^2 and the width, the weights' posterior is Gaussian:
A = Phi^T Phi / sigma_n^2 + I / sigma_w^2, w | y ~ N(A^-1 Phi^T y / sigma_n^2, A^-1), so f* = phi(x*)^T w has
eq. 1.35's predictive N(phi*^T A^-1 Phi^T y / sigma_n^2, phi*^T A^-1 phi*). **Erratum**: eq. 1.35 prints
"+ sigma_w^2 I_M" inside the inverse; the prior precision is sigma_w^-2 I_M. Marginally y ~ N(0, sigma_w^2 Phi Phi^T
+ sigma_n^2 I) (eq. 1.34 with noise): a GP with the degenerate kernel k(x, x') = sigma_w^2 phi(x)^T phi(x'), whose
variance sigma_w^2 |phi(x)|^2 falls to 0 away from the centres (Fig. 1.8's point).

Registered as the family ``blr/rbf`` with the option ``weights``: ``"latent"`` (the weights are the sample site
``w``; the ``conjugate`` view gives the exact posterior above, engine ``exact``) or ``"collapsed"`` (w integrated
out: the evidence as the likelihood, engine ``ml2`` for the hyperparameters). Sites: ``width`` (D,),
``weight_variance`` = sigma_w^2, ``noise`` = sigma_n^2 (variances), and ``w`` (M,) in the latent form.
"""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from zoo import gp
from zoo.options import Option
from zoo.registry import ConjugatePosterior, Dataset, ModelSpec, frozen, positive_int, register_family

__all__ = ["degenerate_kernel", "features", "predict", "rbf_network", "tiling_weight_variance"]

Array = Any
WEIGHTS = ("latent", "collapsed")
SOURCE = "McHutchon 2014, sec. 1.4 (eqs. 1.31-1.35), Fig. 1.8"


def features(X: Array, C: Array, width: Array) -> Array:
    """Phi (N, M): phi_j(x_i) = exp(-1/2 sum_d (x_id - c_jd)^2 / width_d^2) (eq. 1.32); X (N, D), C (M, D),
    width (D,)."""
    diff = (X[:, None, :] - C[None, :, :]) / width
    return jnp.exp(-0.5 * jnp.sum(diff**2, -1))


def degenerate_kernel(X1: Array, X2: Array, C: Array, width: Array, weight_variance: Array) -> Array:
    """The prior covariance of f: sigma_w^2 Phi(X1) Phi(X2)^T (eq. 1.34), (N1, N2)."""
    return weight_variance * features(X1, C, width) @ features(X2, C, width).T


def tiling_weight_variance(variance: Array, lengthscale: Array, spacing: Array) -> Array:
    """sigma_w^2 that makes the degenerate kernel of 1-D centres on a grid of ``spacing`` with width l / sqrt(2)
    tend to the SE kernel sf2 exp(-(x - x')^2 / (2 l^2)) as the grid fills the line (sec. 1.4's "infinitely many
    features"): sum_j phi_j(x) phi_j(x') spacing -> sqrt(pi) w exp(-(x - x')^2 / (4 w^2)), w = l / sqrt(2), so
    sigma_w^2 = sf2 spacing / (sqrt(pi) w)."""
    return variance * spacing / (jnp.sqrt(jnp.pi) * lengthscale / jnp.sqrt(2.0))


def weight_posterior(params, X: Array, C: Array, y: Array) -> tuple[gp.GaussianPosterior, Array]:
    """(w | y ~ N(A^-1 Phi^T y / sigma_n^2, A^-1), log p(y)) for params with ``width``, ``weight_variance``,
    ``noise`` (Cholesky of A, no inverse)."""
    Phi = features(X, C, params["width"])
    prior_cov = params["weight_variance"] * jnp.eye(C.shape[0])
    return gp.linear_gaussian_posterior(prior_cov, Phi, y, params["noise"])


def predict(params, X: Array, C: Array, y: Array, X_new: Array) -> tuple[Array, Array]:
    """Eq. 1.35 (prior precision corrected): mean and variance (n,) of f* at X_new (n, D), noise not added."""
    post, _ = weight_posterior(params, X, C, y)
    phi = features(X_new, C, params["width"])
    return phi @ post.mean, jnp.einsum("nm,mk,nk->n", phi, post.cov, phi)


def _hyperparameters(D: int):
    width = numpyro.sample("width", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1))
    weight_variance = numpyro.sample("weight_variance", dist.LogNormal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    return width, weight_variance, noise


def rbf_network(X, C, y=None, weights: str = "latent"):
    """The Bayesian RBF network (module docstring). X (N, D), C (M, D) centres, y (N,). ``weights``: "latent" samples
    w ~ N(0, sigma_w^2 I) and y ~ N(Phi w, sigma_n^2 I); "collapsed" samples y ~ N(0, sigma_w^2 Phi Phi^T +
    sigma_n^2 I)."""
    width, weight_variance, noise = _hyperparameters(X.shape[1])
    Phi = features(X, C, width)
    if weights == "collapsed":
        cov = weight_variance * Phi @ Phi.T + noise * jnp.eye(X.shape[0])
        numpyro.sample("y", gp.GaussianEvidence(cov), obs=y)
        return
    w = numpyro.sample("w", dist.Normal(0.0, jnp.sqrt(weight_variance)).expand([C.shape[0]]).to_event(1))
    numpyro.sample("y", dist.Normal(Phi @ w, jnp.sqrt(noise)).to_event(1), obs=y)


def rbf_conjugate(params, X, C, y) -> ConjugatePosterior:
    """The ``conjugate`` view of the latent form: w | y exactly, and log p(y | params)."""
    post, log_evidence = weight_posterior(params, X, C, y)
    return ConjugatePosterior(post.mean, post.cov, lambda w: {"w": w}, log_evidence)


def simulate_rbf_network(key, n: int = 20, m: int = 10) -> Dataset:
    """A draw from the model on x ~ U(-5, 5): m centres evenly on [-4, 4], width 1, sigma_w^2 = 1, sigma_n^2 = 0.01."""
    n, m = positive_int("n", n), positive_int("m", m)
    k_x, k_w, k_y = jax.random.split(key, 3)
    X = jax.random.uniform(k_x, (n, 1), minval=-5.0, maxval=5.0)
    C = jnp.linspace(-4.0, 4.0, m)[:, None]
    w = jax.random.normal(k_w, (m,))
    y = features(X, C, jnp.ones(1)) @ w + 0.1 * jax.random.normal(k_y, (n,))
    return Dataset(
        observed={"X": X, "C": C, "y": y}, truth={"w": w, "width": jnp.ones(1), "weight_variance": 1.0, "noise": 0.01}
    )


@register_family(
    "blr/rbf",
    {
        "weights": Option(
            "str", "latent", "latent: weights w a site (exact posterior); collapsed: w integrated out", choices=WEIGHTS
        )
    },
    "Bayesian RBF network: Gaussian RBF features at fixed centres, Gaussian prior on the weights",
    SOURCE,
)
def _rbf_network(weights: str = "latent") -> ModelSpec:
    latent = weights == "latent"
    return ModelSpec(
        name="blr/rbf",
        summary=f"Bayesian RBF network, weights {weights}"
        + (" (exact conjugate posterior)" if latent else " (evidence sigma_w^2 Phi Phi^T + sigma_n^2 I)"),
        source=SOURCE,
        program=partial(rbf_network, weights=weights),
        simulate=simulate_rbf_network,
        data_shapes=frozen({"X": ("N", "D"), "C": ("M", "D"), "y": ("N",)}),
        default_params=frozen({"width": 1.0, "weight_variance": 1.0, "noise": 0.01}),
        capabilities=frozenset({"continuous", "conjugate"} if latent else {"continuous", "collapsed"}),
        views=frozen({"conjugate": rbf_conjugate} if latent else {}),
    )
