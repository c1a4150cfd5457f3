"""Exact moments of SE-kernel GP predictions at a Gaussian input ("moment matching").

E independent GPs f_a, a = 1..E, each with an SE-ARD kernel k_a(x, x') = sf2_a exp(-1/2 (x-x')^T Lambda_a^{-1} (x-x')),
Lambda_a = diag(l_a^2), are queried at an uncertain input x ~ N(mu, Sigma). For any GP whose predictive is

    m_a(x) = k_a(x, X_a) beta_a + [A x + b]_a                (optional linear mean function)
    s_a(x) = sf2_a - k_a(x, X_a) W_a k_a(X_a, x),      W_a = K_a^{-1} - B_a B_a^T

(X_a: (M, D) training or pseudo inputs, beta_a: (M,), K_a: the matrix whose Cholesky factor is ``chol``,
B_a: (M, R) a posterior square root, zero-width for an exact GP) this module returns the exact

    mean            E[f(x)]                       (E,)
    cov             Cov[f(x)]                     (E, E)   = Cov_x[m(x)] + diag E_x[s(x)]  (law of total variance)
    input_output    Cov[x, f(x)]                  (D, E)   (NOT premultiplied by Sigma^{-1}; PILCO's "C" is
                                                            Sigma^{-1} input_output, see ``input_output_gain``)

Source: McHutchon (2014) eqs. 1.28-1.30 and App. A.2 (A.28-A.41; docs/sources/mchutchon.md#moments), and the assembled
multi-output form of Deisenroth (2009)/PILCO:

    q_a,i   = sf2_a |Sigma Lambda_a^{-1} + I|^{-1/2} exp(-1/2 nu_i^T (Sigma + Lambda_a)^{-1} nu_i),  nu_i = X_a,i - mu
    mean_a  = beta_a^T q_a
    Q_ab,ij = k_a(X_a,i, mu) k_b(X_b,j, mu) |R|^{-1/2} exp(1/2 z_ij^T R^{-1} Sigma z_ij),
              R = Sigma (Lambda_a^{-1} + Lambda_b^{-1}) + I,  z_ij = Lambda_a^{-1} nu_i + Lambda_b^{-1} nu_j
    cov_ab  = beta_a^T Q_ab beta_b - mean_a mean_b + delta_ab (sf2_a - tr(W_a Q_aa))
    C_a     = Sigma (Sigma + Lambda_a)^{-1} sum_i beta_a,i q_a,i nu_i

Every determinant and quadratic form is computed from Cholesky factors of symmetric positive-definite matrices in
lengthscale-scaled coordinates (no explicit inverses), so Sigma may be singular (Sigma = 0 gives the plain GP
predictive exactly). Everything is pure jnp: jit-, grad- and vmap-compatible. Batch over inputs with
``predict_moments_batch`` (a vmap).

Constructors: ``exact_gp_predictor`` (full GP, or the pseudo-point model of the direct method with zero noise and
pseudo-targets), ``sparse_gp_predictor`` (FITC/VFE/SVGP q(u) = N(m, S), whitened or not). Helpers:
``linear_mean`` / ``identity_mean`` for a linear mean function, ``join_state_control`` to concatenate controls to the
state as one Gaussian input.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from zoo import gp
from zoo.eager import compiled_when_eager
from zoo.errors import DataError
from zoo.kernels import SquaredExponential, as_inputs

Array = Any


class SEPredictor(NamedTuple):
    """E independent SE-ARD GP predictors in the form above (shapes: E outputs, M points, D inputs, R rank).

    inputs: (E, M, D) training/pseudo inputs per output; beta: (E, M); chol: (E, M, M) lower Cholesky factor of
    K_a (with noise for an exact GP); post_sqrt: (E, M, R) with W_a = K_a^{-1} - B_a B_a^T (R may be 0);
    variance: (E,) signal variances sf2_a; lengthscale: (E, D).
    """

    inputs: Array
    beta: Array
    chol: Array
    post_sqrt: Array
    variance: Array
    lengthscale: Array


class LinearMean(NamedTuple):
    """Mean function m(x) = A x + b: A (E, D), b (E,)."""

    A: Array
    b: Array


class GaussianInputMoments(NamedTuple):
    """mean (E,) = E[f(x)], cov (E, E) = Cov[f(x)], input_output (D, E) = Cov[x, f(x)]."""

    mean: Array
    cov: Array
    input_output: Array


# ----------------------------------------------------------------------------------------------------------------
# Constructors and validation


def _hyper_arrays(variance: Array, lengthscale: Array, n_out: int, n_in: int) -> tuple[Array, Array]:
    variance = jnp.broadcast_to(jnp.asarray(variance, dtype=float), (n_out,))
    lengthscale = jnp.broadcast_to(jnp.asarray(lengthscale, dtype=float), (n_out, n_in))
    return variance, lengthscale


@compiled_when_eager
def exact_gp_predictor(X: Array, Y: Array, variance: Array, lengthscale: Array, noise_var: Array) -> SEPredictor:
    """Exact GP predictors for E outputs sharing training inputs (Rasmussen & Williams eqs. 2.25-2.26).

    X: (N, D); Y: (N, E) (or (N,) for E = 1); variance (E,) or scalar; lengthscale (E, D), (D,) or scalar;
    noise_var (E,) or scalar. beta_a = (K_a + sn2_a I)^{-1} y_a, W_a = (K_a + sn2_a I)^{-1}. With noise_var = 0
    and pseudo-targets as Y this is the pseudo-point GP of the direct method (McHutchon eq. 3.78; the expected
    variance then uses K(X~, X~)^{-1}); ``zoo.gp.cholesky`` adds its relative jitter as ``zoo.gp.predict`` does.
    """
    return _exact_gp_predictor(X, Y, variance, lengthscale, noise_var, lambda K: (gp.cholesky(K), 0.0))[0]


@compiled_when_eager
def exact_gp_predictor_with_jitter(
    X: Array, Y: Array, variance: Array, lengthscale: Array, noise_var: Array
) -> tuple[SEPredictor, Array]:
    """``exact_gp_predictor`` factorising K_a + sn2_a I without jitter unless that fails
    (``zoo.gp.cholesky_with_jitter``): returns (predictor, jitter (E,)), the absolute jitter each output needed (0.0
    when none). For a GP with noise, whose Gram matrix is positive definite unless rounding says otherwise."""
    return _exact_gp_predictor(X, Y, variance, lengthscale, noise_var, gp.cholesky_with_jitter)


def _exact_gp_predictor(X, Y, variance, lengthscale, noise_var, factorise) -> tuple[SEPredictor, Array]:
    X = as_inputs(X)
    Y = jnp.asarray(Y, dtype=float)
    Y = Y[:, None] if Y.ndim == 1 else Y
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise DataError(f"exact_gp_predictor: Y must be (N, E) with N = {X.shape[0]} rows of X; got {Y.shape}.")
    n_out, n_in = Y.shape[1], X.shape[1]
    variance, lengthscale = _hyper_arrays(variance, lengthscale, n_out, n_in)
    noise_var = jnp.broadcast_to(jnp.asarray(noise_var, dtype=float), (n_out,))

    def one_output(sf2, ell, sn2, y):
        K = SquaredExponential(sf2, ell)(X) + sn2 * jnp.eye(X.shape[0])
        L, added = factorise(K)
        return cho_solve((L, True), y), L, jnp.asarray(added, dtype=float)

    beta, chol, added = jax.vmap(one_output)(variance, lengthscale, noise_var, Y.T)
    inputs = jnp.broadcast_to(X, (n_out, *X.shape))
    return SEPredictor(inputs, beta, chol, jnp.zeros((n_out, X.shape[0], 0)), variance, lengthscale), added


@compiled_when_eager
def sparse_gp_predictor(
    Z: Array, u_mean: Array, u_sqrt: Array, variance: Array, lengthscale: Array, whitened: bool = True
) -> SEPredictor:
    """Sparse (inducing-point) GP predictors from q(u_a) = N(m_a, S_a), S_a = L_a L_a^T (Titsias 2009; Hensman 2013).

    Z: (M, D) shared or (E, M, D) per-output inducing inputs; u_mean: (E, M); u_sqrt: (E, M, M) lower factors.
    Non-whitened: u = f(Z) ~ q; predictive m(x) = k_xZ Kzz^{-1} m, s(x) = k_xx - k_xZ Kzz^{-1} (Kzz - S) Kzz^{-1} k_Zx,
    so beta = Kzz^{-1} m, B = Kzz^{-1} L. Whitened: u = Lz v with q(v) = N(m, L L^T), so beta = Lz^{-T} m and
    B = Lz^{-T} L. Kzz carries ``zoo.gp.cholesky``'s jitter.
    """
    u_mean = jnp.asarray(u_mean, dtype=float)
    u_sqrt = jnp.asarray(u_sqrt, dtype=float)
    if u_mean.ndim != 2 or u_sqrt.shape != (*u_mean.shape, u_mean.shape[1]):
        raise DataError(
            f"sparse_gp_predictor: u_mean must be (E, M) and u_sqrt (E, M, M); got {u_mean.shape}, {u_sqrt.shape}."
        )
    n_out, n_ind = u_mean.shape
    Z = jnp.asarray(Z, dtype=float)
    Z = jnp.broadcast_to(as_inputs(Z), (n_out, n_ind, Z.shape[-1] if Z.ndim > 1 else 1)) if Z.ndim < 3 else Z
    if Z.shape[:2] != (n_out, n_ind):
        raise DataError(
            f"sparse_gp_predictor: Z has shape {Z.shape}; expected (M, D) or (E, M, D) with E = {n_out}, M = {n_ind}."
        )
    variance, lengthscale = _hyper_arrays(variance, lengthscale, n_out, Z.shape[-1])

    def one_output(Za, sf2, ell, m, Ls):
        Lz = gp.cholesky(SquaredExponential(sf2, ell)(Za))
        if whitened:
            beta = solve_triangular(Lz.T, m, lower=False)
            B = solve_triangular(Lz.T, Ls, lower=False)
        else:
            beta = cho_solve((Lz, True), m)
            B = cho_solve((Lz, True), Ls)
        return beta, Lz, B

    beta, chol, B = jax.vmap(one_output)(Z, variance, lengthscale, u_mean, u_sqrt)
    return SEPredictor(Z, beta, chol, B, variance, lengthscale)


def linear_mean(A: Array, b: Array | None = None) -> LinearMean:
    """m(x) = A x + b with A (E, D) and b (E,) (zero when omitted)."""
    A = jnp.atleast_2d(jnp.asarray(A, dtype=float))
    return LinearMean(A, jnp.zeros(A.shape[0]) if b is None else jnp.asarray(b, dtype=float))


def identity_mean(n_state: int, n_control: int = 0) -> LinearMean:
    """m([x; u]) = x: the identity mean of a dynamics GP that models the state change (McHutchon M17, PILCO).

    A = [I_{n_state}, 0_{n_state x n_control}], so the GPs see the concatenated state-control input.
    """
    return linear_mean(jnp.concatenate([jnp.eye(n_state), jnp.zeros((n_state, n_control))], axis=1))


def join_state_control(
    mu_x: Array, Sigma_x: Array, mu_u: Array, Sigma_u: Array | None = None, cross_cov: Array | None = None
) -> tuple[Array, Array]:
    """The joint Gaussian over [x; u] (McHutchon eqs. 4.20-4.21): mean (Dx+Du,), covariance (Dx+Du, Dx+Du).

    Sigma_u (Du, Du) defaults to 0 (a known control); cross_cov = Cov[x, u] (Dx, Du) defaults to 0.
    """
    mu_x, mu_u = jnp.atleast_1d(mu_x), jnp.atleast_1d(mu_u)
    dx, du = mu_x.shape[0], mu_u.shape[0]
    Sigma_u = jnp.zeros((du, du)) if Sigma_u is None else jnp.asarray(Sigma_u, dtype=float)
    cross_cov = jnp.zeros((dx, du)) if cross_cov is None else jnp.asarray(cross_cov, dtype=float)
    top = jnp.concatenate([Sigma_x, cross_cov], axis=1)
    bottom = jnp.concatenate([cross_cov.T, Sigma_u], axis=1)
    return jnp.concatenate([mu_x, mu_u]), jnp.concatenate([top, bottom], axis=0)


def input_output_gain(moments: GaussianInputMoments, Sigma: Array) -> Array:
    """Sigma^{-1} Cov[x, f(x)] (D, E), PILCO's form, via a Cholesky solve (Sigma must be positive definite)."""
    return cho_solve((jnp.linalg.cholesky(Sigma), True), moments.input_output)


