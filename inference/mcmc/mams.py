"""Metropolis-adjusted microcanonical sampler (MAMS, Robnik et al. 2025) via BlackJAX (docs/gym.md#mams).

BlackJAX's ``adjusted_mclmc_dynamic`` kernel: per step a fresh unit-norm momentum, a trajectory of
isokinetic (McLachlan) integration steps whose number is random, uniform up to about twice L / step size (BlackJAX's
``make_random_trajectory_length_fn(True)``, which decorrelates the trajectory length as the paper does), and an MH
accept/reject of the endpoint, so the draws are exact up to Monte Carlo error. Per chain,
``blackjax.adjusted_mclmc_find_L_and_step_size`` tunes the step size by dual averaging to ``target_accept``, a
diagonal preconditioner and L; the tuning stages are fractions of ``num_samples``, as in ``mclmc``. In BlackJAX
1.7.1 the tuner calibrates the step size at a fixed average trajectory of ``target_num_integration_steps`` steps and
returns L = that x step size (its docstring measures 2 as the robust choice), so L is set by that option, not by the
autocorrelation stage (``frac_tune3``) the paper describes.
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.mcmc.adjusted_mclmc_dynamic import make_random_trajectory_length_fn
from blackjax.mcmc.integrators import isokinetic_mclachlan

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import gym_common as common
from inference.mcmc.pathfinder import chain_starts
from zoo.options import Option

# McLachlan's integrator: two gradients per integration step (inference/mcmc/mclmc.py).
GRADS_PER_STEP = 2
RUNNER_OPTIONS = {"num_chains", "num_samples", "params", "init_radius", "chain_method", "init"}


@program_cache
def sampler(model, num_samples: int, static: tuple):
    """Chains ``((keys, z0), params, observed) -> (draws, stats, tuning integration steps (C,), (L, step) (C,))``."""
    options = dict(static)
    kernel = blackjax.mcmc.adjusted_mclmc_dynamic.build_kernel(
        integration_steps_fn=make_random_trajectory_length_fn(random_trajectory_length=True),
        integrator=isokinetic_mclachlan,
    )

    def one_chain(start, params, observed):
        key, z0 = start
        logdensity = common.logdensity(model, params, observed)
        k_init, k_tune, k_run = jax.random.split(key, 3)
        state = blackjax.mcmc.adjusted_mclmc_dynamic.init(z0, logdensity, k_init)
        # The count BlackJAX returns here sums the integration steps its kernel reported (info.num_integration_steps)
        # over every tuning step, so it is exact.
        state, tuned, tuning_steps = blackjax.adjusted_mclmc_find_L_and_step_size(
            mclmc_kernel=kernel,
            logdensity_fn=logdensity,
            num_steps=num_samples,
            state=state,
            rng_key=k_tune,
            target=options["target_accept"],
            frac_tune1=options["frac_tune1"],
            frac_tune2=options["frac_tune2"],
            frac_tune3=options["frac_tune3"],
            diagonal_preconditioning=options["diagonal_preconditioning"],
            target_num_integration_steps=options["target_num_integration_steps"],
        )
        average_steps = tuned.L / tuned.step_size

        def one_step(state, k):
            state, info = kernel(
                k,
                state,
                logdensity,
                tuned.step_size,
                inverse_mass_matrix=tuned.inverse_mass_matrix,
                integration_steps_params=(average_steps,),
            )
            stats = {
                "diverging": info.is_divergent,
                "n_steps": info.num_integration_steps,
                "acceptance_rate": info.acceptance_rate,
                "lp": state.logdensity,
            }
            return state, (state.position, stats)

        _, (positions, stats) = jax.lax.scan(one_step, state, jax.random.split(k_run, num_samples))
        draws = common.constrained(model, params, observed, positions)
        return draws, stats, jnp.asarray(tuning_steps), (tuned.L, tuned.step_size)

    return vmapped_chains(one_chain)


def _run(spec, dataset, key, timer, **options: Any) -> EngineOutput:
    model = conditioned_program(spec)
    params, observed = options["params"], observed_args(dataset)
    k_init, k_run = jax.random.split(key)
    z0, init_grads, init_stats = chain_starts(
        options["init"], model, k_init, options["num_chains"], params, observed, options["init_radius"], timer
    )
    common.require_dimension("mams", z0, 2)
    chains = sampler(model, options["num_samples"], common.static_options(options, RUNNER_OPTIONS))
    keys = jax.random.split(k_run, options["num_chains"])
    sequential = options["chain_method"] == "sequential"
    posterior, stats, tuning_steps, (L, step_size) = chains.run(
        timer, (keys, z0), params, observed, sequential=sequential
    )
    shape = stats["lp"].shape
    stats = {
        **stats,
        "L": jnp.broadcast_to(L[:, None], shape),
        "step_size": jnp.broadcast_to(step_size[:, None], shape),
        **{name: jnp.full(shape, value) for name, value in init_stats.items()},
    }
    # Per chain: one gradient at the start (init), GRADS_PER_STEP per integration step in tuning and sampling (the
    # trajectory starts from the state's stored gradient; the MH test uses the endpoint's, computed in the last step).
    # Gradients spent finding the starts (init="pathfinder") are shared by the chains: each carries an even share.
    steps = tuning_steps[:, None] + jnp.cumsum(stats["n_steps"], axis=1)
    stats["grad_evals"] = init_grads / options["num_chains"] + 1 + GRADS_PER_STEP * steps
    integration_steps = int(jnp.sum(tuning_steps)) + int(jnp.sum(stats["n_steps"]))
    return EngineOutput(
        posterior=posterior,
        sample_stats=stats,
        num_grad_evals=init_grads + options["num_chains"] + GRADS_PER_STEP * integration_steps,
    )


@register_engine(
    "mams",
    requires={"continuous"},
    options={
        **common.common_options(num_chains=4, num_samples=1000),
        "chain_method": common.chain_method(),
        "init": opt.chain_init(),
        # Robnik et al. 2025 (sec. 4) tune MAMS to an acceptance rate of 0.9, not HMC's 0.65-0.8.
        "target_accept": Option(
            "float", 0.9, "target acceptance rate of the step-size dual averaging", above=0.0, below=1.0
        ),
        # BlackJAX 1.7.1 ends its tuning by setting L = target_num_integration_steps x step size, whatever stage 3
        # found, so stage 3 only costs gradients unless that changes: off by default (BlackJAX's default too).
        **common.tuning_stages(frac_tune3=0.0),
        "target_num_integration_steps": Option(
            "float",
            2.0,
            "average integration steps per trajectory, L / step size (BlackJAX's default; its tuner needs > 1.1)",
            above=1.1,
        ),
        "diagonal_preconditioning": Option("bool", True, "tune a diagonal preconditioner in stage 2"),
    },
    summary="Metropolis-adjusted microcanonical sampler, MAMS (BlackJAX adjusted_mclmc_dynamic) with its tuning",
)
def mams(spec, dataset, key, timer, **options) -> EngineOutput:
    return _run(spec, dataset, key, timer, **options)
