"""Draws from deep-GP priors (Duvenaud 2014, ch. 5): compositions of GP draws, their Jacobians, and the closed
forms the draws are checked against.

A deep GP (5.1) composes L layers f^(l): R^P -> R^D, each output an independent GP(0, SE) draw with variance
sigma^2 and lengthscale w shared by every layer and output. The *standard* architecture feeds layer l the output of
layer l-1 (P = D); the *input-connected* one (5.16) feeds it [f_C^(1:l-1)(x); x] (P = 2 D_x, layer 1 sees x).

Sampling is exact joint sampling at the N points each layer is evaluated at: a layer's values (and, when asked, its
Jacobian) at the N inputs it receives are one Gaussian vector whose covariance is the SE kernel and its derivatives
(5.13), factorised by Cholesky. Jitter is added only when the factorisation fails, the smallest of a ladder of
relative jitters that succeeds, and every layer reports the absolute jitter it added (0 when none).

The Jacobian of a composition is the product of the per-layer Jacobians (5.15; 5.17 input-connected), each an
*exact GP derivative draw* sampled jointly with the layer's values. We chose exact derivative draws over random
features because the GP derivative is Gaussian with a known covariance (5.13-5.14), so the product has exactly the
distribution Theorem 5.2.3 describes; a finite random-feature expansion would only approximate the prior, and the
Monte Carlo checks of the closed forms would then also measure the truncation. Its cost, a Cholesky of size
N (1 + P), is small for the few points a Jacobian is wanted at (one point for the singular-value spectra).

Closed forms: the moments of log|f'| for a 1-D SE layer, corrected from the printed (5.11)-(5.12)
(docs/sources/duvenaud.md#deep-derivative-moments); the input-connected deep kernel (5.22, sign corrected) and its
infinite-depth limit (5.23) in closed form through the Lambert W function (docs/sources/duvenaud.md#deep-kernel-limit;
scipy.special.lambertw, principal branch: JAX has no Lambert W, and the limit is only evaluated on fixed grids outside
compiled code).

Shapes: x (N, D_x) inputs; a draw's layers (L, N, D); Jacobians (L, N, D, D_x); jitter (L,).
"""

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from zoo.errors import ZooError

EULER_GAMMA = float(np.euler_gamma)
# Relative jitters (times the mean diagonal) tried in turn when a Cholesky fails; the first entry is none at all.
JITTER_LADDER = (0.0, 1e-12, 1e-10, 1e-8, 1e-6)


class DeepPriorError(ZooError):
    """Bad arguments to a deep-GP prior draw or deep kernel (raised before any compilation)."""


class DeepDraw(NamedTuple):
    """One draw of a deep GP at N points: ``layers`` (L, N, D) the output of layers 1..L, ``jitter`` (L,) the
    absolute jitter each layer's Cholesky needed (0 when none), ``jacobians`` (L, N, D, D_x) the Jacobian of the
    composition through layer l at each point, or None when not asked for; ``centred`` (L,) True where a layer was
    drawn as offsets from its value at the centre of its inputs (``sample_layer_offsets``), None when not allowed."""

    layers: jax.Array
    jitter: jax.Array
    jacobians: jax.Array | None = None
    centred: jax.Array | None = None


# ---------------------------------------------------------------------------------------------------- covariances
def se_gram(z: jax.Array, variance: float, lengthscale: float) -> jax.Array:
    """SE kernel (5.10, isotropic in P dimensions) on z (N, P): (N, N)."""
    d = z[:, None, :] - z[None, :, :]
    return variance * jnp.exp(-0.5 * jnp.sum(d * d, -1) / lengthscale**2)


def se_value_gradient_cov(z: jax.Array, variance: float, lengthscale: float) -> jax.Array:
    """Joint covariance of [f(z_1..N), grad f(z_1), ..., grad f(z_N)] for f ~ GP(0, SE): (N (1 + P), N (1 + P)).

    From (5.13): cov(f(a), d_j f(b)) = dk/db_j = k (a - b)_j / w^2, cov(d_i f(a), d_j f(b)) = d^2 k / da_i db_j =
    k [delta_ij / w^2 - (a - b)_i (a - b)_j / w^4]; at a = b the gradient is independent of the value, with
    variance sigma^2 / w^2 per entry (5.14).
    """
    n, p = z.shape
    w2 = lengthscale**2
    d = z[:, None, :] - z[None, :, :]  # (N, N, P): a - b
    k = variance * jnp.exp(-0.5 * jnp.sum(d * d, -1) / w2)
    value_grad = (k[:, :, None] * d / w2).reshape(n, n * p)  # rows a, columns (b, j)
    grad_grad = k[:, :, None, None] * (jnp.eye(p) / w2 - d[:, :, :, None] * d[:, :, None, :] / w2**2)
    grad_grad = grad_grad.transpose(0, 2, 1, 3).reshape(n * p, n * p)  # rows (a, i), columns (b, j)
    return jnp.block([[k, value_grad], [value_grad.T, grad_grad]])


