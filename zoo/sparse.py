"""Sparse (inducing-point) GPs: FITC, the Titsias collapsed bound (VFE/SGPR) and SVGP.

Sources: Kaiser 2021, eqs. 2.51-2.74; Franzese 2024, eqs. 8.7-8.24 (docs/sources/kaiser.md#fitc,
docs/sources/kaiser.md#sgpr, docs/sources/kaiser.md#svgp, docs/sources/franzese.md#sparse-gp,
docs/sources/franzese.md#svgp-bound). Printed errors corrected here (docs/sources/franzese.md#errata): eq. 8.19 (SVGP
bound) has wrong signs and sigma_n^2 where sigma_n^{-2} belongs; eq. 8.20 (KL) misses -M and flips the log-det ratio;
Kaiser eq. 2.54 drops the + sigma^2 I of FITC.

Shapes: X (N, D) inputs, y (N,) targets, Z (M, D) inducing inputs, noise = sigma_n^2 (a variance). All algebra goes
through Cholesky factors (``zoo.gp.cholesky`` jitter on K_ZZ) and triangular solves; no explicit inverses. The common
building block is A = L_ZZ^{-1} K_ZX (M, N), so that Q_XX = A^T A (whitened projection).

Models (each samples the hyperparameters ``lengthscale`` (D,), ``variance``, ``noise`` with the priors of
``gp/regression``; the inducing inputs Z are an observed array holding their initial value (k-means in ``simulate``),
and ``numpyro.param("inducing_inputs", Z)`` lets SVI optimise them -- an engine that has no params (NUTS) keeps
the initial value):
  gp/fitc   y ~ N(0, Q + diag(K - Q) + s2 I)                         (Kaiser eq. 2.54 corrected)
  gp/vfe    y ~ N(0, Q + s2 I) (DTC) plus the factor -tr(K - Q)/(2 s2)  (Titsias bound, Kaiser 2.71, Franzese 8.15)
  gp/svgp   v ~ N(0, I), u = L_ZZ v (whitened), per-point analytic E_{p(f|u)} log N(y|f, s2) inside a subsampled plate;
            the ``guide`` view has q(v) = N(m, L L^T) and point masses (ML-II/MAP) on the hyperparameters; without
            minibatches the ``conjugate`` view is the exact p(v | y, hyperparameters) (``svgp_conjugate``).
"""

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular
from numpyro.distributions import constraints

from zoo import gp
from zoo.data.regression import noisy_sine
from zoo.errors import DataError
from zoo.kernels import Kernel, SquaredExponential, as_inputs
from zoo.options import Option
from zoo.registry import ConjugatePosterior, Dataset, ModelSpec, frozen, positive_int, register_family

Array = Any
LOG_2PI = jnp.log(2.0 * jnp.pi)


# ----------------------------------------------------------------------------------------------------------------
# Validation and inducing-point initialisation (host-side, before any compilation)


def check_sparse_data(X: Array, y: Array | None, Z: Array) -> None:
    """Raise DataError for mismatched dimensions or more inducing points than data (M > N)."""
    # Shapes only, so this also runs on tracers inside a program (still before XLA compilation).
    X, Z = jax.ShapeDtypeStruct(jnp.shape(X), float), jax.ShapeDtypeStruct(jnp.shape(Z), float)
    if X.ndim != 2 or Z.ndim != 2:
        raise DataError(f"sparse GP: X must be (N, D) and Z (M, D); got {X.shape} and {Z.shape}.")
    if Z.shape[1] != X.shape[1]:
        raise DataError(f"sparse GP: Z has D={Z.shape[1]} columns but X has D={X.shape[1]}.")
    if y is not None and np.shape(y) != (X.shape[0],):
        raise DataError(f"sparse GP: y must be (N,) = ({X.shape[0]},); got {np.shape(y)}.")
    if Z.shape[0] > X.shape[0]:
        raise DataError(f"sparse GP: M = {Z.shape[0]} inducing points exceed N = {X.shape[0]} data points.")