def check_gaussian_input(predictor: SEPredictor, mu: Array, Sigma: Array, check_psd: bool = True) -> None:
    """Raise DataError for mismatched dimensions, a non-finite or non-symmetric or non-PSD Sigma (not traced)."""
    n_in = predictor.inputs.shape[-1]
    mu, Sigma = jnp.asarray(mu), jnp.asarray(Sigma)
    if mu.shape[-1:] != (n_in,) or Sigma.shape[-2:] != (n_in, n_in) or mu.shape[:-1] != Sigma.shape[:-2]:
        raise DataError(
            f"Gaussian input: mu must be (..., {n_in}) and Sigma (..., {n_in}, {n_in}) to match the "
            f"GP inputs; got {mu.shape} and {Sigma.shape}."
        )
    if not (bool(jnp.all(jnp.isfinite(mu))) and bool(jnp.all(jnp.isfinite(Sigma)))):
        raise DataError("Gaussian input: mu or Sigma has NaN or infinite values.")
    if not bool(jnp.allclose(Sigma, jnp.swapaxes(Sigma, -1, -2))):
        raise DataError("Gaussian input: Sigma is not symmetric.")
    if check_psd:
        scale = jnp.maximum(jnp.max(jnp.abs(Sigma)), 1e-300)
        if float(jnp.min(jnp.linalg.eigvalsh(Sigma))) < -1e-10 * float(scale):
            raise DataError("Gaussian input: Sigma is not positive semi-definite.")


