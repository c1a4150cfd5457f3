"""Microcanonical Langevin Monte Carlo (MCLMC, Robnik et al. 2023), unadjusted, via BlackJAX (docs/gym.md#mclmc).

Per chain: ``blackjax.mclmc_find_L_and_step_size`` tunes the step size (to an energy error variance per dimension
of ``desired_energy_var``), a diagonal preconditioner and the momentum decoherence length L (from the chain's
autocorrelation, ``frac_tune3``); then ``num_samples`` steps of BlackJAX's MCLMC kernel with the tuned values, every
step a draw. BlackJAX sizes its three tuning stages as fractions of the sampling run (``num_steps``), so the warm-up
length follows from ``num_samples`` and the fractions (``warmup_steps``) instead of being an option.

No Metropolis correction: the draws carry a bias of the order of the energy error, which the step-size tuning keeps
small (the exactness tests measure it against conjugate posteriors: docs/architecture.md#exactness).
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.mcmc.integrators import isokinetic_mclachlan

from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import gym_common as common
from zoo.options import Option

# McLachlan's minimal-norm integrator (BlackJAX's default for MCLMC): coefficients [b1, a1, b2, a1, b1], two
# position updates, each followed by one gradient of the log density (blackjax.mcmc.integrators).
GRADS_PER_STEP = 2
RUNNER_OPTIONS = {"num_chains", "num_samples", "params", "init_radius", "chain_method"}


def warmup_steps(num_samples: int, frac_tune1: float, frac_tune2: float, frac_tune3: float, diagonal: bool) -> int:
    """Kernel steps ``mclmc_find_L_and_step_size`` (BlackJAX 1.7.1) takes for ``num_steps = num_samples``: stage 1,
    stage 2, with a diagonal preconditioner ``round(stage2 / 3)`` more at the new metric, and stage 3 if it has at
    least two steps. Counted here from its code, because the count it returns adds ``stage2 // 3``, which differs by
    one when ``stage2 % 3 == 2`` (``tests/test_gym_engines.py`` checks ours against the gradients the compiled program
    evaluates)."""
    stage1, stage2, stage3 = (
        round(num_samples * frac_tune1),
        round(num_samples * frac_tune2),
        round(num_samples * frac_tune3),
    )
    steps = stage1 + stage2 + (round(stage2 / 3) if diagonal and stage2 > 1 else 0)
    return steps + (stage3 if stage3 >= 2 else 0)


@program_cache
def sampler(model, num_samples: int, static: tuple):
    """Chains ``((keys (C,), z0 (C, ...)), params, observed) -> (draws (C, S, ...), stats (C, S), tuned (C,))``."""
    options = dict(static)
    kernel = blackjax.mcmc.mclmc.build_kernel(
        integrator=isokinetic_mclachlan, desired_energy_var=options["desired_energy_var"]
    )

    def one_chain(start, params, observed):
        key, z0 = start
        logdensity = common.logdensity(model, params, observed)
        k_init, k_tune, k_run = jax.random.split(key, 3)
        state = blackjax.mcmc.mclmc.init(z0, logdensity, k_init)
        state, tuned, _ = blackjax.mclmc_find_L_and_step_size(
            mclmc_kernel=kernel,
            num_steps=num_samples,
            state=state,
            rng_key=k_tune,
            logdensity_fn=logdensity,
            frac_tune1=options["frac_tune1"],
            frac_tune2=options["frac_tune2"],
            frac_tune3=options["frac_tune3"],
            desired_energy_var=options["desired_energy_var"],
            diagonal_preconditioning=options["diagonal_preconditioning"],
        )

        def one_step(state, k):
            state, info = kernel(k, state, logdensity, tuned.inverse_mass_matrix, tuned.L, tuned.step_size)
            stats = {"lp": info.logdensity, "energy_change": info.energy_change, "diverging": ~info.nonans}
            return state, (state.position, stats)

        _, (positions, stats) = jax.lax.scan(one_step, state, jax.random.split(k_run, num_samples))
        return common.constrained(model, params, observed, positions), stats, (tuned.L, tuned.step_size)

    return vmapped_chains(one_chain)


def _run(spec, dataset, key, timer, **options: Any) -> EngineOutput:
    model = conditioned_program(spec)
    params, observed = options["params"], observed_args(dataset)
    k_init, k_run = jax.random.split(key)
    z0 = common.starts(model, k_init, options["num_chains"], params, observed, options["init_radius"], timer)
    common.require_dimension("mclmc", z0, 2)
    chains = sampler(model, options["num_samples"], common.static_options(options, RUNNER_OPTIONS))
    keys = jax.random.split(k_run, options["num_chains"])
    sequential = options["chain_method"] == "sequential"
    posterior, stats, (L, step_size) = chains.run(timer, (keys, z0), params, observed, sequential=sequential)
    steps = options["num_samples"] + warmup_steps(
        options["num_samples"],
        options["frac_tune1"],
        options["frac_tune2"],
        options["frac_tune3"],
        options["diagonal_preconditioning"],
    )
    stats = {**stats, "L": jnp.broadcast_to(L[:, None], stats["lp"].shape)}
    stats["step_size"] = jnp.broadcast_to(step_size[:, None], stats["lp"].shape)
    # Per chain: one gradient at the start (mclmc.init) and GRADS_PER_STEP per kernel step, tuning included;
    # grad_evals: the chain's gradients up to and including each draw (docs/gym.md#metric).
    warm = steps - options["num_samples"]
    draws = jnp.arange(1, options["num_samples"] + 1)
    stats["grad_evals"] = jnp.broadcast_to(1 + GRADS_PER_STEP * (warm + draws), stats["lp"].shape)
    return EngineOutput(
        posterior=posterior,
        sample_stats=stats,
        num_grad_evals=options["num_chains"] * (1 + GRADS_PER_STEP * steps),
    )


@register_engine(
    "mclmc",
    requires={"continuous"},
    options={
        **common.common_options(num_chains=4, num_samples=1000),
        "chain_method": common.chain_method(),
        **common.tuning_stages(frac_tune3=0.1),
        "desired_energy_var": Option("float", 5e-4, "target energy error variance per dimension", above=0.0),
        "diagonal_preconditioning": Option("bool", True, "tune a diagonal preconditioner in stage 2"),
    },
    summary="Unadjusted microcanonical Langevin MC (BlackJAX) with its L and step-size tuning",
)
def mclmc(spec, dataset, key, timer, **options) -> EngineOutput:
    return _run(spec, dataset, key, timer, **options)
