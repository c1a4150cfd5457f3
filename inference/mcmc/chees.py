"""ChEES-HMC (Hoffman, Radul & Sountsov 2021) via BlackJAX: many chains in lockstep (docs/gym.md#chees).

``blackjax.chees_adaptation`` warms up all chains together: jittered HMC (the number of leapfrog steps is
ceil(u_t * T / eps), with u_t a Halton sequence shared by the chains), the step size by dual averaging towards
``target_accept`` on the chains' harmonic-mean acceptance, and the trajectory length T by Adam (optax) on the
ChEES criterion, the change in the centred second moments estimated across chains. With ``diagonal_mass=True`` it
also estimates a diagonal inverse mass matrix from all chains over the second half of the warm-up (BlackJAX's
``mass_matrix_estimation="diagonal"``). Sampling then runs BlackJAX's ``dhmc`` kernel with the adapted step size,
mass matrix and (moving-average) trajectory length, all chains vmapped.

Not through ``inference.core.chains.vmapped_chains``: the adaptation couples the chains (the criterion is a
cross-chain average), so the chains are one program by construction and there is no sequential variant.
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import gym_common as common
from inference.mcmc.pathfinder import chain_starts
from inference.optimisation import solver
from zoo.options import Option

RUNNER_OPTIONS = {"num_chains", "num_samples", "num_warmup", "params", "init_radius", "init"}


@program_cache
def sampler(model, num_chains: int, num_warmup: int, num_samples: int, static: tuple):
    """Jitted ``(key, z0 (C, ...), params, observed) -> (draws (C, S, ...), stats (C, S), warm-up leapfrog steps
    (C,))``."""
    options = dict(static)

    def all_chains(key, z0, params, observed):
        # Workaround: BlackJAX's ChEES adaptation treats every leaf of the position as (chains, dim) (its weighted
        # means test finiteness over the last axis only), so a site with two or more dimensions (an SSM's states,
        # (C, T, D)) fails to broadcast. The chains run on the flattened position vector instead.
        _, unravel = ravel_pytree(jax.tree.map(lambda x: x[0], z0))
        z0 = jax.vmap(lambda z: ravel_pytree(z)[0])(z0)
        tree_logdensity = common.logdensity(model, params, observed)

        def logdensity(x):
            return tree_logdensity(unravel(x))

        warmup = blackjax.chees_adaptation(
            logdensity,
            num_chains,
            target_acceptance_rate=options["target_accept"],
            max_leapfrog_steps=options["max_leapfrog_steps"],
            mass_matrix_estimation="diagonal" if options["diagonal_mass"] else None,
        )
        k_warm, k_run = jax.random.split(key)
        (states, parameters), info = warmup.run(
            k_warm,
            z0,
            options["initial_step_size"],
            solver("adam", options["learning_rate"]),  # ChEES adapts its trajectory length by Adam
            num_warmup,
            max_sampling_steps=num_samples,
        )
        # info.info is the dhmc kernel's HMCInfo of every warm-up step, (num_warmup, C).
        warmup_steps = jnp.sum(info.info.num_integration_steps, axis=0)
        step = jax.vmap(blackjax.dhmc(logdensity, **parameters).step)

        def one_step(states, k):
            states, info = step(jax.random.split(k, num_chains), states)
            stats = {
                "diverging": info.is_divergent,
                "n_steps": info.num_integration_steps,
                "acceptance_rate": info.acceptance_rate,
                "energy": info.energy,
                "lp": states.logdensity,
            }
            return states, (states.position, stats)

        _, (positions, stats) = jax.lax.scan(one_step, states, jax.random.split(k_run, num_samples))
        positions, stats = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), (positions, stats))  # (C, S, D)
        positions = jax.vmap(jax.vmap(unravel))(positions)  # back to the sites, (C, S, ...)
        draws = jax.vmap(lambda z: common.constrained(model, params, observed, z))(positions)
        stats["step_size"] = jnp.full(stats["lp"].shape, parameters["step_size"])
        return draws, stats, warmup_steps

    return jax.jit(all_chains)


@register_engine(
    "chees",
    requires={"continuous"},
    options={
        **common.common_options(num_chains=16, num_samples=500),
        # The ChEES criterion and the acceptance statistic are averages across chains: two at least.
        "num_chains": Option("int", 16, "chains in lockstep; the adaptation averages across them", minimum=2),
        "num_warmup": opt.num_warmup(500, minimum=2),
        # Hoffman et al. 2021 (sec. 3.3): HMC's optimal 0.651 and Adam with learning rate 0.025 for log T.
        "target_accept": Option(
            "float", 0.651, "dual averaging's target (harmonic-mean) acceptance", above=0.0, below=1.0
        ),
        "learning_rate": opt.learning_rate(0.025),
        "initial_step_size": Option("float", 0.1, "leapfrog step size at the start of the warm-up", above=0.0),
        "max_leapfrog_steps": Option("int", 1000, "cap on leapfrog steps per trajectory", minimum=1),
        "diagonal_mass": Option("bool", True, "estimate a diagonal inverse mass matrix across chains during warm-up"),
        "init": opt.chain_init(),
    },
    summary="ChEES-adapted jittered HMC (BlackJAX): many chains in lockstep, trajectory length by the ChEES criterion",
)
def chees(spec, dataset, key, timer, **options: Any) -> EngineOutput:
    model = conditioned_program(spec)
    params, observed = options["params"], observed_args(dataset)
    k_init, k_run = jax.random.split(key)
    z0, init_grads, init_stats = chain_starts(
        options["init"], model, k_init, options["num_chains"], params, observed, options["init_radius"], timer
    )
    static = common.static_options(options, RUNNER_OPTIONS)
    program = sampler(model, options["num_chains"], options["num_warmup"], options["num_samples"], static)
    posterior, stats, warmup_steps = timer.call(program, k_run, z0, params, observed)
    # Per chain: an even share of the gradients spent finding the starts (init="pathfinder"), one gradient at the
    # start (dhmc.init) and one per leapfrog step (velocity Verlet reuses the gradient of the previous position),
    # warm-up and sampling.
    share = init_grads / options["num_chains"]
    grad_evals = share + 1 + warmup_steps[:, None] + jnp.cumsum(stats["n_steps"], axis=1)
    stats = {**stats, "grad_evals": grad_evals, **{k: jnp.full(grad_evals.shape, v) for k, v in init_stats.items()}}
    leapfrogs = int(jnp.sum(warmup_steps)) + int(jnp.sum(stats["n_steps"]))
    total = init_grads + options["num_chains"] + leapfrogs
    return EngineOutput(posterior=posterior, sample_stats=stats, num_grad_evals=total)
