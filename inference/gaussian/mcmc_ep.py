"""MCMC-EP: expectation propagation whose tilted moments come from a Markov chain (McHutchon 2014, sec. 3.6.2,
eqs. 3.180-3.186, Algorithm 3; docs/sources/mchutchon.md#mcmc-ep), at fixed parameters: the fourth E-step of
Tables 3.1/3.2 beside ADS, MC-EP and IS-EP.

Algorithm 3 and its message algebra are ``sampling_ep``'s (``ep_smoother``); only the two-slice estimator differs.
The tilted distribution of x_{t-1} in both sweeps is

    pi(x) ~ alpha_{t-1}(x) z(x),  z(x) = int N(x_t; m_f(x), S(x)) p(y_t | x_t) beta_t(x_t) dx_t  (3.168, 3.182),

the same target MC-EP reaches by sampling alpha and weighting by z. MCMC-EP samples pi by random-walk Metropolis
(BlackJAX ``normal_random_walk``): the chain starts at the mean of the current marginal alpha_{t-1} beta_{t-1} (3.180)
and proposes N(x^i, c Sigma_ab) (3.181), Sigma_ab that marginal's covariance (alpha's own where alpha beta is not
positive definite, as IS-EP falls back); the acceptance ratio is pi(x') / pi(x) (3.182). The moments are plain
averages over the N states (the start included), with x_t integrated analytically per state: mu_t^i, Sigma_t^i of
the Gaussian x_t | x^i (3.166-3.167) give mu_{t|T}, Sigma_{t|T} (3.183-3.184), the states mu_{t-1|T}, Sigma_{t-1|T}
(3.185-3.186), and the cross-covariance as in ``sampling_ep.weighted_moments`` with equal weights.

Choices the thesis leaves open (docs/sources/mchutchon.md#mcmc-ep): c = 2.38^2 / D by default (Roberts, Gelman &
Gilks 1997; the thesis calls c "hard to choose" and gives none); no burn-in (the start is the current marginal's
mean, a typical point); one chain of N states per two-slice. The ESS that gates an update (``min_ess``) and that the
result reports is the chain's: BlackJAX's autocorrelation ESS (Geyer's initial monotone sequence), the smallest over
the coordinates of x_{t-1} and mu_t -- not the 1 / sum w^2 of the weighted variants, which would be N here.
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.diagnostics import effective_sample_size

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import observed_args
from inference.gaussian.kalman import Smoothed
from inference.gaussian.moment_matching import _learned_and_fixed, _outputs
from inference.gaussian.sampling_ep import (
    Gaussian,
    condition_gaussian_on_factor,
    ep_all,
    ep_options,
    is_positive_definite,
    pseudo_forward,
    smoother_output,
    to_moments,
    weighted_moments,
)
from zoo.options import Option

__all__ = ["DEFAULT_SCALE", "chain_ess", "mcmc_ep", "mcmc_ep_runner", "mcmc_two_slice"]

Array = Any
DEFAULT_SCALE = 2.38**2  # divided by D: the random-walk scaling of Roberts, Gelman & Gilks (1997)


def chain_ess(draws: Array) -> Array:
    """The smallest autocorrelation ESS over the columns of one chain's draws (N, D) (BlackJAX, Geyer's sequence)."""
    return jnp.min(effective_sample_size(draws[None], chain_axis=0, sample_axis=1))


def mcmc_two_slice(transition, num_samples: int, scale: float):
    """MCMC-EP's moment estimator (3.180-3.186), with the signature of ``sampling_ep.sampling_two_slice``'s:
    ``(key, alpha_{t-1}, beta_{t-1}, factor_t, u_{t-1}) -> TwoSlice``. ``transition(x (D,), u) -> (m_f (D,), S (D,))``;
    ``scale`` = c of the proposal N(x, c Sigma_ab); 0 (traced or not) means DEFAULT_SCALE / D."""

    def estimate(key, alpha: Gaussian, beta_prev: Gaussian, factor: Gaussian, u_prev: Array):
        joint = Gaussian(alpha.prec + beta_prev.prec, alpha.shift + beta_prev.shift)
        usable = is_positive_definite(joint.prec)
        around = jax.tree.map(lambda a, b: jnp.where(usable, a, b), joint, alpha)
        start, cov = to_moments(around)
        c = jnp.where(scale > 0, scale, DEFAULT_SCALE / start.shape[0])

        def log_tilted(x):  # log alpha_{t-1}(x) + log z(x), up to a constant
            m, s = transition(x, u_prev)
            return -0.5 * x @ alpha.prec @ x + alpha.shift @ x + condition_gaussian_on_factor(m, s, factor)[2]

        # BlackJAX's normal proposal adds sigma @ eps: sigma = sqrt(c) chol(Sigma_ab) gives N(x, c Sigma_ab).
        walk = blackjax.normal_random_walk(log_tilted, jnp.sqrt(c) * jnp.linalg.cholesky(cov))

        def step(state, k):
            state, _ = walk.step(k, state)
            return state, state.position

        _, chain = jax.lax.scan(step, walk.init(start), jax.random.split(key, num_samples - 1))
        x = jnp.concatenate([start[None], chain])
        m, s = jax.vmap(transition, in_axes=(0, None))(x, u_prev)
        mu, Sigma, log_z = jax.vmap(condition_gaussian_on_factor, in_axes=(0, 0, None))(m, s, factor)
        moments = weighted_moments(x, mu, Sigma, jnp.zeros(num_samples))
        ok = jnp.all(jnp.isfinite(log_z)) & jnp.all(jnp.isfinite(x))
        return moments._replace(ess=chain_ess(jnp.concatenate([x, mu], axis=1)), ok=ok)

    return estimate


@program_cache
def mcmc_ep_runner(gp_view, num_samples: int, num_iters: int, num_draws: int):
    """Jitted mcmc-ep: (key, params, observed, scale, damping, ess_frac) -> draws, moments, traces, log-likelihood."""

    def run(key, params, observed, scale, damping, ess_frac):
        k_ep, k_draw = jax.random.split(key)

        def estimator(transition):
            return mcmc_two_slice(transition, num_samples, scale)

        forward, res = ep_all(
            gp_view, params, observed, k_ep, "mc", num_samples, num_iters, damping, ess_frac, estimator
        )
        log_lik = jnp.sum(forward.log_lik)
        pseudo = jax.vmap(pseudo_forward, in_axes=(0, None))(Smoothed(res.mean, res.cov, res.cross, None), log_lik)
        draws, mean, cov = _outputs(k_draw, pseudo, res.mean, res.cov, num_draws)
        return draws, mean, cov, res.cross[None], jnp.sum(res.skipped, 0)[None], jnp.min(res.min_ess, 0)[None], log_lik

    return jax.jit(run)


def _options() -> dict[str, Option]:
    options = {name: value for name, value in ep_options(10000).items() if name != "variant"}
    options["proposal_scale"] = Option(
        "float", None, "c of the proposal N(x, c Sigma_ab) (default 2.38^2 / D)", above=0.0, optional=True
    )
    return {**options, "params": opt.params(), "init": opt.init()}


@register_engine(
    "mcmc-ep",
    requires={"gp_ssm_se"},
    options=_options(),
    summary="MCMC-EP (Algorithm 3, eqs. 3.180-3.186): random-walk Metropolis tilted moments, GP-SSM, fixed parameters",
    params_role="conditions",
)
def mcmc_ep(spec, dataset, key, timer, **options) -> EngineOutput:
    """Options: num_samples (chain length per two-slice, the thesis's 10,000 by default), num_ep_iters, damping,
    min_ess (a fraction of num_samples, against the chain's ESS), num_draws, proposal_scale (c), params (fixed;
    defaults: the AR1-GP start). Outputs as ``is-ep``'s: point_estimates states_mean (1, K, T, D), states_cov,
    states_cross; traces skipped_updates and min_ess (the chains' smallest ESS) per EP iteration."""
    gp_view = spec.views["gp_ssm"]
    init, fixed = _learned_and_fixed(gp_view, dataset, options["params"], options["init"])
    observed = observed_args(dataset)
    scale = 0.0 if options["proposal_scale"] is None else float(options["proposal_scale"])  # 0: 2.38^2 / D
    run = mcmc_ep_runner(gp_view, options["num_samples"], options["num_ep_iters"], options["num_draws"])
    draws, mean, cov, cross, skipped, min_ess, log_lik = timer.call(
        run,
        key,
        {**init, **fixed},
        observed,
        jnp.asarray(scale),
        jnp.asarray(float(options["damping"])),
        jnp.asarray(float(options["min_ess"])),
    )
    return smoother_output(draws, mean, cov, cross, skipped, min_ess, log_lik)
