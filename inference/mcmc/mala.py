"""Metropolis-adjusted Langevin algorithm (MALA) via BlackJAX, with dual-averaging step-size tuning
(docs/gym.md#mala).

BlackJAX's MALA kernel proposes x' = x + tau grad log p(x) + sqrt(2 tau) xi and accepts by the MH ratio with the
asymmetric Langevin proposal density; ``step_size`` is tau. BlackJAX offers no warm-up for MALA (its
``window_adaptation`` calls the kernel with a mass matrix, which the MALA kernel does not take), so the step size is
tuned by BlackJAX's dual averaging primitive (``blackjax.adaptation.step_size.dual_averaging_adaptation``, Hoffman &
Gelman 2014, eq. 6) on the kernel's acceptance probability during ``num_warmup`` steps, towards 0.574, the optimal
acceptance rate of MALA (Roberts & Rosenthal 1998); sampling uses the final averaged step size. No preconditioning
(the kernel has no mass matrix), so MALA mixes slowly on badly scaled posteriors: that is part of what the gym shows.
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.adaptation.step_size import dual_averaging_adaptation

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import gym_common as common
from zoo.options import Option

RUNNER_OPTIONS = {"num_chains", "num_samples", "num_warmup", "params", "init_radius", "chain_method"}


@program_cache
def sampler(model, num_warmup: int, num_samples: int, static: tuple):
    """Chains ``((keys, z0), params, observed) -> (draws (C, S, ...), stats (C, S))``: one scan of warm-up steps that
    adapt the step size, then one of sampling steps at the tuned step size."""
    options = dict(static)
    kernel = blackjax.mcmc.mala.build_kernel()
    da_init, da_update, da_final = dual_averaging_adaptation(target=options["target_accept"])

    def one_chain(start, params, observed):
        key, z0 = start
        logdensity = common.logdensity(model, params, observed)
        k_warm, k_run = jax.random.split(key)
        state = blackjax.mcmc.mala.init(z0, logdensity)

        def warm_step(carry, k):
            state, da = carry
            state, info = kernel(k, state, logdensity, jnp.exp(da.log_step_size))
            return (state, da_update(da, info.acceptance_rate)), None

        (state, da), _ = jax.lax.scan(
            warm_step, (state, da_init(options["initial_step_size"])), jax.random.split(k_warm, num_warmup)
        )
        step_size = da_final(da)

        def one_step(state, k):
            state, info = kernel(k, state, logdensity, step_size)
            stats = {"acceptance_rate": info.acceptance_rate, "lp": state.logdensity, "step_size": step_size}
            return state, (state.position, stats)

        _, (positions, stats) = jax.lax.scan(one_step, state, jax.random.split(k_run, num_samples))
        return common.constrained(model, params, observed, positions), stats

    return vmapped_chains(one_chain)


@register_engine(
    "mala",
    requires={"continuous"},
    options={
        **common.common_options(num_chains=4, num_samples=2000),
        "num_warmup": opt.num_warmup(1000, minimum=1),
        "chain_method": common.chain_method(),
        "target_accept": Option("float", 0.574, "dual averaging's target acceptance rate", above=0.0, below=1.0),
        "initial_step_size": Option("float", 0.01, "step size tau at the start of the dual averaging", above=0.0),
    },
    summary="Metropolis-adjusted Langevin (BlackJAX) with dual-averaging step-size tuning",
)
def mala(spec, dataset, key, timer, **options: Any) -> EngineOutput:
    model = conditioned_program(spec)
    params, observed = options["params"], observed_args(dataset)
    k_init, k_run = jax.random.split(key)
    z0 = common.starts(model, k_init, options["num_chains"], params, observed, options["init_radius"], timer)
    static = common.static_options(options, RUNNER_OPTIONS)
    chains = sampler(model, options["num_warmup"], options["num_samples"], static)
    keys = jax.random.split(k_run, options["num_chains"])
    sequential = options["chain_method"] == "sequential"
    posterior, stats = chains.run(timer, (keys, z0), params, observed, sequential=sequential)
    # Per chain: one gradient at the start (mala.init) and one per proposal (value_and_grad at the proposed point;
    # the current point's gradient is kept in the state).
    steps = options["num_warmup"] + options["num_samples"]
    draws = jnp.arange(1, options["num_samples"] + 1)
    stats = {**stats, "grad_evals": jnp.broadcast_to(1 + options["num_warmup"] + draws, stats["lp"].shape)}
    return EngineOutput(posterior=posterior, sample_stats=stats, num_grad_evals=options["num_chains"] * (1 + steps))
