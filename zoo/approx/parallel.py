"""The exact GP evidence and predictions of 1-D state-space kernels in O(N) work and O(log N) depth: the
parallel-in-time Kalman filter and RTS smoother of Särkkä & García-Fernández (2021, "Temporal parallelization of
Bayesian smoothers", IEEE TAC 66(1):299-306, arXiv:1905.13002, Sec. IV) by ``jax.lax.associative_scan``
(docs/approximations.md#parallel).

Why our own: tinygp's quasiseparable solver (``zoo.approx.quasisep``) is a sequential ``lax.scan``, one step per
point; on a GPU each step costs a kernel launch and it ran 14-35x slower on an H200 than on a 2-core CPU
(docs/performance.md#gpu). The kernels, their SDEs and the sums/products of SDEs are still tinygp's
(``kernels.quasisep``: h, P_inf and the transition matrices); only the solve is written here.

The model at sorted inputs x_1 <= ... <= x_N, state s_k of size J:

    s_1 ~ N(0, P_inf),  s_k = A_k s_{k-1} + q_k, q_k ~ N(0, Q_k), Q_k = P_inf - A_k P_inf A_k^T,  y_k = h^T s_k + e_k,

A_k = exp(F (x_k - x_{k-1})) and e_k ~ N(0, noise_k). Writing A_1 = 0 and Q_1 = P_inf makes the first point an
ordinary step, so one formula gives every filtering element (the paper's eqs. for k > 1 with F_{k-1} = A_k):

    S_k = h^T Q_k h + r_k,  K_k = Q_k h / S_k,
    a_k = (A = (I - K_k h^T) A_k,  b = K_k y_k,  C = Q_k - K_k S_k K_k^T,  eta = A_k^T h y_k / S_k,
           J = A_k^T h h^T A_k / S_k),

combined by the associative operator (i before j; M = I + C_i J_j)

    A_ij = A_j M^-1 A_i,  b_ij = A_j M^-1 (b_i + C_i eta_j) + b_j,  C_ij = A_j M^-1 C_i A_j^T + C_j,
    eta_ij = A_i^T M^-T (eta_j - J_j b_i) + eta_i,  J_ij = A_i^T M^-T J_j A_i + J_i.

The prefix a_1 x ... x a_k holds the filtered mean (b) and covariance (C) at x_k. The log evidence is then the sum of
the one-step predictive densities log N(y_k | h^T A_k m_{k-1}, h^T (A_k P_{k-1} A_k^T + Q_k) h + r_k), each from the
previous filtered moments: a map, not a scan. The smoother's elements (k < N; P^-_{k+1} the predicted covariance)

    E_k = P_k A_{k+1}^T (P^-_{k+1})^-1,  g_k = m_k - E_k A_{k+1} m_k,  L_k = P_k - E_k P^-_{k+1} E_k^T,

with (0, m_N, P_N) at k = N, combine as (E_i E_j, E_i g_j + g_i, E_i L_j E_i^T + L_i) in a reverse scan, the suffix
a_k x ... x a_N holding the smoothed mean (g) and covariance (L). A point with no observation (a test input) has
h = 0 in its element: the filter only propagates through it, and the smoother returns the posterior there.

Both scans do O(N) operator applications of J x J solves and products in O(log N) rounds; on a CPU that is a few
times the work of the sequential scan (docs/performance.md#approximation-ladder), on a GPU the rounds are what counts.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints
from tinygp.solvers.quasisep.block import Block

from zoo.approx import quasisep
from zoo.kernels import Kernel

Array = Any
NAME = "quasisep-parallel"


def check_kernel(kernel: Kernel) -> Kernel:
    """The kernels of ``zoo.approx.quasisep`` (the same SDEs), with this rung's name in the error."""
    return quasisep.check_kernel(kernel, approx=NAME)


def _dense(matrix) -> Array:
    """A tinygp state matrix as an array (a ``Sum`` kernel's are block-diagonal ``Block`` objects)."""
    return matrix.to_dense() if isinstance(matrix, Block) else jnp.asarray(matrix)


def state_space(kernel: Kernel, x: Array) -> tuple[Array, Array, Array]:
    """(h (N, J), A (N, J, J), Q (N, J, J)) of ``kernel`` at sorted 1-D inputs x (N,), with A_1 = 0 and Q_1 = P_inf
    (module docstring). tinygp's ``transition_matrix(x1, x2)`` is the transpose of exp(F (x2 - x1)): its kernel
    value is h^T P_inf T h (``Quasisep.evaluate``), ours h^T A P_inf h."""
    k = quasisep.to_tinygp(kernel)
    p_inf = _dense(k.stationary_covariance())
    h = jax.vmap(k.observation_model)(x)
    A = jax.vmap(lambda a, b: _dense(k.transition_matrix(a, b)).T)(x[:-1], x[1:])
    A = jnp.concatenate([jnp.zeros_like(p_inf)[None], A])
    Q = p_inf - A @ p_inf @ jnp.swapaxes(A, -1, -2)
    return h, A, Q