# ----------------------------------------------------------------------------------------------------------------
# The moments


def _expected_kernel(nu: Array, sf2: Array, ell: Array, Sigma: Array) -> tuple[Array, Array]:
    """q_i = E[k(x, X_i)] (A.30) and Sigma (Sigma + Lambda)^{-1} nu_i (for eq. 1.30). nu: (M, D) -> (M,), (M, D).

    In scaled coordinates: |Sigma Lambda^{-1} + I| = |T|, nu^T (Sigma + Lambda)^{-1} nu = v^T T^{-1} v with
    T = Lambda^{-1/2} Sigma Lambda^{-1/2} + I (SPD even for singular Sigma), v = Lambda^{-1/2} nu.
    """
    T = Sigma / jnp.outer(ell, ell) + jnp.eye(ell.shape[0])
    L = jnp.linalg.cholesky(T)
    v = nu / ell
    Tinv_v = cho_solve((L, True), v.T).T  # (M, D)
    log_q = jnp.log(sf2) - jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * jnp.sum(v * Tinv_v, -1)
    # Sigma (Sigma + Lambda)^{-1} nu = Sigma Lambda^{-1/2} T^{-1} v
    gain_nu = (Tinv_v / ell) @ Sigma
    return jnp.exp(log_q), gain_nu


