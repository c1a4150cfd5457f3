"""Particle filters over the state-space view (``zoo.ssm``), their log-likelihood, filtering moments and score;
engines ``pf`` (filter) and ``pf-ml`` (maximum likelihood with the filter's score).

Two filters, one trajectory at a time (``vmap`` over trajectories and independent runs):

* bootstrap (Gordon et al. 1993): resample by W_{t-1}, propagate with the transition p(x_t | x_{t-1}), weight by
  the emission p(y_t | x_t); log p(y_t | y_{1:t-1}) ≈ log mean_i p(y_t | x_t^i).
* fully adapted (McHutchon sec. 3.7, Algorithm 4; Pitt & Shephard 1999): resample by W_{t-1}^i p(y_t | x_{t-1}^i)
  (the view's ``predictive``), propagate with the optimal proposal p(x_t | x_{t-1}, y_t) (``proposal``), after
  which every weight is 1/N; log p(y_t | y_{1:t-1}) ≈ log sum_i W_{t-1}^i p(y_t | x_{t-1}^i) (eq. 3.209).
  **Printed typos corrected** (docs/sources/mchutchon.md#particle-filter): Algorithm 4 prints the increment as
  "+ log p(y_t | x_{t-1}^i)" (it is the log of the weighted mean above), and eq. 3.208 omits Sigma_eps from the
  transition variance (the view's predictive/proposal include it).

The first step of the bootstrap filter is an importance step: x_1^i ~ p(x_1), weights p(y_1 | x_1^i). The fully
adapted filter draws x_1^i ~ p(x_1 | y_1) and uses the exact log p(y_1) (Gaussian p(x_1), linear-Gaussian
emission; the view has no such piece, so ``adapted_initial_step`` derives it from ``initial`` and ``emission``).
Steps past a trajectory's end (mask False) are steps without
an observation: resample by W, propagate with the transition, no weight update and no log-likelihood increment.

Score (Fisher identity, eq. 3.210): grad log p(y_{1:T}) = E[grad log p(x_{1:T}, y_{1:T}) | y_{1:T}], an expectation of
an additive functional s_t(x_{t-1}, x_t) = grad log p(x_t | x_{t-1}) + grad log p(y_t | x_t) under the smoothing
distribution. Two particle estimates (``score_method``):

* ``"forward_smoothing"`` (default; Poyiadjis, Doucet & Singh 2011, Algorithm 2; Del Moral, Doucet & Singh 2010):
  every particle carries alpha_t^i ≈ E[sum_{s<=t} s_s | x_t = x_t^i, y_{1:t}], updated with the backward kernel
  B_t^{ij} ∝ W_{t-1}^j p(x_t^i | x_{t-1}^j) over *all* particles at t-1,
      alpha_t^i = sum_j B_t^{ij} (alpha_{t-1}^j + grad log p(x_t^i | x_{t-1}^j)) + grad log p(y_t | x_t^i),
  score = sum_i W_T^i alpha_T^i. O(N^2) per step, consistent, variance growing only linearly in T: the fix for the
  path-degeneracy bias that made ``pf-ml`` biased (A = 0.763 +- 0.003 vs ML 0.742, N = 50, T = 50).
* ``"path"`` (Poyiadjis et al. 2011, Algorithm 1; McHutchon's Algorithm 4): d_t^i = d_{t-1}^{a_t^i} + s_t along
  each genealogy path, score = sum_i W_T^i d_T^i. O(N) but its paths coalesce, so for T >> N it estimates the
  expectation under a degenerate path measure (variance quadratic in T, and a bias that learning accumulates).

Speed (docs/performance.md#particle-filters): systematic resampling is O(N) (``systematic``); normals come from the
AS241 inverse CDF (``standard_normal``: the uniforms ``jax.random.normal`` would use, a cheaper and more accurate
map); fully adapted steps evaluate the transition once per particle (``adapted_moments``).

The accumulators live in the space of the view's ``theta`` and are mapped to the parameters once at the end by a
vector-Jacobian product (exact by linearity), so the per-particle work never differentiates through ``bind``.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.smc import resampling
from jax.extend.core import Var
from jax.flatten_util import ravel_pytree
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import logsumexp
from numpyro import distributions as dist
from numpyro.distributions import biject_to

from inference.core import options as opt
from inference.core import parameter_path
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import observed_args
from inference.optimisation import adam_scan
from zoo import ssm
from zoo.errors import OptionError
from zoo.gp import small_cholesky, small_solve_lower

__all__ = [
    "AdaptedMoments",
    "FILTERS",
    "FILTER_OPTIONS",
    "FilterOutput",
    "RESAMPLERS",
    "SCORE_METHODS",
    "adapted_draw",
    "adapted_initial_step",
    "adapted_moments",
    "categorical",
    "complete_data_increment",
    "constrain",
    "depends_on_input",
    "filter_runner",
    "forward_smoothing_update",
    "gaussian_each",
    "initial_increment",
    "linear_gaussian_emission",
    "log_likelihood_and_score",
    "log_prob_each",
    "ml_runner",
    "multinomial",
    "mvn_log_prob_each",
    "ndtri",
    "normal_from_uniforms",
    "parameter_transform",
    "particle_filter",
    "pf",
    "pf_ml",
    "sample_each",
    "sample_paths",
    "shared_gaussian",
    "site_transforms",
    "standard_normal",
    "systematic",
    "take",
    "trace_path",
    "unconstrain",
]

Array = Any


def systematic(key: jax.Array, weights: Array, num_samples: int) -> Array:
    """Systematic resampling in O(N): ancestor j is the first i with C_i >= (j + u) / M (C the normalised cumulative
    weights, u ~ U[0, 1), M = num_samples), the same law as the ``searchsorted`` form (blackjax) without its
    O(M log N) binary search.

    Why it is O(N): particle i covers the points j >= s_i = floor(M C_i - u) + 1, so the ancestor of point j is
    #{i : s_i <= j}, a cumulative sum of the histogram of the (sorted) s_i: one scatter-add and two cumsums.
    """
    M = num_samples
    cdf = jnp.cumsum(weights)
    cdf = cdf / cdf[-1]  # exact 1 at the end: no point (j + u) / M < 1 falls past the last particle
    u = jax.random.uniform(key, (), dtype=cdf.dtype)
    first_point = jnp.clip(jnp.floor(M * cdf - u).astype(jnp.int32) + 1, 0, M)
    histogram = jnp.zeros(M + 1, jnp.int32).at[first_point].add(1, indices_are_sorted=True)
    return jnp.minimum(jnp.cumsum(histogram[:M]), weights.shape[0] - 1)


RESAMPLERS: dict[str, Callable] = {
    "multinomial": resampling.multinomial,
    "systematic": systematic,
    "stratified": resampling.stratified,
}
FILTERS = ("bootstrap", "fully_adapted")
SCORE_METHODS = ("forward_smoothing", "path")


class FilterOutput(NamedTuple):
    """One filter run over T steps with N particles of dimension D.

    log_likelihood (): estimate of log p(y_{1:T}); increments (T,): log p(y_t | y_{1:t-1}) estimates;
    filter_mean, filter_var (T, D): moments of p(x_t | y_{1:t}); particles (T, N, D); ancestors (T, N):
    index at t-1 of the parent of particle i at t (row 0 is the identity); log_weights (N,): final normalised
    log weights; score: gradient of log p(y_{1:T}) w.r.t. theta, a pytree like theta (zeros unless requested).
    """

    log_likelihood: Array
    increments: Array
    filter_mean: Array
    filter_var: Array
    particles: Array
    ancestors: Array
    log_weights: Array
    score: Any


# ----------------------------------------------------------------------------------------------------------------
# Random numbers: standard normals by the inverse CDF (Wichura 1988, AS241)
# ----------------------------------------------------------------------------------------------------------------

# AS241 (PPND16) rational approximations, coefficients from the lowest degree up: central |p - 1/2| <= 0.425 in
# r = 0.180625 - q^2, intermediate tail in r - 1.6, far tail (r > 5) in r - 5, with r = sqrt(-log min(p, 1 - p))
_AS241 = (
    (3.387132872796366608, 133.14166789178437745, 1971.5909503065514427, 13731.693765509461125,
     45921.953931549871457, 67265.770927008700853, 33430.575583588128105, 2509.0809287301226727),
    (1.0, 42.313330701600911252, 687.1870074920579083, 5394.1960214247511077, 21213.794301586595867,
     39307.89580009271061, 28729.085735721942674, 5226.495278852545925),
    (1.42343711074968357734, 4.6303378461565452959, 5.7694972214606914055, 3.64784832476320460504,
     1.27045825245236838258, 0.24178072517745061177, 0.0227238449892691845833, 7.7454501427834140764e-4),
    (1.0, 2.05319162663775882187, 1.6763848301838038494, 0.68976733498510000455, 0.14810397642748007459,
     0.0151986665636164571966, 5.475938084995344946e-4, 1.05075007164441684324e-9),
    (6.6579046435011037772, 5.4637849111641143699, 1.7848265399172913358, 0.29656057182850489123,
     0.026532189526576123093, 0.0012426609473880784386, 2.71155556874348757815e-5, 2.01033439929228813265e-7),
    (1.0, 0.59983220655588793769, 0.13692988092273580531, 0.0148753612908506148525, 7.868691311456132591e-4,
     1.8463183175100546818e-5, 1.4215117583164458887e-7, 2.04426310338993978564e-15),
)  # fmt: skip


def _horner(coefficients, x):
    out = jnp.full_like(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


def ndtri(p: Array) -> Array:
    """Phi^{-1}(p) for p in (0, 1) (Wichura 1988, AS241; relative error ~1e-16 in float64).

    Why not ``jax.random.normal``: it maps uniforms through ``erf_inv``, whose float64 kernel on CPU (log1p and three
    polynomial branches, all evaluated) is the largest single cost of a bootstrap step, and loses relative accuracy
    near p = 1/2 (2p - 1 cancels). AS241 is a rational function per branch and one log."""
    a, b, c, d, e, f = _AS241
    q = p - 0.5
    r_central = 0.180625 - q * q
    central = q * _horner(a, r_central) / _horner(b, r_central)
    r = jnp.sqrt(-jnp.log(jnp.minimum(p, 1.0 - p)))
    tail = jnp.where(r <= 5.0, _horner(c, r - 1.6) / _horner(d, r - 1.6), _horner(e, r - 5.0) / _horner(f, r - 5.0))
    return jnp.where(jnp.abs(q) <= 0.425, central, jnp.where(q < 0, -tail, tail))


def standard_normal(key: jax.Array, shape: tuple[int, ...]) -> Array:
    """Standard normal draws (float64) from a key (``normal_from_uniforms``)."""
    return normal_from_uniforms(jax.random.uniform(key, shape, dtype=jnp.float64))


def normal_from_uniforms(u: Array) -> Array:
    """Phi^{-1} of uniforms u in [0, 1) shifted to the midpoints (k + 1/2) 2^-52 of the float64 uniform grid, a grid
    symmetric about 1/2 that excludes 0 and 1 (so no infinite draw)."""
    return ndtri(u + 2.0**-53)


def _sample_each(make_dist: Callable, key, *batched):
    """One draw per particle from ``make_dist(*args_i)``; batched args have leading dim N."""
    keys = jax.random.split(key, batched[0].shape[0])
    return jax.vmap(lambda k, *args: make_dist(*args).sample(k))(keys, *batched)


# ----------------------------------------------------------------------------------------------------------------
# Vectorised Gaussian path: one Cholesky factor per step instead of one NumPyro MultivariateNormal per particle
# ----------------------------------------------------------------------------------------------------------------


def depends_on_input(fn: Callable, x: Array) -> bool:
    """Whether any output of ``fn(x)`` depends on ``x``, decided statically by a forward pass over its jaxpr.
    Conservative: an equation with any dependent input makes all its outputs dependent (sub-jaxprs included)."""
    jaxpr = jax.make_jaxpr(fn)(x).jaxpr
    dependent = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(isinstance(v, Var) and v in dependent for v in eqn.invars):
            dependent.update(eqn.outvars)
    return any(isinstance(v, Var) and v in dependent for v in jaxpr.outvars)


def shared_gaussian(make_dist: Callable, xs: Array):
    """``(locs (N, D), scale_tril (D, D))`` when every ``make_dist(x_i)`` is a MultivariateNormal whose scale does
    not depend on x_i (e.g. the transition, predictive and proposal of a linear-Gaussian SSM), else None.

    Why: vmapping ``make_dist`` builds one distribution per particle, i.e. N tiny Cholesky factorisations (N LAPACK
    calls on CPU) per step. With a shared scale the factor is computed once (at x_1) and the per-particle locations
    come from the vmapped ``.loc`` alone, whose Cholesky is dead code that XLA removes.
    """
    probe = make_dist(xs[0])
    if not isinstance(probe, dist.MultivariateNormal):
        return None
    if depends_on_input(lambda x: make_dist(x).scale_tril, xs[0]):
        return None
    return jax.vmap(lambda x: make_dist(x).loc)(xs), probe.scale_tril


def log_prob_each(make_dist: Callable, xs: Array, values: Array) -> Array:
    """log make_dist(x_i).log_prob(v_i) (N,) for particles xs (N, ...) and values (N, D) or one value (D,)."""
    fast = shared_gaussian(make_dist, xs)
    if fast is None:
        values = jnp.broadcast_to(values, (xs.shape[0], *values.shape[-1:]))
        if not isinstance(make_dist(xs[0]), dist.MultivariateNormal):
            return jax.vmap(lambda x, v: make_dist(x).log_prob(v))(xs, values)
        locs, tril = gaussian_each(make_dist, xs)  # per-particle scale: batched tiny solves (zoo.gp.small_*)
        z = small_solve_lower(tril, values - locs)
        half_log_det = jnp.sum(jnp.log(jnp.diagonal(tril, axis1=-2, axis2=-1)), -1)
        return -0.5 * jnp.sum(z**2, -1) - half_log_det - 0.5 * locs.shape[-1] * jnp.log(2.0 * jnp.pi)
    locs, L = fast
    z = solve_triangular(L, (values - locs).T, lower=True)  # (D, N): one triangular solve for all particles
    half_log_det = jnp.sum(jnp.log(jnp.diagonal(L)))
    return -0.5 * jnp.sum(z**2, axis=0) - half_log_det - 0.5 * L.shape[0] * jnp.log(2.0 * jnp.pi)


def gaussian_each(make_dist: Callable, xs: Array) -> tuple[Array, Array]:
    """``(locs (N, D), scale_trils (N, D, D))`` of MultivariateNormals ``make_dist(x_i)`` with per-particle scales."""
    return jax.vmap(lambda x: (make_dist(x).loc, make_dist(x).scale_tril))(xs)


def sample_each(make_dist: Callable, key: jax.Array, xs: Array) -> Array:
    """One draw (N, D) from each ``make_dist(x_i)``; shared-scale Gaussians by one matrix product, other Gaussians as
    loc_i + L_i z_i from one (N, D) standard normal draw (the law of per-particle ``.sample``, without N key splits)."""
    fast = shared_gaussian(make_dist, xs)
    if fast is not None:
        locs, L = fast
        return locs + standard_normal(key, locs.shape) @ L.T
    if isinstance(make_dist(xs[0]), dist.MultivariateNormal):
        locs, tril = gaussian_each(make_dist, xs)
        return locs + jnp.einsum("nij,nj->ni", tril, standard_normal(key, locs.shape))
    return _sample_each(make_dist, key, xs)


class AdaptedMoments(NamedTuple):
    """The pieces of one fully adapted step at particles x_{t-1}^i (N, D), for a MultivariateNormal transition and a
    linear-Gaussian emission: transition loc/scale_tril (N, D), (N, D, D); log p(y_t | x_{t-1}^i) (N,); proposal
    p(x_t | x_{t-1}^i, y_t) loc/scale_tril (N, D), (N, D, D)."""

    trans_loc: Array
    trans_tril: Array
    log_pred: Array
    post_loc: Array
    post_tril: Array


def adapted_moments(view, theta, x_prev: Array, u_prev: Array, y_t: Array, emission=None) -> AdaptedMoments | None:
    """``AdaptedMoments`` from one evaluation of the transition per particle, or None when the transition is not a
    MultivariateNormal.

    Why: the view's ``predictive``, ``proposal`` and ``transition`` each evaluate the transition moments again (for a
    GP-SSM, a GP prediction per particle), and a PGAS step needs all three (resampling weights, proposal, ancestor
    weights of the reference). Here the moments are computed once and predictive and proposal follow by the Kalman
    measurement update with the emission's (C, d, R) (``linear_gaussian_emission``; exact whenever the view offers
    the fully adapted pieces, which the contract of zoo.ssm promises only for linear-Gaussian emissions). Pass
    ``emission`` = ``linear_gaussian_emission(...)`` computed once outside a scan: it depends on theta alone."""
    transition = lambda x: view.transition(theta, x, u_prev)  # noqa: E731
    if not isinstance(transition(x_prev[0]), dist.MultivariateNormal):
        return None
    C, d, R = linear_gaussian_emission(view, theta, x_prev[0]) if emission is None else emission
    shared = shared_gaussian(transition, x_prev)
    if shared is not None:  # one covariance for all particles: one update, scales of shape (1, D, D), no (N, D, D)
        locs, L = shared
        update = jax.vmap(lambda m: ssm.condition_on_observation(m, L @ L.T, y_t, C, d, R), out_axes=(0, None, 0))
        post_loc, post_cov, log_pred = update(locs)
        return AdaptedMoments(locs, L[None], log_pred, post_loc, small_cholesky(post_cov)[None])
    locs, trils = gaussian_each(transition, x_prev)
    covs = trils @ jnp.swapaxes(trils, -1, -2)
    post_loc, post_cov, log_pred = jax.vmap(lambda m, S: ssm.condition_on_observation(m, S, y_t, C, d, R))(locs, covs)
    return AdaptedMoments(locs, trils, log_pred, post_loc, small_cholesky(post_cov))


def take(a: Array, index: Array) -> Array:
    """a[index] for per-particle arrays; a shared (leading size 1) array as it is (it broadcasts)."""
    return a if a.shape[0] == 1 else a[index]


def adapted_draw(moments: AdaptedMoments, z: Array, ancestors: Array, observed: Array) -> Array:
    """x_t^i ~ proposal of parent a^i where y_t is observed, else its transition, from standard normals z (N, D)."""
    loc = jnp.where(observed, moments.post_loc[ancestors], moments.trans_loc[ancestors])
    tril = jnp.where(observed, take(moments.post_tril, ancestors), take(moments.trans_tril, ancestors))
    return loc + (tril @ z[..., None])[..., 0]


def categorical(u: Array, log_weights: Array) -> Array:
    """One index ~ Cat(softmax(log_weights)) by inverse CDF from one uniform u in [0, 1): one pass over the weights
    (the Gumbel-max form of ``jax.random.categorical`` draws and takes two logs of N uniforms)."""
    cdf = jnp.cumsum(jnp.exp(log_weights - jnp.max(log_weights)))
    return jnp.minimum(jnp.sum(cdf <= u * cdf[-1]), log_weights.shape[0] - 1)


def multinomial(u: Array, weights: Array, num_samples: int) -> Array:
    """num_samples i.i.d. ancestors ~ Cat(weights), in sorted order, from num_samples + 1 uniforms in [0, 1): the sorted
    uniforms are normalised cumulative sums of exponentials (blackjax's ``multinomial``, after Chopin), located in the
    cumulative weights. Taking uniforms rather than a key lets a step draw all its random numbers in one call."""
    exponentials = -jnp.log1p(-u[: num_samples + 1])  # 1 - u > 0: no infinite spacing
    z = jnp.cumsum(exponentials)
    index = jnp.searchsorted(jnp.cumsum(weights), z[:-1] / z[-1])
    return jnp.clip(index, 0, weights.shape[0] - 1)


def mvn_log_prob_each(locs: Array, trils: Array, value: Array) -> Array:
    """log N(value; locs_i, trils_i trils_i^T) (N,) for one value (D,) (batched unrolled solves, zoo.gp.small_*)."""
    z = small_solve_lower(trils, value - locs)
    half_log_det = jnp.sum(jnp.log(jnp.diagonal(trils, axis1=-2, axis2=-1)), -1)
    return -0.5 * jnp.sum(z**2, -1) - half_log_det - 0.5 * locs.shape[-1] * jnp.log(2.0 * jnp.pi)


def _moments(particles, log_weights):
    w = jnp.exp(log_weights)
    mean = w @ particles
    return mean, w @ (particles - mean) ** 2


def complete_data_increment(view, theta, x_prev, u_prev, x, y, observed):
    """log p(x_t | x_{t-1}) + [observed] log p(y_t | x_t) for one particle (the summand of eq. 3.211)."""
    log_emit = view.emission(theta, x).log_prob(y)
    return view.transition(theta, x_prev, u_prev).log_prob(x) + jnp.where(observed, log_emit, 0.0)


def initial_increment(view, theta, x, y):
    return view.initial(theta).log_prob(x) + view.emission(theta, x).log_prob(y)


def linear_gaussian_emission(view: ssm.StateSpaceView, theta: Any, x_ref: Array):
    """(C (E, D), d (E,), R (E, E)) of an emission that is linear-Gaussian, y = C x + d + N(0, R).

    Adapter (the view exposes p(y_t | x_t) only as a distribution): C is the Jacobian of the emission mean at
    ``x_ref`` and R its covariance. Valid exactly when the view offers ``predictive``/``proposal``, which the
    contract of zoo.ssm promises only for linear-Gaussian emissions.
    """
    emission = view.emission(theta, x_ref)
    C = jax.jacfwd(lambda x: view.emission(theta, x).mean)(x_ref)
    return C, emission.mean - C @ x_ref, emission.covariance_matrix


def adapted_initial_step(view: ssm.StateSpaceView, theta: Any, key: jax.Array, y1: Array, num_particles: int):
    """x_1^i ~ p(x_1 | y_1) and the exact log p(y_1) for a Gaussian p(x_1) and a linear-Gaussian emission (the
    fully adapted first step: McHutchon Algorithm 4, t = 1, "log q(y_1) from the Gaussian prior";
    docs/sources/mchutchon.md#pgas). Returns (particles (N, D), log p(y_1))."""
    prior = view.initial(theta)
    m0, P0 = prior.mean, prior.covariance_matrix
    mean, cov, log_lik = ssm.condition_on_observation(m0, P0, y1, *linear_gaussian_emission(view, theta, m0))
    chol = jnp.linalg.cholesky(cov + 1e-12 * jnp.eye(cov.shape[0]))
    return mean + standard_normal(key, (num_particles, mean.shape[0])) @ chol.T, log_lik


def forward_smoothing_update(view, theta, x_prev, logW_prev, alpha_prev, u_prev, x, y_t, m_t):
    """alpha_t (N, P) from alpha_{t-1} (N, P) (Poyiadjis, Doucet & Singh 2011, Algorithm 2): x_prev (N, D) with
    filter log-weights logW_prev (N,) at t-1, new particles x (N, D); P = size of flattened theta.

    The transition-gradient term sum_j B^{ij} grad log f(x_t^i | x_{t-1}^j) is the Jacobian of
    theta -> sum_j B^{ij} log f(x_t^i | x_{t-1}^j) with B held fixed: one forward-mode pass per coordinate of theta
    over the N x N log-density matrix, never an (N, N, P) array.
    """
    flat_theta, unravel_theta = ravel_pytree(theta)

    def log_f(ft):  # (N, N): [i, j] = log p(x_t^i | x_{t-1}^j)
        th = unravel_theta(ft)
        return jax.vmap(lambda xi: log_prob_each(lambda xp: view.transition(th, xp, u_prev), x_prev, xi))(x)

    log_f_value = log_f(flat_theta)
    backward = jax.nn.softmax(logW_prev[None, :] + log_f_value, axis=1)  # B (N, N), rows sum to one
    transition_grad = jax.jacfwd(lambda ft: jnp.sum(backward * log_f(ft), axis=1))(flat_theta)  # (N, P)

    def log_emission(ft, xi):
        return jnp.where(m_t, view.emission(unravel_theta(ft), xi).log_prob(y_t), 0.0)

    emission_grad = jax.vmap(jax.grad(log_emission), in_axes=(None, 0))(flat_theta, x)  # (N, P)
    return backward @ alpha_prev + transition_grad + emission_grad


def particle_filter(
    view: ssm.StateSpaceView,
    theta: Any,
    key: jax.Array,
    y: Array,
    mask: Array,
    u: Array,
    num_particles: int,
    method: str = "fully_adapted",
    resampler: str = "systematic",
    with_score: bool = False,
    score_method: str = "forward_smoothing",
) -> FilterOutput:
    """Run one particle filter on one trajectory: y (T, E), mask (T,) bool, u (T, U). Pure; jit/vmap freely."""
    N = num_particles
    resample = RESAMPLERS[resampler]
    flat_theta, unravel_theta = ravel_pytree(theta)

    def grad_theta(fn, *args):
        """Per-particle gradients w.r.t. theta, flattened (N, P); zeros (N, 0) when no score is wanted."""
        if not with_score:
            return jnp.zeros((N, 0))
        g = jax.vmap(jax.grad(lambda ft, *a: fn(view, unravel_theta(ft), *a)), in_axes=(None,) + (0,) * len(args))
        return g(flat_theta, *args)

    k0, k_scan = jax.random.split(key)
    if method == "fully_adapted":
        x0, ll0 = adapted_initial_step(view, theta, k0, y[0], N)
        logW0 = jnp.full(N, -jnp.log(N))
    else:
        x0 = _sample_each(lambda _: view.initial(theta), k0, jnp.zeros((N, 0)))
        log_g0 = jax.vmap(lambda x: view.emission(theta, x).log_prob(y[0]))(x0)
        ll0 = logsumexp(log_g0) - jnp.log(N)
        logW0 = log_g0 - logsumexp(log_g0)
    ys = jnp.broadcast_to(y[0], (N, *y[0].shape))
    d0 = grad_theta(initial_increment, x0, ys)
    # (C, d, R) of a linear-Gaussian emission depends on theta alone: computed once, outside the scan
    emission = linear_gaussian_emission(view, theta, x0[0]) if method == "fully_adapted" else None

    def step(carry, inputs):
        x_prev, logW, d_prev = carry
        k, y_t, m_t, u_prev = inputs
        k_res, k_prop = jax.random.split(k)
        if method == "fully_adapted":
            moments = adapted_moments(view, theta, x_prev, u_prev, y_t, emission)
            if moments is None:
                log_pred = log_prob_each(lambda x: view.predictive(theta, x, u_prev), x_prev, y_t)
            else:  # one transition evaluation per particle for predictive, proposal and transition
                log_pred = moments.log_pred
            log_v = logW + jnp.where(m_t, log_pred, 0.0)
            ll_t = logsumexp(log_v)  # log sum_i W_{t-1}^i p(y_t | x_{t-1}^i)  (eq. 3.209, Alg. 4 corrected)
            anc = resample(k_res, jnp.exp(log_v - ll_t), N)
            parents = x_prev[anc]
            if moments is None:
                proposed = sample_each(lambda xp: view.proposal(theta, xp, u_prev, y_t), k_prop, parents)
                blind = sample_each(lambda xp: view.transition(theta, xp, u_prev), k_prop, parents)
                x = jnp.where(m_t, proposed, blind)
            else:
                x = adapted_draw(moments, standard_normal(k_prop, x_prev.shape), anc, m_t)
            logW_new = jnp.full(N, -jnp.log(N))
            ll_t = jnp.where(m_t, ll_t, 0.0)
        else:
            anc = resample(k_res, jnp.exp(logW), N)
            parents = x_prev[anc]
            x = sample_each(lambda xp: view.transition(theta, xp, u_prev), k_prop, parents)
            log_g = jnp.where(m_t, log_prob_each(lambda xi: view.emission(theta, xi), x, y_t), 0.0)
            ll_t = logsumexp(log_g) - jnp.log(N)
            logW_new = log_g - logsumexp(log_g)
        us = jnp.broadcast_to(u_prev, (N, *u_prev.shape))
        yts = jnp.broadcast_to(y_t, (N, *y_t.shape))
        ms = jnp.broadcast_to(m_t, (N,))
        if with_score and score_method == "forward_smoothing":
            d = forward_smoothing_update(view, theta, x_prev, logW, d_prev, u_prev, x, y_t, m_t)
        else:
            d = d_prev[anc] + grad_theta(complete_data_increment, parents, us, x, yts, ms)
        mean, var = _moments(x, logW_new)
        return (x, logW_new, d), (x, anc, ll_t, mean, var)

    T = y.shape[0]
    inputs = (jax.random.split(k_scan, T - 1), y[1:], mask[1:], u[:-1])
    (_, logW, d), (xs, ancs, lls, means, variances) = jax.lax.scan(step, (x0, logW0, d0), inputs)
    mean0, var0 = _moments(x0, logW0)
    increments = jnp.concatenate([ll0[None], lls])
    score = unravel_theta(jnp.exp(logW) @ d) if with_score else jax.tree.map(jnp.zeros_like, theta)
    return FilterOutput(
        log_likelihood=jnp.sum(increments),
        increments=increments,
        filter_mean=jnp.concatenate([mean0[None], means]),
        filter_var=jnp.concatenate([var0[None], variances]),
        particles=jnp.concatenate([x0[None], xs]),
        ancestors=jnp.concatenate([jnp.arange(N)[None], ancs]),
        log_weights=logW,
        score=score,
    )


def trace_path(particles: Array, ancestors: Array, index: Array) -> Array:
    """The path (T, D) ending at particle ``index`` at the last step, following the ancestors back."""

    def back(i, inputs):
        x_t, anc_t = inputs
        return anc_t[i], x_t[i]

    _, path = jax.lax.scan(back, index, (particles, ancestors), reverse=True)
    return path


def sample_paths(key, output: FilterOutput, num_paths: int) -> Array:
    """num_paths paths (num_paths, T, D) from the filter's genealogy, final index ~ W_T (the PF's approximation of
    p(x_{1:T} | y_{1:T}); degenerate for early t when T >> N)."""
    idx = jax.random.categorical(key, output.log_weights, shape=(num_paths,))
    return jax.vmap(lambda i: trace_path(output.particles, output.ancestors, i))(idx)


# ----------------------------------------------------------------------------------------------------------------
# Parameters as an unconstrained vector (for pf-ml)
# ----------------------------------------------------------------------------------------------------------------


def site_transforms(view: ssm.StateSpaceView, observed, names) -> dict:
    """name -> bijection from R^n onto the support of each parameter site (``biject_to``; traceable, no values)."""
    sites = ssm.parameter_sites(view, observed)
    return {name: biject_to(sites[name]["fn"].support) for name in names}


def unconstrain(transforms: dict, params: dict):
    """(phi (P,), unravel): the flat unconstrained vector of ``params`` and its map back to a dict of arrays."""
    return ravel_pytree({name: transforms[name].inv(jnp.asarray(value)) for name, value in params.items()})


def constrain(transforms: dict, unravel, phi):
    """(params dict, log |d params / d phi|) for a flat unconstrained vector phi (P,)."""
    unconstrained = unravel(phi)
    params = {name: transforms[name](value) for name, value in unconstrained.items()}
    log_jac = sum(jnp.sum(transforms[n].log_abs_det_jacobian(unconstrained[n], params[n])) for n in params)
    return params, log_jac


def parameter_transform(view: ssm.StateSpaceView, observed, params: dict):
    """``(phi0, to_params)``: the flat unconstrained vector of ``params`` and its inverse map, by each site's
    support (``biject_to``), e.g. log for variances."""
    transforms = site_transforms(view, observed, tuple(params))
    phi0, unravel = unconstrain(transforms, params)
    return phi0, lambda phi: constrain(transforms, unravel, phi)[0]


def log_likelihood_and_score(
    view, to_params, observed, phi, key, num_particles, method, resampler, score_method="forward_smoothing"
):
    """Sum over trajectories of the PF log-likelihood estimate and its Fisher-identity score w.r.t. phi."""
    y, mask, u = ssm.trajectories(observed)
    theta, theta_vjp = jax.vjp(lambda p: ssm.bind(view, to_params(p), observed), phi)
    keys = jax.random.split(key, y.shape[0])
    run = jax.vmap(
        lambda k, yk, mk, uk: particle_filter(
            view, theta, k, yk, mk, uk, num_particles, method, resampler, True, score_method
        )
    )
    out = run(keys, y, mask, u)
    score_theta = jax.tree.map(lambda s: jnp.sum(s, axis=0), out.score)
    (score_phi,) = theta_vjp(score_theta)
    return jnp.sum(out.log_likelihood), score_phi


# ----------------------------------------------------------------------------------------------------------------
# Engines
# ----------------------------------------------------------------------------------------------------------------


FILTER_OPTIONS = {
    "num_particles": opt.num_particles(1000),
    "params": opt.params(),
    "filter": opt.choice("fully_adapted", FILTERS, "bootstrap, or fully adapted where the view has the pieces"),
    "resampling": opt.choice("systematic", tuple(RESAMPLERS), "resampling scheme"),
}


def _check_filter_options(view, options):
    """What the declared options cannot say: the fully adapted filter needs the view's pieces."""
    if options["filter"] == "fully_adapted" and (view.predictive is None or view.proposal is None):
        raise OptionError("this model has no fully adapted pieces (predictive/proposal); use filter='bootstrap'")


@program_cache
def filter_runner(view, num_particles, num_samples, method, resampler):
    """Chains ``(keys (C,), params, observed) -> (paths (C, S, K, T, D), log_lik (C, K), filter_mean (C, K, T, D),
    filter_var (C, K, T, D))`` (``inference.core.chains``): C independent runs over the K trajectories."""

    def one_run(key, params, observed):
        theta = ssm.bind(view, params, observed)
        y, mask, u = ssm.trajectories(observed)
        k_f, k_p = jax.random.split(key)
        run = jax.vmap(
            lambda k, yk, mk, uk: particle_filter(view, theta, k, yk, mk, uk, num_particles, method, resampler)
        )
        out = run(jax.random.split(k_f, y.shape[0]), y, mask, u)
        paths = jax.vmap(lambda k, o: sample_paths(k, o, num_samples))(jax.random.split(k_p, y.shape[0]), out)
        return jnp.swapaxes(paths, 0, 1), out.log_likelihood, out.filter_mean, out.filter_var

    return vmapped_chains(one_run)


@jax.jit
def _run_evidence(log_lik):
    """(each run's log-likelihood (C,), log mean over runs of its exp) of log_lik (C, K): one compiled program, where
    the same few operations run one by one compiled a dozen (docs/performance.md#first-call-eager)."""
    per_run = jnp.sum(log_lik, axis=1)
    return per_run, logsumexp(per_run) - jnp.log(per_run.shape[0])


@register_engine(
    "pf",
    requires={"state_space"},
    options={
        **FILTER_OPTIONS,
        "num_chains": opt.num_chains(4),
        "num_samples": opt.num_samples(100, doc="paths drawn from the final genealogy per run"),
    },
    summary="Bootstrap / fully adapted particle filter: log-likelihood, filtering moments, genealogy paths",
    params_role="conditions",
)
def pf(spec, dataset, key, timer, **options) -> EngineOutput:
    """chain = independent filter run; posterior ``states`` (chain, draw, K, T, D) are paths of the final genealogy
    (not independent; early times degenerate); log_evidence = log mean over runs of exp(log-likelihood)."""
    view = spec.views["state_space"]
    _check_filter_options(view, options)
    runner = filter_runner(
        view,
        options["num_particles"],
        options["num_samples"],
        options["filter"],
        options["resampling"],
    )
    keys = jax.random.split(key, options["num_chains"])
    paths, log_lik, mean, var = runner.run(timer, keys, options["params"], observed_args(dataset))
    per_run, log_evidence = timer.call(_run_evidence, log_lik)
    return EngineOutput(
        posterior={ssm.STATES: paths},
        point_estimates={"filter_mean": mean, "filter_var": var, "log_likelihood": per_run},
        log_evidence=float(log_evidence),
        num_lik_evals=options["num_chains"],
    )


@program_cache
def ml_runner(view, num_particles, num_steps, method, resampler, learning_rate, score_method):
    """Chains ``(keys (C,), params, observed) -> (averaged params (C, ...), PF log-likelihoods (C, num_steps), score
    norms (C, num_steps), the iterates (C, num_steps, ...))`` (``inference.core.chains``), compiled once per
    configuration (the parameter transforms are rebuilt inside the trace from the view, so nothing unhashable is closed
    over).

    Ascent: Adam on the PF score (Poyiadjis et al. 2011 use plain gradient steps; McHutchon's Algorithm 5 is a
    derivative-only quasi-Newton line search). Adam uses derivatives only too, and its per-coordinate step normalisation
    copes with the score noise; the step is a fixed ``learning_rate`` in unconstrained units. With a fixed step the
    iterates keep fluctuating around the root of the expected score, so the estimate is their Polyak-Ruppert average
    over the second half of the steps (Polyak & Juditsky 1992).
    """

    def one_chain(key, params, observed):
        transforms = site_transforms(view, observed, tuple(params))
        phi0, unravel = unconstrain(transforms, params)

        def to_params(phi):
            return constrain(transforms, unravel, phi)[0]

        def ascent(phi, k):
            ll, score = log_likelihood_and_score(
                view, to_params, observed, phi, k, num_particles, method, resampler, score_method
            )
            return -score, (phi, ll, jnp.linalg.norm(score))

        _, (phis, lls, norms) = adam_scan(ascent, phi0, learning_rate, jax.random.split(key, num_steps))
        return to_params(jnp.mean(phis[num_steps // 2 :], axis=0)), lls, norms, jax.vmap(to_params)(phis)

    return vmapped_chains(one_chain)


@register_engine(
    "pf-ml",
    requires={"state_space"},
    options={
        **FILTER_OPTIONS,
        "num_chains": opt.num_chains(1),
        "num_particles": opt.num_particles(100),
        "num_steps": opt.num_steps(200),
        "learning_rate": opt.learning_rate(0.02),
        "score": opt.choice("forward_smoothing", SCORE_METHODS, "forward_smoothing: O(N^2), consistent; path: O(N)"),
    },
    summary="Maximum likelihood by ascent on the particle filter's Fisher-identity score (Adam)",
    params_role="starts",
)
def pf_ml(spec, dataset, key, timer, **options) -> EngineOutput:
    """``params`` is the starting point (default: the model's defaults); every site of the view is learned. The
    estimate is the average of the second half of the iterates (see ``ml_runner``); ``score`` picks the estimator
    (``forward_smoothing``, consistent, O(N^2); ``path``, O(N), degenerate for T >> N). traces: the PF
    log-likelihood estimate and the score's norm at each iterate, and the iterates themselves (``path_<site>``,
    ``inference.core.parameter_path``; the estimate is their second half's average, not the last one)."""
    view = spec.views["state_space"]
    _check_filter_options(view, options)
    runner = ml_runner(
        view,
        options["num_particles"],
        options["num_steps"],
        options["filter"],
        options["resampling"],
        float(options["learning_rate"]),
        options["score"],
    )
    keys = jax.random.split(key, options["num_chains"])
    params = {name: jnp.asarray(v) for name, v in options["params"].items()}
    learned, lls, norms, path = runner.run(timer, keys, params, observed_args(dataset))
    return EngineOutput(
        posterior={name: np.asarray(v)[:, None] for name, v in learned.items()},
        point_estimates=learned,
        traces={"log_likelihood": lls, "score_norm": norms, **parameter_path.as_traces(path)},
        num_grad_evals=options["num_chains"] * options["num_steps"],
        num_lik_evals=options["num_chains"] * options["num_steps"],
    )