def _t(m: Array) -> Array:
    return jnp.swapaxes(m, -1, -2)


def _sym(m: Array) -> Array:
    return 0.5 * (m + _t(m))


def _outer(u: Array, v: Array) -> Array:
    return u[..., :, None] * v[..., None, :]


def _mv(m: Array, v: Array) -> Array:
    return jnp.einsum("...ij,...j->...i", m, v)


def filtering_elements(h: Array, A: Array, Q: Array, y: Array, r: Array):
    """The elements a_k = (A, b, C, eta, J) of the module docstring, batched over k: h (N, J), A and Q (N, J, J),
    y and r (N,) (an unobserved point: h = 0 there)."""
    S = jnp.einsum("ni,nij,nj->n", h, Q, h) + r
    K = _mv(Q, h) / S[:, None]
    eye = jnp.eye(h.shape[1])
    Ah = _mv(_t(A), h)
    return (
        (eye - _outer(K, h)) @ A,
        K * y[:, None],
        _sym(Q - _outer(K, K) * S[:, None, None]),
        Ah * (y / S)[:, None],
        _outer(Ah, Ah) / S[:, None, None],
    )


@jax.custom_jvp
def _solves(M: Array, left: Array, right: Array) -> tuple[Array, Array]:
    """(left M^-1, M^-1 right) for batches of J x J matrices, by one pivoted LU of M."""
    lu = jax.scipy.linalg.lu_factor(M)
    return _t(jax.scipy.linalg.lu_solve(lu, _t(left), trans=1)), jax.scipy.linalg.lu_solve(lu, right)


@_solves.defjvp
def _solves_jvp(primals, tangents):
    """d(X M^-1) = (dX - X M^-1 dM) M^-1 and d(M^-1 Y) = M^-1 (dY - dM M^-1 Y), by solves with the primal LU rather
    than by differentiating the factorisation (a smaller compiled gradient)."""
    M, left, right = primals
    dM, dleft, dright = tangents
    lu = jax.scipy.linalg.lu_factor(M)
    X = _t(jax.scipy.linalg.lu_solve(lu, _t(left), trans=1))
    Y = jax.scipy.linalg.lu_solve(lu, right)
    dX = _t(jax.scipy.linalg.lu_solve(lu, _t(dleft - X @ dM), trans=1))
    dY = jax.scipy.linalg.lu_solve(lu, dright - dM @ Y)
    return (X, Y), (dX, dY)


def combine_filtering(earlier, later):
    """a_i x a_j (i the earlier block, j the later), batched: the operator of the module docstring."""
    A_i, b_i, C_i, eta_i, J_i = earlier
    A_j, b_j, C_j, eta_j, J_j = later
    AjM, MAi = _solves(jnp.eye(A_i.shape[-1]) + C_i @ J_j, A_j, A_i)  # A_j M^-1, M^-1 (A_i^T M^-T: its transpose)
    return (
        AjM @ A_i,
        _mv(AjM, b_i + _mv(C_i, eta_j)) + b_j,
        _sym(AjM @ C_i @ _t(A_j) + C_j),
        _mv(_t(MAi), eta_j - _mv(J_j, b_i)) + eta_i,
        _sym(_t(MAi) @ J_j @ A_i + J_i),
    )


def kalman_filter(h: Array, A: Array, Q: Array, y: Array, r: Array):
    """(filtered means (N, J), covariances (N, J, J), predicted means, predicted covariances) by one parallel scan."""
    _, m, P, _, _ = jax.lax.associative_scan(combine_filtering, filtering_elements(h, A, Q, y, r))
    m_prev = jnp.concatenate([jnp.zeros_like(m[:1]), m[:-1]])
    P_prev = jnp.concatenate([jnp.zeros_like(P[:1]), P[:-1]])
    return m, P, _mv(A, m_prev), _sym(A @ P_prev @ _t(A) + Q)


def log_likelihood(h: Array, A: Array, Q: Array, y: Array, r: Array, observed: Array | None = None) -> Array:
    """sum_k log N(y_k | h^T m^-_k, h^T P^-_k h + r_k) over the observed points (all when ``observed`` is None)."""
    _, _, m_pred, P_pred = kalman_filter(h, A, Q, y, r)
    mean = jnp.sum(h * m_pred, -1)
    var = jnp.einsum("ni,nij,nj->n", h, P_pred, h) + r
    terms = -0.5 * (jnp.log(2.0 * jnp.pi * var) + (y - mean) ** 2 / var)
    return jnp.sum(terms if observed is None else jnp.where(observed, terms, 0.0))