def cholesky_when_needed(K: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(L, added): the lower Cholesky factor of K (n, n) with the smallest jitter of ``JITTER_LADDER`` (relative to
    the mean diagonal) for which it exists; ``added`` is the absolute jitter on the diagonal (0.0 when none).

    A failed factorisation is a NaN in the factor. Deep layers see inputs that have collapsed onto a few values, so
    their Grams are singular up to rounding; the ladder keeps the added variance as small as the matrix allows.
    """
    scale = jnp.mean(jnp.diagonal(K))
    eye = jnp.eye(K.shape[-1])
    ladder = jnp.asarray(JITTER_LADDER)

    def factor(i):
        return jnp.linalg.cholesky(K + ladder[i] * scale * eye)

    def failed(state):
        i, L = state
        return jnp.isnan(L).any() & (i < len(JITTER_LADDER) - 1)

    def retry(state):
        i, _ = state
        return i + 1, factor(i + 1)

    i, L = jax.lax.while_loop(failed, retry, (0, factor(0)))
    return L, ladder[i] * scale


# ---------------------------------------------------------------------------------------------------- one layer
def sample_layer(key: jax.Array, z: jax.Array, num_out: int, variance: float, lengthscale: float):
    """Values of ``num_out`` independent GP(0, SE) draws at z (N, P): ((N, num_out), jitter)."""
    L, added = cholesky_when_needed(se_gram(z, variance, lengthscale))
    return L @ jax.random.normal(key, (z.shape[0], num_out)), added


def sample_layer_with_jacobian(key: jax.Array, z: jax.Array, num_out: int, variance: float, lengthscale: float):
    """Values and Jacobians of ``num_out`` independent GP(0, SE) draws at z (N, P), sampled jointly (Lemma 5.2.2):
    ((N, num_out), (N, num_out, P), jitter)."""
    n, p = z.shape
    L, added = cholesky_when_needed(se_value_gradient_cov(z, variance, lengthscale))
    joint = L @ jax.random.normal(key, (n * (1 + p), num_out))
    values, grads = joint[:n], joint[n:].reshape(n, p, num_out)
    return values, grads.transpose(0, 2, 1), added


# Taylor features of the SE kernel (docs/sources/duvenaud.md#deep-small-spans): a layer whose inputs lie within
# TAYLOR_RADIUS lengthscales of their centre is drawn from features truncated at total degree TAYLOR_DEGREE; the
# dropped variance is at most sum_{k > 12} 0.25^k / k! < 3e-18 of the kernel's (float64 rounding).
TAYLOR_RADIUS = 0.5
TAYLOR_DEGREE = 12


def taylor_exponents(num_inputs: int, degree: int = TAYLOR_DEGREE) -> np.ndarray:
    """Every multi-index alpha (M, P) of total degree 1..degree over P inputs."""
    grids = np.stack(np.meshgrid(*[np.arange(degree + 1)] * num_inputs, indexing="ij"), -1).reshape(-1, num_inputs)
    total = grids.sum(1)
    return grids[(total >= 1) & (total <= degree)]


def offset_features(delta: jax.Array, lengthscale: float, exponents: np.ndarray) -> jax.Array:
    """Features phi (1 + M,) of one input c + delta (delta (P,)) with phi(a) . phi(b) = k(a, b) - k(a, c) - k(b, c)
    + k(c, c) for the unit-variance SE kernel: the covariance of f(c + delta) - f(c).

    From k(a, b) = e^(-|d_a|^2 / 2w^2) e^(-|d_b|^2 / 2w^2) e^(d_a . d_b / w^2) and e^(u . v) = sum_alpha u^alpha
    v^alpha / alpha!: phi = [expm1(-q), e^(-q) (delta / w)^alpha / sqrt(alpha!)] with q = |delta|^2 / 2w^2. Every
    term keeps its relative precision however small delta is (no 1 - k cancellation, unlike the Gram)."""
    u = delta / lengthscale
    q = 0.5 * jnp.sum(u * u)
    # powers u_p^k by repeated products (k = 0..degree): exact zeros and finite gradients at u = 0
    repeated = jnp.broadcast_to(u, (int(exponents.max()), *u.shape))
    powers = jnp.cumprod(jnp.concatenate([jnp.ones((1, u.shape[0])), repeated]), axis=0)
    monomials = jnp.prod(powers[exponents, np.arange(u.shape[0])], axis=1)
    norm = np.sqrt(np.prod(scipy.special.factorial(exponents), axis=1))
    return jnp.concatenate([jnp.expm1(-q)[None], jnp.exp(-q) * monomials / norm])


def sample_layer_offsets(key: jax.Array, z: jax.Array, num_out: int, variance: float, lengthscale: float):
    """Values f(z) - f(c) of ``num_out`` independent GP(0, SE) draws at z (N, P), c the mean of z, and their
    Jacobians (N, num_out, P): exact in distribution up to the truncation (TAYLOR_DEGREE), for inputs within a
    fraction of a lengthscale of c. A stationary next layer cannot see the dropped constant f(c)."""
    exponents = taylor_exponents(z.shape[1])
    delta = z - jnp.mean(z, axis=0)
    phi = jax.vmap(lambda d: offset_features(d, lengthscale, exponents))(delta)  # (N, 1 + M)
    dphi = jax.vmap(jax.jacfwd(lambda d: offset_features(d, lengthscale, exponents)))(delta)  # (N, 1 + M, P)
    xi = jnp.sqrt(variance) * jax.random.normal(key, (phi.shape[1], num_out))
    return phi @ xi, jnp.einsum("nmp,mo->nop", dphi, xi)


# ---------------------------------------------------------------------------------------------------- composition
def _validate(x, depth: int, variance: float, lengthscale: float) -> None:
    if np.ndim(x) != 2 or np.shape(x)[0] < 1 or np.shape(x)[1] < 1:
        raise DeepPriorError(f"inputs must be an (N, D) array with N, D >= 1; got shape {np.shape(x)}")
    if not np.all(np.isfinite(np.asarray(x))):
        raise DeepPriorError("inputs contain NaN or infinite values")
    if int(depth) != depth or depth < 1:
        raise DeepPriorError(f"depth must be an integer >= 1; got {depth!r}")
    if not (variance > 0 and lengthscale > 0):
        raise DeepPriorError(f"variance and lengthscale must be > 0; got {variance!r}, {lengthscale!r}")


@partial(jax.jit, static_argnames=("depth", "connected", "with_jacobian", "centre_small"))
def _draw(key, x, depth, variance, lengthscale, connected, with_jacobian, centre_small=False):
    n, dx = x.shape
    keys = jax.random.split(key, depth)

    def sample(k, z):
        """One layer at inputs z (N, P): (values (N, D), Jacobian (N, D, P) or None, jitter, centred)."""
        if not centre_small:
            if with_jacobian:
                return (*sample_layer_with_jacobian(k, z, dx, variance, lengthscale), jnp.array(False))
            out, added = sample_layer(k, z, dx, variance, lengthscale)
            return out, None, added, jnp.array(False)

        def exact(k, z):
            if with_jacobian:
                return sample_layer_with_jacobian(k, z, dx, variance, lengthscale)
            out, added = sample_layer(k, z, dx, variance, lengthscale)
            return out, jnp.zeros((n, dx, z.shape[1])), added

        def offsets(k, z):
            return (*sample_layer_offsets(k, z, dx, variance, lengthscale), jnp.zeros(()))

        small = jnp.max(jnp.linalg.norm(z - jnp.mean(z, axis=0), axis=1)) <= TAYLOR_RADIUS * lengthscale
        out, Jl, added = jax.lax.cond(small, offsets, exact, k, z)
        return out, Jl if with_jacobian else None, added, small

    first, jac1, jit1, centred1 = sample(keys[0], x)

    def layer(carry, k):
        f, J = carry
        z = jnp.concatenate([f, x], axis=1) if connected else f
        out, Jl, added, centred = sample(k, z)
        if not with_jacobian:
            return (out, None), (out, added, None, centred)
        # (5.15) J <- J^(l) J, or (5.17) J <- J^(l) [J; I] with J^(l) (D, 2D) for the input-connected net.
        inner = jnp.concatenate([J, jnp.broadcast_to(jnp.eye(dx), J.shape)], axis=1) if connected else J
        J = jnp.einsum("nij,njk->nik", Jl, inner)
        return (out, J), (out, added, J, centred)

    _, (rest, jitter, jacs, centred) = jax.lax.scan(layer, (first, jac1), keys[1:])
    layers = jnp.concatenate([first[None], rest])
    jitter = jnp.concatenate([jit1[None], jitter])
    jacobians = jnp.concatenate([jac1[None], jacs]) if with_jacobian else None
    centred = jnp.concatenate([centred1[None], centred]) if centre_small else None
    return DeepDraw(layers, jitter, jacobians, centred)


def draw(
    key: jax.Array,
    x,
    depth: int,
    variance: float,
    lengthscale: float,
    connected: bool = False,
    with_jacobian: bool = False,
    centre_small: bool = False,
) -> DeepDraw:
    """One deep-GP draw at the N points x (N, D_x) through ``depth`` layers of width D_x (see ``DeepDraw``).

    ``connected``: the input-connected architecture (5.16). ``with_jacobian``: also the Jacobian of the composition
    at each point, sampled jointly with the values (cost grows as (N (1 + P))^3 per layer, so keep N small).
    ``centre_small``: a layer whose inputs lie within TAYLOR_RADIUS lengthscales of their mean is
    drawn by ``sample_layer_offsets``, i.e. minus its value at that mean: deep standard layers contract the inputs
    far below the resolution of a jittered Gram (docs/sources/duvenaud.md#deep-small-spans). Differences between
    points, Jacobians and all later layers keep their exact distribution; layer values are then known up to an
    additive constant per layer (``centred`` marks which).
    Vectorise over draws with ``jax.vmap(lambda k: draw(k, ...))(keys)`` after validating once, or use ``draws``.
    """
    _validate(x, depth, variance, lengthscale)
    x = jnp.asarray(x, jnp.float64)
    return _draw(key, x, depth, variance, lengthscale, connected, with_jacobian, centre_small)


def draws(key, x, depth, variance, lengthscale, num_draws: int, connected=False, with_jacobian=False) -> DeepDraw:
    """``num_draws`` independent draws (vmapped): every field gains a leading axis of length num_draws."""
    _validate(x, depth, variance, lengthscale)
    if int(num_draws) != num_draws or num_draws < 1:
        raise DeepPriorError(f"num_draws must be an integer >= 1; got {num_draws!r}")
    x = jnp.asarray(x, jnp.float64)
    one = partial(
        _draw, x=x, depth=depth, variance=variance, lengthscale=lengthscale, connected=connected,
        with_jacobian=with_jacobian,
    )  # fmt: skip
    return jax.vmap(lambda k: one(k))(jax.random.split(key, num_draws))


def normalised_singular_values(J) -> np.ndarray:
    """Singular values of J (..., D, D) in decreasing order divided by the largest (Fig. 5.5): (..., D)."""
    s = np.linalg.svd(np.asarray(J), compute_uv=False)
    return s / s[..., :1]


# ---------------------------------------------------------------------------------------------------- closed forms
def log_abs_derivative_moments(variance: float, lengthscale: float, depth: int = 1) -> tuple[float, float]:
    """Mean and variance of log|d f^(1:L)/dx| for a 1-D deep GP of SE layers (corrected (5.11)-(5.12)).

    f' ~ N(0, s^2) with s^2 = sigma^2 / w^2 (5.14), so log|f'| = log s + log|Z|, Z standard normal, with
    E log|Z| = -(gamma + log 2) / 2 and V log|Z| = pi^2 / 8. The layers' derivatives are independent, so the
    composition's mean and variance are L times those (docs/sources/duvenaud.md#deep-derivative-moments).
    """
    log_s = 0.5 * np.log(variance / lengthscale**2)
    return depth * (log_s - 0.5 * (EULER_GAMMA + np.log(2.0))), depth * np.pi**2 / 8.0


def printed_log_abs_derivative_moments(variance: float, lengthscale: float, depth: int = 1) -> tuple[float, float]:
    """(5.11)-(5.12) as the thesis prints them (mean L m_log, variance L^2 v_log): kept to show they disagree."""
    a = 0.5 * np.log(variance / lengthscale**2)  # log(sigma / w)
    g, l2 = EULER_GAMMA, np.log(2.0)
    m = 2 * a - l2 - g
    v = np.pi**2 / 4 + l2**2 / 2 - g**2 - g * np.log(4.0) + 2 * a * (g + l2 - a)
    return depth * m, depth**2 * v


def connected_kernel_step(k, sq_dist):
    """One input-connected SE layer on a unit-variance kernel (5.22, sign corrected: exp(-(1 - k) - r^2 / 2);
    docs/sources/duvenaud.md#deep-kernel-limit)."""
    return np.exp(-(1.0 - np.asarray(k)) - 0.5 * np.asarray(sq_dist))


def connected_deep_kernel(sq_dist, depth: int) -> np.ndarray:
    """k^(depth)(r) of the input-connected deep kernel: SE at depth 1, then (5.22) ``depth - 1`` times."""
    if int(depth) != depth or depth < 1:
        raise DeepPriorError(f"depth must be an integer >= 1; got {depth!r}")
    sq_dist = np.asarray(sq_dist, np.float64)
    k = np.exp(-0.5 * sq_dist)
    for _ in range(depth - 1):
        k = connected_kernel_step(k, sq_dist)
    return k


def connected_kernel_limit(sq_dist) -> np.ndarray:
    """k^(inf)(r) = -W_0(-exp(-1 - r^2 / 2)), the solution of (5.23) k - log k = 1 + r^2 / 2 in (0, 1]."""
    sq_dist = np.asarray(sq_dist, np.float64)
    if np.any(sq_dist < 0) or not np.all(np.isfinite(sq_dist)):
        raise DeepPriorError("squared distances must be finite and >= 0")
    # Near r = 0 the argument approaches the branch point -1/e, where rounding it costs half the digits (scipy
    # returns NaN at it); there use the branch-point series in p = sqrt(2 (e z + 1)) = sqrt(-2 expm1(-r^2 / 2)),
    # W_0 = -1 + p - p^2/3 + 11 p^3/72 - 43 p^4/540 + O(p^5) (Corless et al. 1996, eq. 4.22), accurate to 1e-15.
    p = np.sqrt(-2.0 * np.expm1(-0.5 * sq_dist))
    series = -1.0 + p - p**2 / 3 + 11 * p**3 / 72 - 43 * p**4 / 540
    with np.errstate(invalid="ignore"):
        w = scipy.special.lambertw(-np.exp(-1.0 - 0.5 * sq_dist), 0).real
    return -np.where(p < 1e-3, series, w)


def sampled_connected_kernel_step(key: jax.Array, K, x, num_draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo estimate of one input-connected SE layer applied to the unit-variance kernel K (N, N) at x (N, D),
    and its standard errors: ((N, N), (N, N)).

    Random features of [h(x); x]: phi(x) = sqrt(2) cos(g(x) + omega . x + b), with g ~ GP(0, K) (the projection of
    the previous layer's infinitely many features h on a Gaussian direction is a GP with kernel K), omega ~ N(0, I)
    and b ~ U(0, 2 pi). Then E[phi(x) phi(x')] = E cos(g(x) - g(x') + omega . (x - x')) = exp(-(1 - K) - r^2 / 2),
    the right side of (5.22): the estimate is unbiased, and the fixed point of (5.23) is where it returns K.
    """
    x = jnp.asarray(x, jnp.float64)
    K = jnp.asarray(K, jnp.float64)
    kg, kw, kb = jax.random.split(key, 3)
    L, _ = cholesky_when_needed(K)
    g = jax.random.normal(kg, (num_draws, K.shape[0])) @ L.T
    omega = jax.random.normal(kw, (num_draws, x.shape[1]))
    b = jax.random.uniform(kb, (num_draws, 1), maxval=2 * jnp.pi)
    phi = jnp.sqrt(2.0) * jnp.cos(g + omega @ x.T + b)  # (num_draws, N)
    products = phi[:, :, None] * phi[:, None, :]
    mean = products.mean(0)
    se = products.std(0, ddof=1) / np.sqrt(num_draws)
    return np.asarray(mean), np.asarray(se)