def check_covariance(S: Array, name: str = "covariance") -> None:
    """Raise DataError unless S is a finite symmetric positive semi-definite (..., M, M) matrix."""
    S = np.asarray(S, dtype=float)
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise DataError(f"{name} must be a square matrix; got shape {S.shape}.")
    if not np.all(np.isfinite(S)) or not np.allclose(S, np.swapaxes(S, -1, -2)):
        raise DataError(f"{name} must be finite and symmetric.")
    scale = max(float(np.max(np.abs(S))), 1e-300)
    if float(np.min(np.linalg.eigvalsh(S))) < -1e-10 * scale:
        raise DataError(f"{name} is not positive semi-definite (min eigenvalue {np.min(np.linalg.eigvalsh(S)):.3g}).")


def init_inducing(key: Array, X: Array, num_inducing: int, method: str = "kmeans", iters: int = 25) -> np.ndarray:
    """Initial inducing inputs (M, D): a random subset of X, or k-means centres (Lloyd, started from that subset).

    Initialise (docs/sources/franzese.md#inducing-init) from a random subset, then optimise; k-means spreads them over
    the data.
    """
    X = np.asarray(as_inputs(X))
    M = positive_int("num_inducing", num_inducing)
    if X.shape[0] < M:
        raise DataError(f"sparse GP: M = {M} inducing points exceed N = {X.shape[0]} data points.")
    if method not in ("kmeans", "subset"):
        raise DataError(f"init_inducing: method must be 'kmeans' or 'subset', got {method!r}.")
    centres = X[np.asarray(jax.random.choice(key, X.shape[0], (M,), replace=False))]
    if method == "subset":
        return centres
    for _ in range(iters):
        nearest = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
        for j in range(M):
            members = X[nearest == j]
            if len(members):  # an empty cluster keeps its centre
                centres[j] = members.mean(0)
    return centres


# ----------------------------------------------------------------------------------------------------------------
# Shared sparse algebra


def whitened_projection(kernel: Kernel, Z: Array, X: Array, jitter: float = gp.JITTER) -> tuple[Array, Array]:
    """L_ZZ (M, M) lower Cholesky of K_ZZ (+ relative jitter) and A = L_ZZ^{-1} K_ZX (M, N); Q_XX = A^T A."""
    Luu = gp.cholesky(kernel(Z), jitter)
    return Luu, solve_triangular(Luu, kernel(Z, X), lower=True)


def dtc_log_likelihood(A: Array, y: Array, noise: Array) -> Array:
    """log N(y | 0, A^T A + noise I) by the matrix determinant lemma and Woodbury (Franzese eqs. 8.12-8.13).

    A: (M, N). With LB = chol(I + A A^T / noise) and c = LB^{-1} A y / noise:
    log|Q + s2 I| = N log s2 + 2 sum log diag LB; y^T (Q + s2 I)^{-1} y = y^T y / s2 - c^T c.
    """
    return low_rank_log_likelihood(A, y, jnp.full(y.shape, noise))


def low_rank_log_likelihood(A: Array, y: Array, diag: Array) -> Array:
    """log N(y | 0, A^T A + diag(d)) for A (M, N), d (N,) positive, in O(N M^2) (Woodbury, determinant lemma)."""
    M, N = A.shape
    A_scaled = A / jnp.sqrt(diag)
    LB = jnp.linalg.cholesky(jnp.eye(M) + A_scaled @ A_scaled.T)
    c = solve_triangular(LB, A_scaled @ (y / jnp.sqrt(diag)), lower=True)
    log_det = jnp.sum(jnp.log(diag)) + 2.0 * jnp.sum(jnp.log(jnp.diagonal(LB)))
    quad = jnp.sum(y**2 / diag) - c @ c
    return -0.5 * (N * LOG_2PI + log_det + quad)


def fitc_log_likelihood(kernel: Kernel, X: Array, y: Array, Z: Array, noise: Array, jitter: float = gp.JITTER) -> Array:
    """FITC evidence log N(y | 0, Q + diag(K - Q) + s2 I) (Kaiser eq. 2.54 with the + s2 I the print drops)."""
    _, A = whitened_projection(kernel, Z, X, jitter)
    return low_rank_log_likelihood(A, y, fitc_diagonal(kernel, X, A, noise))


def fitc_diagonal(kernel: Kernel, X: Array, A: Array, noise: Array) -> Array:
    """diag(K_XX - Q_XX) + s2: (N,), clipped at 0 before adding noise (roundoff can make K - Q slightly negative)."""
    return jnp.maximum(kernel.diag(X) - jnp.sum(A**2, 0), 0.0) + noise