def _expected_kernel_product(
    nu_a: Array, nu_b: Array, sf2_a: Array, sf2_b: Array, ell_a: Array, ell_b: Array, Sigma: Array
) -> Array:
    """Q_ij = E[k_a(x, X_a,i) k_b(x, X_b,j)] (A.32, PILCO form): (Ma, Mb).

    With P = Lambda_a^{-1} + Lambda_b^{-1}, T = P^{1/2} Sigma P^{1/2} + I and w = P^{-1/2} z:
    |R| = |T| and z^T R^{-1} Sigma z = w^T w - w^T T^{-1} w, since R^{-1} Sigma = P^{-1/2} (I - T^{-1}) P^{-1/2}.
    """
    p = 1.0 / ell_a**2 + 1.0 / ell_b**2
    sqrt_p = jnp.sqrt(p)
    T = sqrt_p[:, None] * Sigma * sqrt_p[None, :] + jnp.eye(p.shape[0])
    L = jnp.linalg.cholesky(T)
    wa = nu_a / ell_a**2 / sqrt_p  # (Ma, D): P^{-1/2} Lambda_a^{-1} nu_i
    wb = nu_b / ell_b**2 / sqrt_p
    # Quadratic form of w_ij = wa_i + wb_j under G = I - T^{-1}: expand to avoid an (Ma, Mb, D) array.
    Ga = wa - cho_solve((L, True), wa.T).T
    Gb = wb - cho_solve((L, True), wb.T).T
    quad = jnp.sum(wa * Ga, -1)[:, None] + jnp.sum(wb * Gb, -1)[None, :] + 2.0 * Ga @ wb.T
    log_ka = jnp.log(sf2_a) - 0.5 * jnp.sum((nu_a / ell_a) ** 2, -1)
    log_kb = jnp.log(sf2_b) - 0.5 * jnp.sum((nu_b / ell_b) ** 2, -1)
    log_det = jnp.sum(jnp.log(jnp.diagonal(L)))
    return jnp.exp(log_ka[:, None] + log_kb[None, :] - log_det + 0.5 * quad)


def variance_weights(predictor: SEPredictor) -> Array:
    """W_a = K_a^{-1} - B_a B_a^T (E, M, M), formed from the Cholesky factor by triangular solves against I.

    For repeated ``predict_moments`` calls with one predictor (a trajectory of T steps): E[s_a(x)] = sf2_a -
    sum_ij W_a,ij Q_aa,ij needs every entry of W_a against every entry of Q_aa, so forming W_a once (O(M^3)) and
    taking an elementwise product per call (O(M^2)) replaces a solve against the M x M matrix Q_aa per call (O(M^3));
    docs/sources/mchutchon.md#pilco-speed. Both use the same factor, so the rounding is that of the solve."""
    M = predictor.chol.shape[-1]
    inverse = jax.vmap(lambda L: cho_solve((L, True), jnp.eye(M)))(predictor.chol)
    return inverse - jnp.einsum("emr,enr->emn", predictor.post_sqrt, predictor.post_sqrt)


