"""``tsmc``: adaptive tempered SMC (BlackJAX) from the prior to the posterior of any continuous model.

The target path is pi_beta(z) ∝ p(z) p(y | z)^beta on NumPyro's unconstrained space, beta from 0 to 1 chosen
adaptively so that the ESS of each reweighting is ``target_ess`` (Jasra et al. 2011; BlackJAX
``adaptive_tempered_smc``). The prior/likelihood split of a NumPyro program: the log likelihood is the sum of the
observed sites' log densities (``numpyro.infer.util.log_likelihood``; sites fixed through ``params`` are
excluded), the log prior is the rest of the potential (prior of the latent sites plus the log-Jacobian of the
unconstraining transform), so the particles drawn from the prior are exact draws of the initial distribution.

Log evidence: log Z = sum_k log( sum_i W_{k-1}^i exp(delta_k log p(y | z_k^i)) ), BlackJAX's
``log_likelihood_increment`` summed over the tempering steps. Z itself is unbiased for fixed schedule and fixed
kernel parameters; here the schedule and the mutation kernel are adapted from the particles, a standard practice
whose bias is negligible next to the Monte Carlo error (checked in tests/test_smc.py against an exact evidence).

Mutation: ``num_mcmc_steps`` steps of HMC (default), NUTS or Gaussian random-walk Metropolis on the tempered
target. Tuning matters (STACK_PROBE section 5.1: a badly tuned kernel gave log Z off by > 1 nat). The inverse
mass matrix (the random walk's proposal covariance) is the dense covariance of the prior particles, fixed for
the run (STACK_PROBE used the prior covariance too); the step size follows the mean acceptance rate of the
previous mutation multiplicatively towards ``target_accept`` (in the spirit of Buchholz, Chopin & Jacob 2021).
Re-estimating the dense mass matrix from the current particles at every step, the obvious alternative, is NOT
used: on the conjugate GP check it biased log Z by +0.08 (N=1000) and +0.15 (N=4000) nats, 4-9 standard errors,
while the same run with the exact covariance of each tempered target, or the prior covariance, was unbiased.

In BlackJAX 1.7 one step is resample -> mutate at the current beta -> reweight to the next beta, so the final
particles are weighted; they are resampled once more (systematic) into an equally weighted posterior sample.
Independent runs are vmapped: run = chain, particle = draw.
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.smc import resampling
from blackjax.smc.base import extend_params
from jax.flatten_util import ravel_pytree
from numpyro import handlers
from numpyro.infer.util import constrain_fn, log_likelihood, potential_energy, unconstrain_fn

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from zoo.errors import OptionError
from zoo.options import Option

MUTATIONS = ("hmc", "nuts", "rw")


def prior_and_likelihood(model, params, observed, flat_template):
    """``(log_prior, log_likelihood)`` of a flat unconstrained vector z (d,) of ``model(params, **observed)``.

    log_likelihood: observed sites only (sites conditioned through ``params`` are constants, not data);
    log_prior: -potential - log_likelihood, i.e. latent priors plus the log-Jacobian.
    """
    _, unravel = ravel_pytree(flat_template)

    def log_lik(z):
        values = constrain_fn(model, (params,), observed, unravel(z))
        per_site = log_likelihood(model, values, params, batch_ndims=0, **observed)
        return sum(jnp.sum(v) for name, v in per_site.items() if name not in params)

    def log_prior(z):
        return -potential_energy(model, (params,), observed, unravel(z)) - log_lik(z)

    return log_prior, log_lik


def prior_draw(model, key, params, observed) -> dict[str, jax.Array]:
    """One draw of the unobserved sample sites, unconstrained.

    Runs the program with the data in place: for a generative program (observations are leaves that no latent
    site depends on) this is ancestral sampling from the prior.
    """
    trace = handlers.trace(handlers.seed(model, key)).get_trace(params, **observed)
    latent = {n: s["value"] for n, s in trace.items() if s["type"] == "sample" and not s["is_observed"]}
    return unconstrain_fn(model, (params,), observed, latent)


def weighted_covariance(particles, weights, jitter: float = 1e-9):
    """Dense covariance (d, d) of weighted particles (N, d) with normalised weights (N,)."""
    mean = weights @ particles
    centred = particles - mean
    cov = (centred * weights[:, None]).T @ centred
    return cov + jitter * jnp.mean(jnp.diag(cov)) * jnp.eye(cov.shape[0])


def random_walk_step(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
    """Gaussian random-walk Metropolis with proposal covariance step_size^2 * inverse_mass_matrix."""
    chol = jnp.linalg.cholesky(inverse_mass_matrix)

    def random_step(key, position):
        return step_size * chol @ jax.random.normal(key, position.shape)

    return blackjax.mcmc.random_walk.build_additive_step()(rng_key, state, logdensity_fn, random_step)


def mutation_kernel(mutation: str, num_integration_steps: int):
    """``(step_fn, init_fn)`` for BlackJAX's SMC; tuned parameters are ``step_size``, ``inverse_mass_matrix``."""
    if mutation == "hmc":
        hmc = blackjax.hmc.build_kernel()

        def step(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
            return hmc(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix, num_integration_steps)

        return step, blackjax.hmc.init
    if mutation == "nuts":
        return blackjax.nuts.build_kernel(), blackjax.nuts.init
    return random_walk_step, blackjax.mcmc.random_walk.init


@program_cache
def tempered_smc(model, num_particles: int, max_steps: int, static: tuple):
    """Chains ``(keys (R,), params, observed) -> (posterior, log_Z (R,), traces)`` (``inference.core.chains``): R
    independent runs.

    posterior: constrained sites, each (R, num_particles, *shape); traces: per tempering step k (R, max_steps),
    ``tempering_param`` beta_k and cumulative ``log_evidence``, NaN after the last step.
    """
    opts = dict(static)
    mcmc_step, mcmc_init = mutation_kernel(opts["mutation"], opts["num_integration_steps"])
    target_accept = opts["target_accept"]

    def one_run(key, params, observed):
        k_prior, k_smc, k_final = jax.random.split(key, 3)
        draws = jax.vmap(lambda k: prior_draw(model, k, params, observed))(jax.random.split(k_prior, num_particles))
        template = jax.tree.map(lambda v: v[0], draws)
        flat = jax.vmap(lambda d: ravel_pytree(d)[0])(draws)  # (N, d)
        log_prior, log_lik = prior_and_likelihood(model, params, observed, template)
        kernel = blackjax.adaptive_tempered_smc.build_kernel(
            log_prior, log_lik, mcmc_step, mcmc_init, resampling.systematic, opts["target_ess"]
        )
        uniform = jnp.full(num_particles, 1.0 / num_particles)

        def not_done(carry):
            i, state, *_ = carry
            return (state.tempering_param < 1.0) & (i < max_steps)

        def body(carry):
            i, state, step_size, log_z, key, betas, log_zs = carry
            key, k_step = jax.random.split(key)
            tuned = extend_params({"step_size": step_size, "inverse_mass_matrix": inverse_mass_matrix})
            state, info = kernel(k_step, state, opts["num_mcmc_steps"], tuned)
            log_z = log_z + info.log_likelihood_increment
            acceptance = jnp.mean(info.update_info.acceptance_rate)
            step_size = step_size * jnp.exp(acceptance - target_accept)
            return i + 1, state, step_size, log_z, key, betas.at[i].set(state.tempering_param), log_zs.at[i].set(log_z)

        inverse_mass_matrix = weighted_covariance(flat, uniform)
        init_state = blackjax.smc.tempered.TemperedSMCState(flat, uniform, jnp.asarray(0.0))
        nans = jnp.full(max_steps, jnp.nan)
        carry = (0, init_state, jnp.asarray(opts["step_size"]), jnp.asarray(0.0), k_smc, nans, nans)
        n_steps, state, _, log_z, _, betas, log_zs = jax.lax.while_loop(not_done, body, carry)
        # The last mutation targeted the previous beta; resample by the final weights to an unweighted sample.
        final = state.particles[resampling.systematic(k_final, state.weights, num_particles)]
        _, unravel = ravel_pytree(template)
        constrain = jax.vmap(lambda z: constrain_fn(model, (params,), observed, unravel(z), True))
        finished = state.tempering_param >= 1.0
        return constrain(final), jnp.where(finished, log_z, jnp.nan), {"tempering_param": betas, "log_evidence": log_zs}

    return vmapped_chains(one_run)


def combine_log_evidence(log_z_runs) -> float:
    """log of the mean of the runs' evidence estimates (each unbiased for Z, so the mean is too)."""
    log_z_runs = jnp.asarray(log_z_runs)
    return float(jax.scipy.special.logsumexp(log_z_runs) - jnp.log(log_z_runs.shape[0]))


@register_engine(
    "tsmc",
    requires={"continuous"},
    options={
        "num_chains": opt.num_chains(4),
        "num_particles": opt.num_particles(1000),
        "params": opt.params({}),
        "mutation": opt.choice("hmc", MUTATIONS, "the MCMC kernel that moves the particles"),
        "num_mcmc_steps": Option("int", 10, "mutation steps per tempering step", minimum=1),
        "num_integration_steps": Option("int", 10, "leapfrog steps per HMC move", minimum=1),
        "step_size": Option("float", 0.5, "initial step size, tuned between tempering steps", above=0.0),
        "target_ess": opt.fraction(0.5, "ESS fraction each tempering step keeps", closed=False),
        # the RW optimum is near 0.234-0.3, not HMC's 0.8: tsmc uses 0.3 for rw when left at this default
        "target_accept": opt.target_accept(0.8),
        "max_tempering_steps": Option("int", 200, "give up if beta = 1 is not reached by then", minimum=1),
    },
    summary="Adaptive tempered SMC (BlackJAX), tuned HMC/NUTS/RW mutation; particles and log evidence",
)
def tsmc(spec, dataset, key, timer, **options: Any) -> EngineOutput:
    """num_chains independent runs (chain = run, draw = particle after a final resampling)."""
    if options["mutation"] == "rw" and options["target_accept"] == 0.8:
        options = {**options, "target_accept": 0.3}
    static = tuple(
        (k, float(v) if isinstance(v, float) else v)
        for k, v in sorted(options.items())
        if k in {"mutation", "num_mcmc_steps", "num_integration_steps", "step_size", "target_ess", "target_accept"}
    )
    model = conditioned_program(spec)
    runs = tempered_smc(model, options["num_particles"], options["max_tempering_steps"], static)
    keys = jax.random.split(key, options["num_chains"])
    posterior, log_z, traces = runs.run(timer, keys, options["params"], observed_args(dataset))
    if not bool(jnp.all(jnp.isfinite(log_z))):
        raise OptionError(
            f"tempering did not reach beta = 1 within max_tempering_steps={options['max_tempering_steps']}"
        )
    num_steps = int(jnp.sum(jnp.isfinite(traces["tempering_param"])))
    per_step = options["num_particles"] * options["num_mcmc_steps"]
    grads = per_step * options["num_integration_steps"] if options["mutation"] == "hmc" else None
    return EngineOutput(
        posterior=posterior,
        traces=traces,
        log_evidence=combine_log_evidence(log_z),
        num_grad_evals=None if grads is None else num_steps * grads,
        num_lik_evals=num_steps * per_step,
    )