def vfe_bound(kernel: Kernel, X: Array, y: Array, Z: Array, noise: Array, jitter: float = gp.JITTER) -> Array:
    """Titsias' collapsed bound log N(y | 0, Q + s2 I) - tr(K - Q) / (2 s2) (Kaiser 2.71, Franzese 8.15)."""
    _, A = whitened_projection(kernel, Z, X, jitter)
    trace = jnp.sum(kernel.diag(X)) - jnp.sum(A**2)
    return dtc_log_likelihood(A, y, noise) - 0.5 * trace / noise


class WhitenedQ(NamedTuple):
    """q(v) = N(mean, scale_tril scale_tril^T) over whitened inducing values v = L_ZZ^{-1} u: (M,), (M, M)."""

    mean: Array
    scale_tril: Array


def optimal_whitened_q(kernel: Kernel, X: Array, y: Array, Z: Array, noise: Array, jitter: float = gp.JITTER):
    """Titsias' optimal q(u) (Kaiser eq. 2.70, Franzese eq. 8.23) in whitened coordinates.

    With u = L v and A = L^{-1} K_ZX: S_v = (I + A A^T / s2)^{-1}, m_v = S_v A y / s2. (Unwhitened: m_u = L m_v,
    S_u = L S_v L^T = K_ZZ B^{-1} K_ZZ with B = K_ZZ + K_ZX K_XZ / s2, as printed.) Returns WhitenedQ.
    """
    _, A = whitened_projection(kernel, Z, X, jitter)
    M = A.shape[0]
    LB = jnp.linalg.cholesky(jnp.eye(M) + A @ A.T / noise)
    mean = cho_solve((LB, True), A @ y) / noise
    # S_v = LB^{-T} LB^{-1}; its lower Cholesky factor is needed for the guide's scale_tril.
    LB_inv = solve_triangular(LB, jnp.eye(M), lower=True)
    return WhitenedQ(mean, jnp.linalg.cholesky(LB_inv.T @ LB_inv))


def kl_whitened(q: WhitenedQ) -> Array:
    """KL(N(m, S) || N(0, I)) = 1/2 (tr S + m^T m - M - log|S|) (Franzese eq. 8.20 corrected, in whitened form)."""
    M = q.mean.shape[0]
    log_det = 2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diagonal(q.scale_tril))))
    return 0.5 * (jnp.sum(q.scale_tril**2) + q.mean @ q.mean - M - log_det)


def svgp_expected_log_lik(
    kernel: Kernel, X: Array, y: Array, Z: Array, q: WhitenedQ, noise: Array, jitter: float = gp.JITTER
) -> Array:
    """Per-point E_{q(f_n)} log N(y_n | f_n, s2): (N,) (Franzese eq. 8.19 corrected; Hensman et al. 2013).

    q(f_n) = N(a_n^T m, k_nn - a_n^T a_n + a_n^T S a_n) with a_n = L_ZZ^{-1} k(Z, x_n) (whitened); the expectation is
    log N(y_n | a_n^T m, s2) - (k_nn - |a_n|^2 + |L^T a_n|^2) / (2 s2).
    """
    _, A = whitened_projection(kernel, Z, X, jitter)
    k_tilde = kernel.diag(X) - jnp.sum(A**2, 0)
    s_quad = jnp.sum((q.scale_tril.T @ A) ** 2, 0)
    mean = A.T @ q.mean
    return -0.5 * (LOG_2PI + jnp.log(noise) + (y - mean) ** 2 / noise) - 0.5 * (k_tilde + s_quad) / noise


def svgp_elbo(
    kernel: Kernel, X: Array, y: Array, Z: Array, q: WhitenedQ, noise: Array, jitter: float = gp.JITTER
) -> Array:
    """The SVGP bound sum_n E_q log p(y_n | f_n) - KL(q(v) || p(v)) (Franzese eqs. 8.19-8.20 corrected)."""
    return jnp.sum(svgp_expected_log_lik(kernel, X, y, Z, q, noise, jitter)) - kl_whitened(q)