@compiled_when_eager
def predict_moments(
    predictor: SEPredictor,
    mu: Array,
    Sigma: Array,
    mean_fn: LinearMean | None = None,
    weights: Array | None = None,
) -> GaussianInputMoments:
    """Exact mean (E,), covariance (E, E) and input-output covariance Cov[x, f(x)] (D, E) of f(x), x ~ N(mu, Sigma).

    mu: (D,); Sigma: (D, D) symmetric PSD (not checked here, so this stays traceable: call
    ``check_gaussian_input`` on user input). The covariance is of the latent f: add diag(noise) for an observation.
    mean_fn: optional linear mean m(x) = A x + b (docs/sources/mchutchon.md#linear-mean): mean += A mu + b,
    cov += A Sigma A^T + A C + C^T A^T, input_output += Sigma A^T. weights: ``variance_weights(predictor)``
    precomputed (E, M, M), for many calls with one predictor; the result is the same.
    """
    nu = predictor.inputs - mu  # (E, M, D)
    q, gain_nu = jax.vmap(_expected_kernel, in_axes=(0, 0, 0, None))(
        nu, predictor.variance, predictor.lengthscale, Sigma
    )
    mean = jnp.sum(predictor.beta * q, -1)
    input_output = jnp.einsum("em,emd->de", predictor.beta * q, gain_nu)

    pair = jax.vmap(_expected_kernel_product, in_axes=(None, 0, None, 0, None, 0, None))
    rows = jax.vmap(pair, in_axes=(0, None, 0, None, 0, None, None))
    Q = rows(nu, nu, predictor.variance, predictor.variance, predictor.lengthscale, predictor.lengthscale, Sigma)
    cov = jnp.einsum("ai,abij,bj->ab", predictor.beta, Q, predictor.beta) - jnp.outer(mean, mean)

    def expected_variance(sf2, L, B, Qaa):
        # E[s(x)] = sf2 - tr(W Q_aa), W = K^{-1} - B B^T
        return sf2 - jnp.trace(cho_solve((L, True), Qaa)) + jnp.sum(B * (Qaa @ B))

    Q_diag = jnp.diagonal(Q, axis1=0, axis2=1).transpose(2, 0, 1)  # (E, M, M)
    if weights is None:
        e_var = jax.vmap(expected_variance)(predictor.variance, predictor.chol, predictor.post_sqrt, Q_diag)
    else:
        e_var = predictor.variance - jnp.sum(weights * Q_diag, (-2, -1))
    cov = cov + jnp.diag(e_var)
    cov = 0.5 * (cov + cov.T)

    if mean_fn is not None:
        A, b = mean_fn
        AC = A @ input_output  # (E, E)
        mean = mean + A @ mu + b
        cov = cov + A @ Sigma @ A.T + AC + AC.T
        input_output = input_output + Sigma @ A.T
    return GaussianInputMoments(mean, cov, input_output)


@compiled_when_eager
def predict_moments_batch(
    predictor: SEPredictor, mu: Array, Sigma: Array, mean_fn: LinearMean | None = None
) -> GaussianInputMoments:
    """``predict_moments`` vmapped over a batch: mu (n, D), Sigma (n, D, D) -> fields with a leading n axis."""
    return jax.vmap(predict_moments, in_axes=(None, 0, 0, None))(predictor, mu, Sigma, mean_fn)


@compiled_when_eager
def predict_point(predictor: SEPredictor, x: Array, mean_fn: LinearMean | None = None) -> tuple[Array, Array]:
    """The plain GP predictive at a deterministic input x (D,): mean (E,) and variance (E,) of f(x)."""

    def one_output(Xa, beta, L, B, sf2, ell):
        k = SquaredExponential(sf2, ell)(Xa, x[None, :])[:, 0]
        v = solve_triangular(L, k, lower=True)
        return k @ beta, sf2 - v @ v + jnp.sum((B.T @ k) ** 2)

    mean, var = jax.vmap(one_output)(*predictor)
    if mean_fn is not None:
        mean = mean + mean_fn.A @ x + mean_fn.b
    return mean, var
