"""Expectation propagation with sampling-based moments for the sparse GP-SSM (McHutchon 2014, sec. 3.6.2, Algorithm 3;
docs/sources/mchutchon.md#sampling-ep), at fixed parameters (``is-ep``) or as the E-step of analytic EM (``is-ep-em``).

Factor graph (eqs. 3.103-3.112): h_1 = p(x_1) p(y_1 | x_1), h_t = p(x_t | x_{t-1}) p(y_t | x_t). Gaussian forward
messages alpha_t(x_t), backward messages beta_t(x_t) (beta_T = 1); marginal q(x_t) ~ alpha_t beta_t. Messages are kept
in natural parameters (precision Lambda, shift eta = Lambda mu), so flat (beta = 1) and improper messages need no
inverse.

One EP iteration (Algorithm 3, with the division of eqs. 3.125-3.128 -- the printed algorithm divides by the wrong
message, docs/sources/mchutchon.md#sampling-ep):
* forward, t = 2..T: moments of Z_t q(x_t) = p(y_t|x_t) beta_t(x_t) int p(x_t|x_{t-1}) alpha_{t-1} dx_{t-1} (3.123);
  alpha_t = q(x_t) / beta_t (3.127). alpha_1 = p(x_1) p(y_1 | x_1) is exact.
* backward, t = T..2: moments of Z_{t-1} q(x_{t-1}) = alpha_{t-1} int p(x_t|x_{t-1}) p(y_t|x_t) beta_t dx_t (3.124);
  beta_{t-1} = q(x_{t-1}) / alpha_{t-1} (3.128).

Both moments come from one two-slice estimate (``two_slice_moments``): draw x^i_{t-1} from a proposal; per draw the
transition N(x_t; m_f(x^i), S^i), S^i = diag(s_f(x^i) + sigma_eps^2) (s_f includes the process noise), is
multiplied by the Gaussian factor p(y_t|x_t) beta_t(x_t) = exp(-x^T Lambda x / 2 + eta^T x) (3.113, 3.145-3.148):
Sigma_t^i = (S^i^-1 + Lambda)^-1, mu_t^i = Sigma_t^i (S^i^-1 m_f + eta) (3.166-3.167), and z^i = the integral of the
product (3.168, up to a constant common to all i). With SELF-NORMALISED weights w^i (the printed 1/N sum is
unnormalised; docs/sources/mchutchon.md#ep-weights)
mu_{t|T} = sum w^i mu_t^i, Sigma_{t|T} = sum w^i (Sigma_t^i + mu_t^i mu_t^i^T) - mu mu^T,
mu_{t-1|T} = sum w^i x^i, Sigma_{t-1|T} = sum w^i (x^i - mu)(x^i - mu)^T (3.169-3.172) and the cross-covariance
Cov[x_{t-1}, x_t] = sum w^i (x^i - mu_{t-1|T})(mu_t^i - mu_{t|T})^T the M-step needs.

* variant ``mc`` (MC-EP, 3.166-3.172): x^i ~ alpha_{t-1}, w^i ~ z^i.
* variant ``is`` (IS-EP, 3.173-3.179): x^i ~ alpha_{t-1} beta_{t-1} (the current marginal), w^i ~ z^i / beta_{t-1}(x^i).
  With beta = 1 (every step of the first forward sweep, and beta_{t-1} in the first backward sweep) this is MC-EP, so
  the first sweep is MC-EP as the thesis says. Where alpha_{t-1} beta_{t-1} is not positive definite the step falls
  back to the MC-EP proposal.
* MCMC-EP (3.180-3.186): the engine ``mcmc-ep`` (``inference.gaussian.mcmc_ep``), through ``ep_all``'s ``estimator``.

Guards (the thesis gives no numbers; docs/sources/mchutchon.md#ep-guards): damping -- from the second iteration on,
a message becomes (1 - damping) old + damping new in natural parameters (default 0.5; the first sweep is undamped,
a flat initial message has nothing to damp towards); an update is SKIPPED (the old message kept) when the weights'
effective sample size ESS = 1 / sum w_i^2 is below ``min_ess`` x num_samples (default 0.01: a 10 % threshold
skipped first-sweep updates on the kink with ESS ~ 9 % that improved the posterior, leaving the ADF filter there),
when anything is non-finite, when an alpha
message would not be positive definite (it must be sampled from) or a beta message would have a negative precision
eigenvalue (the non-PD backward message of Fig. 3.23 that breaks the backward chain). alpha messages start at the
GP-ADF filter (what a skipped first-sweep update keeps: A-EP's alpha, eqs. 3.134-3.136); beta messages start flat.
Beyond a trajectory's end (trailing padding) there is no observation and beta is kept flat.

Output: the smoothed marginals alpha_t beta_t (K, T, D) / (K, T, D, D), the last backward sweep's two-slice
cross-covariances Cov[x_t, x_{t+1} | y] (K, T-1, D, D), shrunk where needed so the pairwise joint Gaussian is valid
(its correlation's largest singular value <= 0.999), as ``kalman.Smoothed`` -- the structure ``ads`` gives the analytic
M-step (``moment_matching.transition_q``). Posterior draws come from the Gauss-Markov chain with those pairwise
moments (``kalman.backward_sample``). ``log_evidence`` is the GP-ADF approximate log-likelihood (EP's own estimate is
not computed).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import observed_args
from inference.gaussian.kalman import ForwardPass, Smoothed, smoothing_gains
from inference.gaussian.moment_matching import (
    _learned_and_fixed,
    _outputs,
    _theta_pieces,
    adf_forward,
    run_gp_ssm_em,
)
from zoo import moments, ssm
from zoo.options import Option

__all__ = [
    "EPResult",
    "Gaussian",
    "MAX_CORRELATION",
    "TwoSlice",
    "VARIANTS",
    "condition_gaussian_on_factor",
    "damped_update",
    "ep_all",
    "ep_e_step",
    "ep_one_trajectory",
    "ep_options",
    "ep_runner",
    "ep_smoother",
    "gpssm_transition",
    "is_ep",
    "is_ep_em",
    "is_positive_definite",
    "is_psd",
    "linear_gaussian_two_slice",
    "marginals",
    "observation_factors",
    "pseudo_forward",
    "sample_natural",
    "sampling_two_slice",
    "smoother_output",
    "to_moments",
    "to_natural",
    "weighted_moments",
]

Array = Any
VARIANTS = ("mc", "is")
MAX_CORRELATION = 0.999


class Gaussian(NamedTuple):
    """A Gaussian (possibly flat or improper) factor in natural parameters: prec (..., D, D), shift (..., D)."""

    prec: Array
    shift: Array


class TwoSlice(NamedTuple):
    """Weighted-sample moments of the two-slice q(x_{t-1}, x_t) (3.169-3.172): mean_prev (D,), cov_prev (D, D),
    mean (D,), cov (D, D), cross (D, D) = Cov[x_{t-1}, x_t], ess () and ok () (all weights finite)."""

    mean_prev: Array
    cov_prev: Array
    mean: Array
    cov: Array
    cross: Array
    ess: Array
    ok: Array


# ----------------------------------------------------------------------------------------------------------------
# Gaussian algebra
# ----------------------------------------------------------------------------------------------------------------


def _sym(A: Array) -> Array:
    return 0.5 * (A + jnp.swapaxes(A, -1, -2))


def to_natural(mean: Array, cov: Array) -> Gaussian:
    """N(mean, cov) -> (cov^-1, cov^-1 mean) by Cholesky solves; NaN where cov is not positive definite."""
    L = jnp.linalg.cholesky(_sym(cov))
    return Gaussian(_sym(cho_solve((L, True), jnp.eye(mean.shape[0]))), cho_solve((L, True), mean))


def to_moments(g: Gaussian) -> tuple[Array, Array]:
    """(prec, shift) -> (mean, cov) for a positive definite precision."""
    L = jnp.linalg.cholesky(_sym(g.prec))
    return cho_solve((L, True), g.shift), _sym(cho_solve((L, True), jnp.eye(g.shift.shape[0])))


def sample_natural(key: jax.Array, g: Gaussian, num: int) -> Array:
    """num draws (num, D) of N(prec^-1 shift, prec^-1): x = mu + L^-T eps with prec = L L^T."""
    L = jnp.linalg.cholesky(_sym(g.prec))
    mu = cho_solve((L, True), g.shift)
    eps = jax.random.normal(key, (num, g.shift.shape[0]))
    return mu + solve_triangular(L.T, eps.T, lower=False).T


def is_positive_definite(prec: Array) -> Array:
    return jnp.all(jnp.isfinite(prec)) & (jnp.min(jnp.linalg.eigvalsh(_sym(prec))) > 0.0)


def is_psd(prec: Array) -> Array:
    eig = jnp.linalg.eigvalsh(_sym(prec))
    return jnp.all(jnp.isfinite(prec)) & (jnp.min(eig) >= -1e-10 * jnp.maximum(jnp.max(jnp.abs(eig)), 1.0))


def condition_gaussian_on_factor(m: Array, s: Array, factor: Gaussian) -> tuple[Array, Array, Array]:
    """N(x; m, diag(s)) exp(-x^T Lambda x / 2 + eta^T x) = z N(x; mu, Sigma) (eqs. 3.166-3.168): returns mu (D,),
    Sigma (D, D) and log z (). With r = sqrt(s), B = I + r Lambda r (needs B positive definite, else NaN),
    b = eta - Lambda m: mu = m + r B^-1 r b, Sigma = r B^-1 r, log z = -log|B|/2 - m^T Lambda m / 2 + eta^T m +
    (r b)^T B^-1 (r b) / 2. A flat factor (Lambda = 0, eta = 0) gives back N(m, diag(s)) and z = 1."""
    r = jnp.sqrt(s)
    B = jnp.eye(m.shape[0]) + r[:, None] * factor.prec * r[None, :]
    L = jnp.linalg.cholesky(_sym(B))
    rb = r * (factor.shift - factor.prec @ m)
    v = cho_solve((L, True), rb)
    mean = m + r * v
    cov = r[:, None] * cho_solve((L, True), jnp.diag(r))
    log_z = -jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * m @ factor.prec @ m + factor.shift @ m + 0.5 * rb @ v
    return mean, _sym(cov), log_z


def weighted_moments(x: Array, mu: Array, Sigma: Array, log_w: Array) -> TwoSlice:
    """Self-normalised weighted moments (3.169-3.172) of draws x (N, D) with per-draw Gaussian x_t | x^i = N(mu (N, D),
    Sigma (N, D, D)) and log weights (N,)."""
    ok = jnp.all(jnp.isfinite(log_w))
    w = jax.nn.softmax(jnp.where(jnp.isfinite(log_w), log_w, -jnp.inf))
    w = jnp.where(ok, w, 1.0 / x.shape[0])
    mean_prev, mean = w @ x, w @ mu
    dx, dmu = x - mean_prev, mu - mean
    cov_prev = jnp.einsum("n,ni,nj->ij", w, dx, dx)
    cov = jnp.einsum("n,nij->ij", w, Sigma) + jnp.einsum("n,ni,nj->ij", w, dmu, dmu)
    cross = jnp.einsum("n,ni,nj->ij", w, dx, dmu)
    return TwoSlice(mean_prev, _sym(cov_prev), mean, _sym(cov), cross, 1.0 / jnp.sum(w**2), ok)


# ----------------------------------------------------------------------------------------------------------------
# Two-slice moment estimators: (key, alpha_{t-1}, beta_{t-1}, factor_t, u_{t-1}) -> TwoSlice
# ----------------------------------------------------------------------------------------------------------------


def sampling_two_slice(transition, variant, num_samples: int):
    """MC-EP / IS-EP moment estimator. ``transition(x (D,), u (U,)) -> (m_f (D,), S (D,))``: mean and variance
    (process noise included) of x_t given x_{t-1} = x. factor_t = p(y_t | x_t) beta_t(x_t) in natural parameters.
    ``variant``: "mc", "is", or a (traced) boolean "is" flag, so one compiled program serves both variants."""
    use_is = (variant == "is") if isinstance(variant, str) else variant

    def estimate(key, alpha: Gaussian, beta_prev: Gaussian, factor: Gaussian, u_prev: Array) -> TwoSlice:
        # IS (3.173-3.179): propose from alpha beta and divide the weights by beta_{t-1}(x^i); MC (3.166-3.172), or
        # an alpha beta that is not positive definite: propose from alpha with weights z^i.
        joint = Gaussian(alpha.prec + beta_prev.prec, alpha.shift + beta_prev.shift)
        usable = jnp.asarray(use_is) & is_positive_definite(joint.prec)
        corr = jax.tree.map(lambda a: jnp.where(usable, a, 0.0), beta_prev)
        proposal = jax.tree.map(lambda a, b: jnp.where(usable, a, b), joint, alpha)
        x = sample_natural(key, proposal, num_samples)
        m, s = jax.vmap(transition, in_axes=(0, None))(x, u_prev)
        mu, Sigma, log_z = jax.vmap(condition_gaussian_on_factor, in_axes=(0, 0, None))(m, s, factor)
        log_beta = -0.5 * jnp.einsum("ni,ij,nj->n", x, corr.prec, x) + x @ corr.shift
        return weighted_moments(x, mu, Sigma, log_z - log_beta)

    return estimate


def gpssm_transition(g, predictor, mean_fn):
    """x_t | x_{t-1} = x for the sparse GP-SSM: m_f(x) and diag(s_f(x) + sigma_eps^2) (the pseudo-point GP, M10)."""

    def transition(x, u):
        mean, var = moments.predict_point(predictor, jnp.concatenate([x, u]), mean_fn)
        return mean, jnp.maximum(var, 0.0) + g.process_var

    return transition


def linear_gaussian_two_slice(A: Array, b: Array, Q: Array):
    """EXACT two-slice moments for x_t = A x_{t-1} + b + N(0, Q) (no sampling; the key and beta_prev are ignored):
    plugged into ``ep_smoother`` it must reproduce the Kalman filter and RTS smoother (the test of the EP algebra)."""

    def estimate(key, alpha: Gaussian, beta_prev: Gaussian, factor: Gaussian, u_prev: Array) -> TwoSlice:
        D = alpha.shift.shape[0]
        m, P = to_moments(alpha)
        jm = jnp.concatenate([m, A @ m + b])
        jP = jnp.block([[P, P @ A.T], [A @ P, A @ P @ A.T + Q]])
        prior = to_natural(jm, jP)
        prec = prior.prec.at[D:, D:].add(factor.prec)
        shift = prior.shift.at[D:].add(factor.shift)
        mean, cov = to_moments(Gaussian(prec, shift))
        return TwoSlice(mean[:D], cov[:D, :D], mean[D:], cov[D:, D:], cov[:D, D:], jnp.inf, jnp.array(True))

    return estimate


# ----------------------------------------------------------------------------------------------------------------
# Algorithm 3
# ----------------------------------------------------------------------------------------------------------------


class EPResult(NamedTuple):
    """mean (T, D), cov (T, D, D): alpha_t beta_t; cross (T-1, D, D); alpha, beta: messages (fields (T, ...));
    skipped (iters,) number of skipped updates per iteration; min_ess (iters,) smallest ESS per iteration;
    mean_by_iter, var_by_iter (iters, T, D): the marginals' means and variances after each iteration (McHutchon
    Fig 3.26); slice_ess (T-1,): the last iteration's ESS per two-slice (t-1, t), the smaller of its forward and
    backward estimates (Fig 3.20)."""

    mean: Array
    cov: Array
    cross: Array
    alpha: Gaussian
    beta: Gaussian
    skipped: Array
    min_ess: Array
    mean_by_iter: Array
    var_by_iter: Array
    slice_ess: Array


def damped_update(old: Gaussian, proposed: Gaussian, rate: Array, accept: Array, valid) -> tuple[Gaussian, Array]:
    """(1 - rate) old + rate proposed in natural parameters, kept only if ``accept`` and ``valid(prec)``; else old."""
    new = jax.tree.map(lambda o, p: (1.0 - rate) * o + rate * p, old, proposed)
    keep = accept & jnp.all(jnp.isfinite(new.shift)) & valid(new.prec)
    return jax.tree.map(lambda n, o: jnp.where(keep, n, o), new, old), keep


def observation_factors(C: Array, obs_var: Array, y: Array, mask: Array) -> Gaussian:
    """p(y_t | x_t) as a factor in x_t: (C^T R^-1 C, C^T R^-1 y_t), zero where unobserved. y (T, E), mask (T,)."""
    CtRinv = C.T / obs_var
    prec = jnp.where(mask[:, None, None], (CtRinv @ C)[None], 0.0)
    return Gaussian(prec, jnp.where(mask[:, None], y @ CtRinv.T, 0.0))


def _clip_cross(cov: Array, cross: Array) -> Array:
    """Shrink Cov[x_t, x_{t+1}] (T-1, D, D) so that the whitened correlation has spectral norm <= MAX_CORRELATION."""

    def one(Pa, Pb, X):
        La, Lb = jnp.linalg.cholesky(Pa), jnp.linalg.cholesky(Pb)
        Rm = solve_triangular(Lb, solve_triangular(La, X, lower=True).T, lower=True).T
        norm = jnp.linalg.norm(Rm, 2)
        return X * jnp.minimum(1.0, MAX_CORRELATION / jnp.maximum(norm, 1e-300))

    return jax.vmap(one)(cov[:-1], cov[1:], cross)


def ep_smoother(
    estimate,
    key: jax.Array,
    prior: Gaussian,
    obs: Gaussian,
    mask: Array,
    u: Array,
    alpha_init: Gaussian,
    num_iters: int,
    damping: Array,
    min_ess: Array,
) -> EPResult:
    """Algorithm 3 on one trajectory with the two-slice estimator ``estimate``.

    prior: p(x_1) (natural); obs: observation factors (T, ...); mask (T,) trailing-padding mask; u (T, U);
    alpha_init: messages (T, ...) kept where a first-sweep update is skipped (the ADF filter); damping, min_ess
    (absolute ESS) scalars."""
    T, D = obs.shift.shape
    alpha1 = Gaussian(prior.prec + obs.prec[0], prior.shift + obs.shift[0])  # h_1 is Gaussian: exact
    alpha0 = Gaussian(alpha_init.prec.at[0].set(alpha1.prec), alpha_init.shift.at[0].set(alpha1.shift))
    beta0 = Gaussian(jnp.zeros((T, D, D)), jnp.zeros((T, D)))
    at = lambda g, sl: jax.tree.map(lambda a: a[sl], g)  # noqa: E731
    plus = lambda a, b: jax.tree.map(jnp.add, a, b)  # noqa: E731

    def iteration(carry, inputs):
        alpha, beta = carry
        key_it, first = inputs
        rate = jnp.where(first, 1.0, damping)
        k_fwd, k_bwd = jax.random.split(key_it)

        def forward(alpha_prev, xs):  # t = 2..T: q(x_t) / beta_t -> alpha_t (3.123, 3.127)
            k, beta_prev, beta_t, alpha_old, obs_t, u_prev = xs
            ts = estimate(k, alpha_prev, beta_prev, plus(obs_t, beta_t), u_prev)
            q = to_natural(ts.mean, ts.cov)
            proposed = Gaussian(q.prec - beta_t.prec, q.shift - beta_t.shift)
            new, kept = damped_update(alpha_old, proposed, rate, ts.ok & (ts.ess >= min_ess), is_positive_definite)
            return new, (new, kept, ts.ess)

        xs = (jax.random.split(k_fwd, T - 1), at(beta, slice(0, -1)), at(beta, slice(1, None)))
        xs = xs + (at(alpha, slice(1, None)), at(obs, slice(1, None)), u[:-1])
        _, (a_rest, kept_f, ess_f) = jax.lax.scan(forward, at(alpha, 0), xs)
        alpha = jax.tree.map(lambda a0, rest: jnp.concatenate([a0[:1], rest]), alpha, a_rest)

        def backward(beta_t, xs):  # t = T..2: q(x_{t-1}) / alpha_{t-1} -> beta_{t-1} (3.124, 3.128)
            k, alpha_prev, beta_old, obs_t, observed_t, u_prev = xs
            ts = estimate(k, alpha_prev, beta_old, plus(obs_t, beta_t), u_prev)
            q = to_natural(ts.mean_prev, ts.cov_prev)
            proposed = Gaussian(q.prec - alpha_prev.prec, q.shift - alpha_prev.shift)
            accept = ts.ok & (ts.ess >= min_ess) & observed_t
            new, kept = damped_update(beta_old, proposed, rate, accept, is_psd)
            new = jax.tree.map(lambda n: jnp.where(observed_t, n, 0.0), new)  # past the end: flat
            return new, (new, ts.cross, kept | ~observed_t, ts.ess)

        xs = (jax.random.split(k_bwd, T - 1), at(alpha, slice(0, -1)), at(beta, slice(0, -1)))
        xs = xs + (at(obs, slice(1, None)), mask[1:], u[:-1])
        _, (b_rest, cross, kept_b, ess_b) = jax.lax.scan(backward, at(beta, -1), xs, reverse=True)
        beta = jax.tree.map(lambda rest, bT: jnp.concatenate([rest, bT[-1:]]), b_rest, beta)
        skipped = jnp.sum(~kept_f & mask[1:]) + jnp.sum(~kept_b)
        min_ess_it = jnp.minimum(
            jnp.min(jnp.where(mask[1:], ess_f, jnp.inf)), jnp.min(jnp.where(mask[1:], ess_b, jnp.inf))
        )
        m_it, P_it = marginals(alpha, beta)
        slice_ess = jnp.where(mask[1:], jnp.minimum(ess_f, ess_b), jnp.inf)
        return (alpha, beta), (cross, skipped, min_ess_it, m_it, jnp.diagonal(P_it, axis1=1, axis2=2), slice_ess)

    firsts = jnp.arange(num_iters) == 0
    (alpha, beta), (cross, skipped, ess, m_by, v_by, slice_ess) = jax.lax.scan(
        iteration, (alpha0, beta0), (jax.random.split(key, num_iters), firsts)
    )
    mean, cov = marginals(alpha, beta)
    return EPResult(mean, cov, _clip_cross(cov, cross[-1]), alpha, beta, skipped, ess, m_by, v_by, slice_ess[-1])


def marginals(alpha: Gaussian, beta: Gaussian) -> tuple[Array, Array]:
    """q(x_t) = alpha_t beta_t for every t: means (T, D) and covariances (T, D, D)."""
    return jax.vmap(lambda p, h: to_moments(Gaussian(p, h)))(alpha.prec + beta.prec, alpha.shift + beta.shift)


# ----------------------------------------------------------------------------------------------------------------
# The GP-SSM E-step and the engines
# ----------------------------------------------------------------------------------------------------------------


def pseudo_forward(smoothed: Smoothed, log_lik: Array) -> ForwardPass:
    """A ForwardPass whose backward sampling draws the Gauss-Markov chain with the smoothed pairwise moments:
    x_T ~ N(m_T, P_T), x_t | x_{t+1} ~ N(m_t + G_t (x_{t+1} - m_{t+1}), P_t - G_t X_t^T), G_t = X_t P_{t+1}^-1."""
    return ForwardPass(smoothed.mean, smoothed.cov, smoothed.mean, smoothed.cov, smoothed.cross, log_lik)


def ep_one_trajectory(
    g, predictor, mean_fn, variant, num_samples, num_iters, key, y, mask, u, damping, min_ess, estimator=None
):
    """Sampling EP on one trajectory of the GP-SSM: (ForwardPass of the ADF filter, EPResult). ``estimator``, when
    given, maps the transition to the two-slice estimator (MCMC-EP's, ``inference.gaussian.mcmc_ep``) in place of
    MC-/IS-EP's ``sampling_two_slice(transition, variant, num_samples)``."""
    forward = adf_forward(g, predictor, mean_fn, y, mask, u)
    alpha_init = jax.vmap(to_natural)(forward.filt_mean, forward.filt_cov)
    prior = to_natural(g.m0, g.P0)
    obs = observation_factors(g.C, g.obs_var, y, mask)
    transition = gpssm_transition(g, predictor, mean_fn)
    estimate = sampling_two_slice(transition, variant, num_samples) if estimator is None else estimator(transition)
    result = ep_smoother(estimate, key, prior, obs, mask, u, alpha_init, num_iters, damping, min_ess)
    return forward, result


def ep_all(gp_view, params, observed, key, variant, num_samples, num_iters, damping, ess_frac, estimator=None):
    """Sampling EP on every trajectory (vmapped): ForwardPass and EPResult with a leading K axis."""
    g, predictor, mean_fn = _theta_pieces(gp_view, params, observed)
    y, mask, u = ssm.trajectories(observed)
    ess = ess_frac * num_samples

    def one(k, yk, mk, uk):
        return ep_one_trajectory(
            g, predictor, mean_fn, variant, num_samples, num_iters, k, yk, mk, uk, damping, ess, estimator
        )

    return jax.vmap(one)(jax.random.split(key, y.shape[0]), y, mask, u)


@program_cache
def ep_e_step(variant: str, num_samples: int, num_iters: int, damping: float, ess_frac: float):
    """The E-step for ``moment_matching.em_runner``: (gp_view, key, params, observed) -> (ForwardPass for draws,
    Smoothed with a leading K axis, ADF log-likelihood). Cached so equal settings give the same function (and
    ``em_runner``'s compiled program is reused)."""

    def e_step(gp_view, key, params, observed):
        forward, res = ep_all(gp_view, params, observed, key, variant, num_samples, num_iters, damping, ess_frac)
        gains = jax.vmap(lambda m, P, X: smoothing_gains(pseudo_forward(Smoothed(m, P, X, None), 0.0)))(
            res.mean, res.cov, res.cross
        )
        smoothed = Smoothed(res.mean, res.cov, res.cross, gains)
        log_lik = jnp.sum(forward.log_lik)
        return jax.vmap(pseudo_forward, in_axes=(0, None))(smoothed, log_lik), smoothed, log_lik

    return e_step


@program_cache
def ep_runner(gp_view, num_samples: int, num_iters: int, num_draws: int):
    """Jitted is-ep; ``use_is`` is traced so MC-EP and IS-EP share one compiled program."""

    def run(key, params, observed, use_is, damping, ess_frac):
        k_ep, k_draw = jax.random.split(key)
        forward, res = ep_all(gp_view, params, observed, k_ep, use_is, num_samples, num_iters, damping, ess_frac)
        log_lik = jnp.sum(forward.log_lik)
        pseudo = jax.vmap(pseudo_forward, in_axes=(0, None))(Smoothed(res.mean, res.cov, res.cross, None), log_lik)
        draws, mean, cov = _outputs(k_draw, pseudo, res.mean, res.cov, num_draws)
        by_iter = {
            "states_mean_by_iter": jnp.swapaxes(res.mean_by_iter, 0, 1)[None],  # (1, iters, K, T, D)
            "states_var_by_iter": jnp.swapaxes(res.var_by_iter, 0, 1)[None],
            "slice_ess": res.slice_ess[None],  # (1, K, T-1)
        }
        skipped, min_ess = jnp.sum(res.skipped, 0)[None], jnp.min(res.min_ess, 0)[None]
        return draws, mean, cov, res.cross[None], skipped, min_ess, log_lik, by_iter

    return jax.jit(run)


def ep_options(num_samples: int) -> dict[str, Option]:
    """The sampling-EP options, shared by ``is-ep`` and ``is-ep-em``."""
    return {
        "variant": opt.choice("is", VARIANTS, "mc: MC-EP; is: IS-EP (MCMC-EP: the engine mcmc-ep)"),
        "num_samples": opt.num_samples(num_samples, minimum=2, doc="draws inside EP per time step"),
        "num_ep_iters": Option("int", 4, "forward-backward EP sweeps", minimum=1),
        "damping": Option("float", 0.5, "EP damping (1: none)", above=0.0, maximum=1.0),
        "min_ess": Option(
            "float", 0.01, "skip an update below this ESS (a fraction of num_samples)", minimum=0.0, below=1.0
        ),
        "num_draws": opt.num_samples(200, doc="posterior draws of the smoothed states"),
    }


@register_engine(
    "is-ep",
    requires={"gp_ssm_se"},
    options={**ep_options(10000), "params": opt.params(), "init": opt.init()},
    summary="Sampling EP (Algorithm 3): MC-EP or IS-EP smoothed marginals of a GP-SSM at fixed parameters",
    params_role="conditions",
)
def is_ep(spec, dataset, key, timer, **options) -> EngineOutput:
    """Options: variant 'mc' | 'is', num_samples (draws inside EP per step), num_ep_iters (forward-backward sweeps),
    damping, min_ess (fraction of num_samples), num_draws (posterior draws of the output), params (fixed; defaults:
    the AR1-GP initialisation). point_estimates: states_mean (1, K, T, D), states_cov (1, K, T, D, D), states_cross
    (1, K, T-1, D, D), slice_ess (1, K, T-1) (the last sweep's ESS per two-slice); traces: skipped_updates (1, iters),
    min_ess (1, iters), states_mean_by_iter and states_var_by_iter (1, iters, K, T, D) (the marginals after each
    sweep)."""
    gp_view = spec.views["gp_ssm"]
    init, fixed = _learned_and_fixed(gp_view, dataset, options["params"], options["init"])
    run = ep_runner(gp_view, options["num_samples"], options["num_ep_iters"], options["num_draws"])
    draws, mean, cov, cross, skipped, min_ess, log_lik, by_iter = timer.call(
        run,
        key,
        {**init, **fixed},
        observed_args(dataset),
        jnp.asarray(options["variant"] == "is"),
        jnp.asarray(float(options["damping"])),
        jnp.asarray(float(options["min_ess"])),
    )
    return smoother_output(draws, mean, cov, cross, skipped, min_ess, log_lik, by_iter)


def smoother_output(draws, mean, cov, cross, skipped, min_ess, log_lik, by_iter=None) -> EngineOutput:
    """What a sampling-EP smoother run returns (``ep_runner``'s outputs): state draws, the smoothed moments,
    the per-sweep skipped updates and minimum ESS, and the log evidence; ``by_iter`` (optional): the marginals'
    means and variances after each sweep (traces, (1, iters, K, T, D)) and the last sweep's ESS per two-slice
    (point estimate ``slice_ess``, (1, K, T-1))."""
    by_iter = dict(by_iter or {})
    slice_ess = {"slice_ess": by_iter.pop("slice_ess")} if "slice_ess" in by_iter else {}
    return EngineOutput(
        posterior={ssm.STATES: draws},
        point_estimates={"states_mean": mean, "states_cov": cov, "states_cross": cross, **slice_ess},
        traces={"skipped_updates": skipped, "min_ess": min_ess, **by_iter},
        log_evidence=float(log_lik),
        num_lik_evals=1,
    )


@register_engine(
    "is-ep-em",
    requires={"gp_ssm_se"},
    options={
        **ep_options(10),
        "num_steps": opt.num_steps(6, doc="EM iterations"),
        "m_step_steps": opt.num_steps(20, doc="L-BFGS steps per M-step"),
        "params": opt.params({}),
        "init": opt.init(),
    },
    summary="EM with a sampling-EP E-step (IS-EP-EM, sec. 3.6.2) and the analytic M-step of analytic-em",
)
def is_ep_em(spec, dataset, key, timer, **options) -> EngineOutput:
    """Defaults: the thesis's 1-D kink setting (Table 3.4): 10 samples, 4 EP iterations, 6 EM iterations (num_steps).
    The M-step is ``analytic-em``'s (closed-form pseudo-targets and observation noise, ``m_step_steps`` L-BFGS steps
    on the rest). traces: adf_log_lik (GP-ADF log-likelihood at the start of each EM iteration), q and the parameter
    path, as ``analytic-em``'s."""
    e_step = ep_e_step(
        options["variant"],
        options["num_samples"],
        options["num_ep_iters"],
        float(options["damping"]),
        float(options["min_ess"]),
    )
    return run_gp_ssm_em(spec, dataset, key, timer, options, options["num_draws"], e_step)