def sparse_predict(kernel: Kernel, Z: Array, q: WhitenedQ, X_new: Array, jitter: float = gp.JITTER):
    """q(f*) = N(a^T m, k** - a^T a + a^T S a), a = L_ZZ^{-1} k(Z, x*) (Franzese eq. 8.22, whitened): mean, var (n,).

    For VFE pass ``optimal_whitened_q``; this reproduces the DTC/VFE predictive (Franzese eqs. 8.7-8.11, 8.24).
    """
    _, A = whitened_projection(kernel, Z, X_new, jitter)
    var = kernel.diag(X_new) - jnp.sum(A**2, 0) + jnp.sum((q.scale_tril.T @ A) ** 2, 0)
    return gp.GaussianPosterior(A.T @ q.mean, var)


def fitc_predict(kernel: Kernel, X: Array, y: Array, Z: Array, noise: Array, X_new: Array, jitter: float = gp.JITTER):
    """FITC predictive (Kaiser eq. 2.57): mean K*u B^{-1} Kuf Lam^{-1} y, var k** - K*u (Kuu^{-1} - B^{-1}) Ku*.

    Whitened: with A = L^{-1} K_ZX, Lam = diag(K - Q) + s2 and LB = chol(I + A Lam^{-1} A^T), a* = L^{-1} k(Z, x*):
    mean = a*^T LB^{-T} LB^{-1} A Lam^{-1} y, var = k** - |a*|^2 + |LB^{-1} a*|^2. Returns mean, var (n,).
    """
    Luu, A = whitened_projection(kernel, Z, X, jitter)
    lam = fitc_diagonal(kernel, X, A, noise)
    LB = jnp.linalg.cholesky(jnp.eye(A.shape[0]) + (A / lam) @ A.T)
    a_star = solve_triangular(Luu, kernel(Z, X_new), lower=True)
    mean = a_star.T @ cho_solve((LB, True), A @ (y / lam))
    var = kernel.diag(X_new) - jnp.sum(a_star**2, 0) + jnp.sum(solve_triangular(LB, a_star, lower=True) ** 2, 0)
    return gp.GaussianPosterior(mean, var)


# ----------------------------------------------------------------------------------------------------------------
# NumPyro programs


def _hyperparameters(D: int) -> tuple[Kernel, Array]:
    """Sites ``lengthscale`` (D,), ``variance``, ``noise`` with the priors of gp/regression (Franzese 1.12 (a))."""
    lengthscale = numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1))
    variance = numpyro.sample("variance", dist.LogNormal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.LogNormal(-2.0, 1.0))
    return SquaredExponential(variance, lengthscale), noise


def _inducing_inputs(X, Z):
    """Z as an optimisable ``numpyro.param`` initialised at the given Z (checked against X before tracing)."""
    check_sparse_data(X, None, Z)
    return numpyro.param("inducing_inputs", Z)


def fitc(X, Z, y=None):
    """FITC: y ~ N(0, Q_XX + diag(K_XX - Q_XX) + s2 I) as a low-rank-plus-diagonal Gaussian (Kaiser 2.52-2.54)."""
    kernel, noise = _hyperparameters(X.shape[1])
    Z = _inducing_inputs(X, Z)
    _, A = whitened_projection(kernel, Z, X)
    diag = fitc_diagonal(kernel, X, A, noise)
    numpyro.sample("y", dist.LowRankMultivariateNormal(jnp.zeros(X.shape[0]), A.T, diag), obs=y)


def vfe(X, Z, y=None):
    """Titsias VFE/SGPR: the DTC likelihood y ~ N(0, Q + s2 I) plus the trace factor -tr(K - Q)/(2 s2).

    The log joint is log p(theta) + the collapsed bound (Kaiser 2.71; Franzese 8.15), so MAP/ML-II on it is VFE
    training. (Prior predictive draws come from DTC; the trace term is not part of a generative model.)
    """
    kernel, noise = _hyperparameters(X.shape[1])
    Z = _inducing_inputs(X, Z)
    _, A = whitened_projection(kernel, Z, X)
    numpyro.sample("y", dist.LowRankMultivariateNormal(jnp.zeros(X.shape[0]), A.T, jnp.full(X.shape[0], noise)), obs=y)
    numpyro.factor("vfe_trace", -0.5 * (jnp.sum(kernel.diag(X)) - jnp.sum(A**2)) / noise)