def combine_smoothing(later, earlier):
    """a_i x a_j for the smoother's reverse scan: ``associative_scan(..., reverse=True)`` hands the block of later
    points first."""
    E_i, g_i, L_i = earlier
    E_j, g_j, L_j = later
    return E_i @ E_j, _mv(E_i, g_j) + g_i, _sym(E_i @ L_j @ _t(E_i) + L_i)


def rts_smoother(A: Array, m: Array, P: Array, m_pred: Array, P_pred: Array) -> tuple[Array, Array]:
    """(smoothed means (N, J), covariances (N, J, J)) from the filter's output by one reverse parallel scan."""
    A_next, P_next, m_next = A[1:], P_pred[1:], m_pred[1:]
    E = _t(jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(P_next), A_next @ P[:-1]))  # P_k A^T (P^-)^-1
    g = m[:-1] - _mv(E, m_next)
    L = _sym(P[:-1] - E @ P_next @ _t(E))
    E = jnp.concatenate([E, jnp.zeros_like(E[:1])])
    g, L = jnp.concatenate([g, m[-1:]]), jnp.concatenate([L, P[-1:]])
    _, mean, cov = jax.lax.associative_scan(combine_smoothing, (E, g, L), reverse=True)
    return mean, cov


def _sort(x: Array) -> Array:
    """The permutation that sorts x (N,): the identity when x is sorted already (``lax.cond`` skips the sort)."""
    return jax.lax.cond(jnp.all(x[1:] >= x[:-1]), lambda: jnp.arange(x.shape[0]), lambda: jnp.argsort(x))


class ParallelQuasisepEvidence(dist.Distribution):
    """N(0, K + noise I) over (n,) vectors, K the Gram matrix of ``kernel`` at 1-D inputs ``x``, its log density by
    the parallel Kalman filter (``log_likelihood``). Draws come from tinygp's sampler (``zoo.approx.quasisep``): a
    prior draw is not what this rung is for."""

    support = constraints.real_vector

    def __init__(self, kernel: Kernel, x: Array, noise: Array, validate_args=None):
        x = jnp.asarray(x)
        self.kernel, self.x, self.noise = kernel, x, noise
        self.order = _sort(x)
        self.h, self.A, self.Q = state_space(kernel, x[self.order])
        super().__init__(batch_shape=(), event_shape=x.shape, validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return quasisep.QuasisepEvidence(self.kernel, self.x, self.noise).sample(key, sample_shape)

    def log_prob(self, value):
        value = jnp.asarray(value)[..., self.order]
        r = jnp.broadcast_to(self.noise, value.shape[-1:])[self.order]

        def one(y):
            return log_likelihood(self.h, self.A, self.Q, y, r)

        if value.ndim == 1:
            return one(value)
        return jax.vmap(one)(value.reshape(-1, value.shape[-1])).reshape(value.shape[:-1])


def evidence(kernel: Kernel, X: Array, noise: Array) -> ParallelQuasisepEvidence:
    """The evidence distribution of y at inputs X (N, 1) for the regression program."""
    quasisep.check_inputs(X.shape[1], approx=NAME)
    return ParallelQuasisepEvidence(kernel, X[:, 0], noise)


def predict(kernel: Kernel, X: Array, y: Array, noise: Array, X_new: Array) -> tuple[Array, Array]:
    """(mean (M,), variance (M,)) of f at X_new (M, 1) given y at X (N, 1): the test inputs join the training ones as
    unobserved points (h = 0 in their filtering elements), and the parallel smoother gives the posterior of the state
    there. Exact: it equals ``zoo.gp.predict``."""
    quasisep.check_inputs(X.shape[1], approx=NAME)
    n = X.shape[0]
    x = jnp.concatenate([jnp.asarray(X)[:, 0], jnp.asarray(X_new)[:, 0]])
    observed = jnp.arange(x.shape[0]) < n
    order = jnp.argsort(x, stable=True)
    h, A, Q = state_space(kernel, x[order])
    seen = observed[order]
    y_all = jnp.concatenate([jnp.asarray(y), jnp.zeros(X_new.shape[0])])[order]
    r = jnp.where(seen, jnp.broadcast_to(noise, x.shape)[order], 1.0)
    m, P, m_pred, P_pred = kalman_filter(h * seen[:, None], A, Q, y_all, r)
    mean, cov = rts_smoother(A, m, P, m_pred, P_pred)
    where = jnp.argsort(order)[n:]  # each test point's place in the sorted sequence
    h_new = h[where]
    return jnp.sum(h_new * mean[where], -1), jnp.einsum("ni,nij,nj->n", h_new, cov[where], h_new)
