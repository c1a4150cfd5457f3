"""NumPyro's own NUTS kernel, the peer reference for the BlackJAX engine.

NumPyro's ``MCMC`` driver recompiles its sampling loop on every call and cannot separate compile time from
run time, so this engine drives NumPyro's ``NUTS`` kernel (its own integrator, tree building and
Stan-style window adaptation, all inside ``kernel.sample``) with the same harness as the BlackJAX engine:
chains vmapped, warmup and sampling in one ``lax.scan`` each, one cached ``jit`` timed by ``Timer``.
"""

import jax
import jax.numpy as jnp
from numpyro.infer import NUTS

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import conditioned_program, observed_args


@program_cache
def nuts_chains(model, num_warmup: int, num_samples: int, target_accept: float, num_chains: int):
    """Jitted ``(keys, params, observed) -> (draws, stats, warmup_steps)`` running every chain."""
    kernel = NUTS(model, target_accept_prob=target_accept)

    def run(keys, params, observed):
        args, kwargs = (params,), observed
        # NumPyro batches its init over raw (num_chains, 2) keys, not typed key arrays.
        raw_keys = jax.random.key_data(keys)
        state = kernel.init(raw_keys, num_warmup, None, model_args=args, model_kwargs=kwargs)

        def step(state):  # already vectorized: NumPyro vmaps its sample_fn when init is given batched keys
            return kernel.sample(state, args, kwargs)

        def warm(state, _):
            state = step(state)
            return state, state.num_steps

        def draw(state, _):
            state = step(state)
            stats = {"diverging": state.diverging, "n_steps": state.num_steps, "energy": state.energy}
            return state, (state.z, stats)

        state, warmup_steps = jax.lax.scan(warm, state, None, length=num_warmup)
        _, (z, stats) = jax.lax.scan(draw, state, None, length=num_samples)
        # scan stacks draws first: (draw, chain, ...) -> (chain, draw, ...)
        z, stats = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), (z, stats))
        constrain = kernel.postprocess_fn(args, kwargs)
        return jax.vmap(jax.vmap(constrain))(z), stats, jnp.sum(warmup_steps)

    return jax.jit(run)


@register_engine(
    "numpyro-nuts",
    requires={"continuous"},
    options=opt.adaptive_mcmc(),
    summary="NumPyro's NUTS kernel (vectorized chains), the peer reference for BlackJAX NUTS",
)
def numpyro_nuts(spec, dataset, key, timer, **options) -> EngineOutput:
    run = nuts_chains(
        conditioned_program(spec),
        options["num_warmup"],
        options["num_samples"],
        float(options["target_accept"]),
        options["num_chains"],
    )
    keys = jax.random.split(key, options["num_chains"])
    draws, stats, warmup_steps = timer.call(run, keys, options["params"], observed_args(dataset))
    return EngineOutput(
        posterior=draws,
        sample_stats=stats,
        num_grad_evals=int(jnp.sum(stats["n_steps"]) + warmup_steps),
    )