def svgp(X, Z, y=None, batch_size=None):
    """SVGP, whitened (Franzese 1.12 (f); Hensman et al. 2013): v ~ N(0, I_M), u = L_ZZ v.

    Inside ``plate("data", N, subsample_size=batch_size)`` (NumPyro scales by N/B, so the minibatch ELBO is
    unbiased) each point contributes log N(y_n | a_n^T v, s2) - k~_nn / (2 s2), the analytic E_{p(f_n|u)} of the
    Gaussian log-likelihood (NOT y_n ~ N(a_n^T v, k~_nn + s2), which would be a FITC-type bound:
    docs/sources/franzese.md#svgp-pitfall). Under the guide q(v) = N(m, S) the expectation adds the a_n^T S a_n / (2 s2)
    term, giving Franzese eq. 8.19.
    """
    kernel, noise = _hyperparameters(X.shape[1])
    Z = _inducing_inputs(X, Z)
    M, N = Z.shape[0], X.shape[0]
    v = numpyro.sample("v", dist.Normal(0.0, 1.0).expand([M]).to_event(1))
    with numpyro.plate("data", N, subsample_size=batch_size) as idx:
        Xb = X[idx]
        _, A = whitened_projection(kernel, Z, Xb)  # A (M, B)
        k_tilde = kernel.diag(Xb) - jnp.sum(A**2, 0)
        numpyro.sample("y", dist.Normal(A.T @ v, jnp.sqrt(noise)), obs=None if y is None else y[idx])
        numpyro.factor("svgp_trace", -0.5 * k_tilde / noise)


def svgp_conjugate(params, X, Z, y) -> ConjugatePosterior:
    """The exact posterior of ``svgp``'s whitened inducing values v given the hyperparameters, all N points in the
    plate (no minibatch): the program's log joint in v is log N(v | 0, I) + sum_n log N(y_n | a_n^T v, s2) + a
    constant, a Gaussian likelihood with design A^T, so p(v | y) is Titsias' optimal q(v) (``optimal_whitened_q``;
    Kaiser eq. 2.70, Franzese eq. 8.23) and the evidence integral over v is the collapsed VFE bound
    log N(y | 0, Q + s2 I) - tr(K - Q) / (2 s2) (``vfe_bound``; Kaiser eq. 2.71): the ``gp/vfe`` program's log
    likelihood at the same hyperparameters. The relative jitter on K_ZZ is part of both programs (``gp.cholesky``),
    so ``jitter`` is 0. X (N, D), Z (M, D), y (N,); the latent vector is v (M,)."""
    kernel = SquaredExponential(params["variance"], params["lengthscale"])
    q = optimal_whitened_q(kernel, X, y, Z, params["noise"])
    log_evidence = vfe_bound(kernel, X, y, Z, params["noise"])
    return ConjugatePosterior(q.mean, q.scale_tril @ q.scale_tril.T, lambda v: {"v": v}, log_evidence)


def svgp_guide(X, Z, y=None, batch_size=None):
    """q(v) = N(q_mean, q_scale_tril q_scale_tril^T) and point masses on the hyperparameters (ML-II/MAP).

    Hyperparameters are ``numpyro.param`` values (positive constraints) under Delta sites, so SVI with
    guide="model" learns them jointly with q(v) and the inducing inputs.
    """
    M, D = Z.shape
    for name, init, shape in (("lengthscale", 1.0, (D,)), ("variance", 1.0, ()), ("noise", 0.1, ())):
        value = numpyro.param(f"{name}_map", jnp.full(shape, init), constraint=constraints.positive)
        numpyro.sample(name, dist.Delta(value, event_dim=len(shape)))
    mean = numpyro.param("q_mean", jnp.zeros(M))
    scale_tril = numpyro.param("q_scale_tril", jnp.eye(M), constraint=constraints.lower_cholesky)
    numpyro.sample("v", dist.MultivariateNormal(mean, scale_tril=scale_tril))


# ----------------------------------------------------------------------------------------------------------------
# Data and registration

DEFAULT_INDUCING = 10


def simulate_sparse(key, n: int = 200, d: int = 1, m: int = DEFAULT_INDUCING, n_test: int = 100) -> Dataset:
    """Noisy sine sin(2x) on [-3, 3]^d with noise std 0.3 (as gp/regression); Z = k-means centres of X (M = m)."""
    n, d, m, n_test = (positive_int(k, v) for k, v in (("n", n), ("d", d), ("m", m), ("n_test", n_test)))
    k_train, k_test, k_z = jax.random.split(key, 3)
    X, f, y = noisy_sine(k_train, n, -3.0, 3.0, 1.0 / np.pi, 0.3, d)
    X_test, _, y_test = noisy_sine(k_test, n_test, -3.0, 3.0, 1.0 / np.pi, 0.3, d)
    Z = init_inducing(k_z, X, m, "kmeans")
    return Dataset(observed={"X": X, "y": y, "Z": Z}, truth={"f": f, "noise": 0.09}, test={"X": X_test, "y": y_test})


