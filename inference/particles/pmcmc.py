"""``pmcmc``: particle Gibbs over trajectories *and* parameters -- the fully Bayesian GP-SSM of Frigola, Lindsten,
Schön & Rasmussen 2013 (M12, docs/sources/mchutchon.md#pmcmc-bayes), here for state-space views with a Markov
transition.

One Gibbs iteration j (Andrieu, Doucet & Holenstein 2010, sec. 2.4.3, with the PGAS kernel of Lindsten, Jordan &
Schön 2014 in place of plain conditional SMC):

1. x_{1:T} ~ PGAS(. | x'_{1:T}, theta_{j-1}) -- one conditional-SMC-with-ancestor-sampling sweep per trajectory
   (``inference.particles.pgas.conditional_smc_sweep``, fully adapted, corrected ancestor weights), which leaves
   p(x_{1:T} | y_{1:T}, theta) invariant;
2. theta_j: ``num_steps`` random-walk Metropolis-Hastings steps on p(theta | x_{1:T}, y_{1:T}) ∝
   p(theta) p(x_{1:T}, y_{1:T} | theta), in the unconstrained space of each parameter site (NumPyro's ``biject_to``
   of its support, the log |Jacobian| added to the target). The complete-data density is cheap (no filter), so
   several MH steps per sweep cost little next to the sweep.

Proposal: phi' = phi + lambda * sigma ⊙ z, z ~ N(0, I). During the first ``num_warmup`` Gibbs iterations the scale is
adapted by Robbins-Monro (Andrieu & Thoms 2008, Algorithm 4, "componentwise variance with global scaling"):
after each MH step with acceptance probability alpha, with gamma_n = (n + 10)^-0.6 (n counts warm-up MH steps; the
offset keeps the first updates from collapsing sigma onto one point),
    mu <- mu + gamma_n (phi - mu),  sigma^2 <- sigma^2 + gamma_n ((phi - mu)^2 - sigma^2),
    log lambda <- log lambda + gamma_n (alpha - 0.3),
starting from mu = phi_0, sigma = 0.1, lambda = 2.38 / sqrt(P) (P unconstrained coordinates). The target rate 0.3
sits between the asymptotic 0.234 (large P) and 0.44 (P = 1) of Roberts, Gelman & Gilks 1997. After warm-up the
proposal is frozen, so the retained iterations are a time-homogeneous Markov chain with the exact posterior
p(theta, x_{1:T} | y_{1:T}) invariant (each of the two Gibbs blocks leaves it invariant).

The state block is a ``TrajectoryKernel``: ``MARKOV`` for state-space views (Markov transition, fully adapted pieces),
``MARGINAL_GP`` for the non-Markov full GP-SSM (M9, ``marginal_gp_ssm`` view), whose PGAS sweep carries whole
histories and weights ancestors by the marginalised-GP density of the joined path
(``inference.particles.pgas_marginal``);
there p(x_{1:T}, y_{1:T} | theta) in step 2 is the M9 joint (eq. 3.27) plus the emission -- Frigola et al.'s
fully Bayesian GP-SSM proper. All K trajectories share theta; each chain starts at ``params`` (model defaults) and
its own starting reference (a PF path; for the marginal kernel the observations). Compiled once per (view, sizes,
parameter names); params and data are arguments.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from numpyro.infer.util import log_density

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import observed_args
from inference.particles import pgas_marginal
from inference.particles.pf import constrain, site_transforms, unconstrain
from inference.particles.pgas import check_fully_adapted, conditional_smc_sweep, initial_reference
from zoo import ssm

TARGET_ACCEPT = 0.3
ADAPT_OFFSET = 10.0
ADAPT_DECAY = 0.6
INITIAL_SIGMA = 0.1


class TrajectoryKernel(NamedTuple):
    """The state block of particle Gibbs on a view: ``initial_reference(view, theta, key, y, mask, u, N) -> (T, D)``,
    ``sweep(view, theta, key, reference, y, mask, u, N) -> (T, D)`` (one PGAS sweep, one trajectory) and
    ``log_joint(view, theta, states (K, T, D), observed) -> ()`` = log p(x_{1:T}, y_{1:T} | theta)."""

    initial_reference: Callable
    sweep: Callable
    log_joint: Callable


MARKOV = TrajectoryKernel(initial_reference, conditional_smc_sweep, ssm.log_joint)
MARGINAL_GP = TrajectoryKernel(
    pgas_marginal.initial_reference, pgas_marginal.conditional_smc_sweep, pgas_marginal.log_joint
)


def parameter_log_posterior(view, transforms, unravel, observed, phi, states, log_joint=ssm.log_joint):
    """log p(theta) + log |J| + log p(x_{1:T}, y_{1:T} | theta) at unconstrained phi (P,), states (K, T, D)."""
    params, log_jac = constrain(transforms, unravel, phi)
    log_prior, _ = log_density(view.parameters, (observed,), {}, params)
    theta = ssm.bind(view, params, observed)
    return log_prior + log_jac + log_joint(view, theta, states, observed)


class Adaptation:
    """Robbins-Monro state (mu (P,), log_sigma2 (P,), log_lambda (), n ()) of the Andrieu-Thoms proposal."""

    @staticmethod
    def init(phi0):
        P = phi0.shape[0]
        return phi0, jnp.full(P, 2 * jnp.log(INITIAL_SIGMA)), jnp.log(2.38 / jnp.sqrt(P)), jnp.zeros(())

    @staticmethod
    def update(state, phi, accept_prob):
        mu, log_sigma2, log_lambda, n = state
        gamma = (n + ADAPT_OFFSET) ** -ADAPT_DECAY
        mu = mu + gamma * (phi - mu)
        sigma2 = jnp.exp(log_sigma2) + gamma * ((phi - mu) ** 2 - jnp.exp(log_sigma2))
        log_sigma2 = jnp.log(jnp.maximum(sigma2, 1e-12))  # floor: a collapsed coordinate could never move again
        return mu, log_sigma2, log_lambda + gamma * (accept_prob - TARGET_ACCEPT), n + 1


def metropolis_steps(log_target, key, phi, log_p, adapt, warm, num_steps: int):
    """``num_steps`` random-walk MH steps on ``log_target`` from phi (P,) with cached log_p; adapts while ``warm``.
    Returns (phi, log_p, adapt, mean acceptance probability)."""

    def step(carry, k):
        phi, log_p, adapt = carry
        k_prop, k_acc = jax.random.split(k)
        _, log_sigma2, log_lambda, _ = adapt
        scale = jnp.exp(log_lambda + 0.5 * log_sigma2)
        proposal = phi + scale * jax.random.normal(k_prop, phi.shape)
        log_p_new = log_target(proposal)
        log_ratio = jnp.where(jnp.isfinite(log_p_new), log_p_new - log_p, -jnp.inf)
        accept_prob = jnp.exp(jnp.minimum(log_ratio, 0.0))
        accept = jax.random.uniform(k_acc) < accept_prob
        phi, log_p = jnp.where(accept, proposal, phi), jnp.where(accept, log_p_new, log_p)
        adapted = Adaptation.update(adapt, phi, accept_prob)
        adapt = jax.tree.map(lambda new, old: jnp.where(warm, new, old), adapted, adapt)
        return (phi, log_p, adapt), accept_prob

    (phi, log_p, adapt), probs = jax.lax.scan(step, (phi, log_p, adapt), jax.random.split(key, num_steps))
    return phi, log_p, adapt, jnp.mean(probs)


def pmcmc_chain(
    view,
    key,
    params,
    observed,
    num_particles: int,
    num_warmup: int,
    num_samples: int,
    num_steps: int,
    kernel: TrajectoryKernel = MARKOV,
):
    """One particle-Gibbs chain. Returns (params draws {name: (num_samples, *shape)}, states (num_samples, K, T, D),
    acceptance (num_samples,))."""
    transforms = site_transforms(view, observed, tuple(params))
    phi0, unravel = unconstrain(transforms, params)
    y, mask, u = ssm.trajectories(observed)
    K = y.shape[0]

    def theta_of(phi):
        return ssm.bind(view, constrain(transforms, unravel, phi)[0], observed)

    k_init, k_run = jax.random.split(key)
    theta0 = theta_of(phi0)
    init = jax.vmap(lambda k, yk, mk, uk: kernel.initial_reference(view, theta0, k, yk, mk, uk, num_particles))
    reference = init(jax.random.split(k_init, K), y, mask, u)

    def gibbs(carry, inputs):
        ref, phi, adapt = carry
        k, j = inputs
        k_x, k_theta = jax.random.split(k)
        theta = theta_of(phi)
        sweep = jax.vmap(lambda kk, r, yk, mk, uk: kernel.sweep(view, theta, kk, r, yk, mk, uk, num_particles))
        ref = sweep(jax.random.split(k_x, K), ref, y, mask, u)

        def log_target(p):
            return parameter_log_posterior(view, transforms, unravel, observed, p, ref, kernel.log_joint)

        phi, _, adapt, acc = metropolis_steps(
            log_target, k_theta, phi, log_target(phi), adapt, j < num_warmup, num_steps
        )
        return (ref, phi, adapt), (ref, phi, acc)

    iterations = num_warmup + num_samples
    inputs = (jax.random.split(k_run, iterations), jnp.arange(iterations))
    _, (refs, phis, accs) = jax.lax.scan(gibbs, (reference, phi0, Adaptation.init(phi0)), inputs)
    draws = jax.vmap(lambda p: constrain(transforms, unravel, p)[0])(phis[num_warmup:])
    return draws, refs[num_warmup:], accs[num_warmup:]


@program_cache
def pmcmc_runner(
    view, num_particles: int, num_warmup: int, num_samples: int, num_steps: int, kernel: TrajectoryKernel = MARKOV
):
    """Chains ``(keys (C,), params, observed) -> (params draws (C, S, ...), states (C, S, K, T, D), accept (C, S))``
    (``inference.core.chains``)."""

    def one_chain(key, params, observed):
        return pmcmc_chain(view, key, params, observed, num_particles, num_warmup, num_samples, num_steps, kernel)

    return vmapped_chains(one_chain)


@register_engine(
    "pmcmc",
    requires={"state_space"},
    options={
        "num_chains": opt.num_chains(4),
        "num_warmup": opt.num_warmup(500),
        "num_samples": opt.num_samples(1000),
        "num_particles": opt.num_particles(50),
        "num_steps": opt.num_steps(10, doc="random-walk MH moves on the parameters per sweep"),
        "params": opt.params(),
    },
    summary="Particle Gibbs over trajectories (PGAS) and parameters (adaptive random-walk MH); Frigola et al. 2013",
    alternatives=({pgas_marginal.VIEW},),
    params_role="starts",
)
def pmcmc(spec, dataset, key, timer, **options) -> EngineOutput:
    """posterior: every parameter site (chain, draw, *shape) and ``states`` (chain, draw, K, T, D); ``params`` is the
    starting point; sample_stats ``acceptance_rate``: mean MH acceptance probability of the draw's theta move."""
    if "state_space" in spec.views:
        view, kernel = spec.views["state_space"], MARKOV
        check_fully_adapted(view)
    else:  # the non-Markov full GP-SSM
        view, kernel = spec.views[pgas_marginal.VIEW], MARGINAL_GP
    runner = pmcmc_runner(
        view, options["num_particles"], options["num_warmup"], options["num_samples"], options["num_steps"], kernel
    )
    keys = jax.random.split(key, options["num_chains"])
    draws, states, accept = runner.run(timer, keys, dict(options["params"]), observed_args(dataset))
    iterations = options["num_chains"] * (options["num_warmup"] + options["num_samples"])
    return EngineOutput(
        posterior={**draws, ssm.STATES: states},
        sample_stats={"acceptance_rate": accept},
        num_lik_evals=iterations * (options["num_steps"] + 1),
    )