SPARSE_SHAPES = frozen({"X": ("N", "D"), "Z": ("M", "D"), "y": ("N",)})
SPARSE_DEFAULTS = frozen({"lengthscale": 1.0, "variance": 1.0, "noise": 0.1})

INDUCING_OPTION = Option("int", DEFAULT_INDUCING, "M, inducing inputs of simulated data (k-means of X)", minimum=1)
BATCH_OPTION = Option("int", None, "minibatch size of the data plate (default: all points)", minimum=1, optional=True)


def _sparse_spec(name, program, summary, source, num_inducing, views=None, capabilities=("continuous",)):
    return ModelSpec(
        name=name,
        summary=summary,
        source=source,
        program=program,
        simulate=partial(simulate_sparse, m=num_inducing),
        data_shapes=SPARSE_SHAPES,
        default_params=SPARSE_DEFAULTS,
        capabilities=frozenset(capabilities),
        views=frozen(views or {}),
    )


FITC_SOURCE = "Kaiser 2021, sec. 2.5 (eqs. 2.51-2.57)"
VFE_SOURCE = "Kaiser 2021, sec. 2.6 (eqs. 2.58-2.71); Franzese 2024, sec. 8.1 (eqs. 8.12-8.15)"
SVGP_SOURCE = "Kaiser 2021, sec. 2.6 (eqs. 2.72-2.74); Franzese 2024, sec. 8.2 (eqs. 8.16-8.22)"


@register_family(
    "gp/fitc", {"num_inducing": INDUCING_OPTION}, "FITC sparse GP; inducing inputs optimisable", FITC_SOURCE
)
def _fitc(num_inducing: int) -> ModelSpec:
    summary = "FITC sparse GP: y ~ N(0, Q + diag(K - Q) + s2 I); inducing inputs Z optimisable"
    return _sparse_spec("gp/fitc", fitc, summary, FITC_SOURCE, num_inducing, capabilities=("continuous", "collapsed"))


@register_family("gp/vfe", {"num_inducing": INDUCING_OPTION}, "Titsias collapsed VFE/SGPR bound", VFE_SOURCE)
def _vfe(num_inducing: int) -> ModelSpec:
    summary = "Titsias collapsed VFE/SGPR bound: DTC likelihood plus -tr(K - Q)/(2 s2)"
    return _sparse_spec("gp/vfe", vfe, summary, VFE_SOURCE, num_inducing, capabilities=("continuous", "collapsed"))


@register_family(
    "gp/svgp",
    {"num_inducing": INDUCING_OPTION, "batch_size": BATCH_OPTION},
    "SVGP, whitened q(v), minibatch plate (batch_size); guide view",
    SVGP_SOURCE,
)
def _svgp(num_inducing: int, batch_size: int | None) -> ModelSpec:
    summary = "SVGP, whitened q(v) = N(m, LL^T), minibatch plate; guide view has q(v) and MAP hypers"
    views = {"guide": partial(svgp_guide, batch_size=batch_size)}
    capabilities = ("continuous",)
    if batch_size is None:  # a minibatch plate scales the likelihood by N/B per draw: no closed form then
        views["conjugate"] = svgp_conjugate
        capabilities += ("conjugate",)
    return _sparse_spec(
        "gp/svgp", partial(svgp, batch_size=batch_size), summary, SVGP_SOURCE, num_inducing, views, capabilities
    )


def svgp_from(estimates) -> tuple[Kernel, Array, Array, WhitenedQ]:
    """(kernel, noise variance, inducing inputs Z, q(v)) of a gp/svgp fit with its guide (one chain of an ``svi``
    result's point estimates)."""
    value = {name: jnp.asarray(estimates[name]) for name in estimates.data_vars}
    kernel = SquaredExponential(value["variance_map"], value["lengthscale_map"])
    return kernel, value["noise_map"], value["inducing_inputs"], WhitenedQ(value["q_mean"], value["q_scale_tril"])
