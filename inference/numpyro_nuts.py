"""NumPyro's own NUTS, the peer reference for the BlackJAX engine.

Chains run vectorized. NumPyro's ``MCMC.run`` compiles inside the call, so compile and run time cannot be
split: the whole call is reported as run time (the persistent compilation cache makes repeat calls cheap).
"""

import time

import jax.numpy as jnp
from numpyro.infer import MCMC, NUTS

from inference.api import EngineOutput, register_engine
from inference.program import conditioned_program, observed_args


@register_engine(
    "numpyro-nuts",
    requires={"continuous"},
    defaults={"num_chains": 4, "num_warmup": 500, "num_samples": 500, "params": {}, "target_accept": 0.8},
    summary="NumPyro's NUTS (vectorized chains), the peer reference for BlackJAX NUTS",
)
def numpyro_nuts(spec, dataset, key, timer, **options) -> EngineOutput:
    mcmc = MCMC(
        NUTS(conditioned_program(spec), target_accept_prob=float(options["target_accept"])),
        num_warmup=options["num_warmup"],
        num_samples=options["num_samples"],
        num_chains=options["num_chains"],
        chain_method="vectorized",
        progress_bar=False,
    )
    args, observed = (options["params"],), observed_args(dataset)
    start = time.perf_counter()
    mcmc.warmup(key, *args, **observed, extra_fields=("num_steps",), collect_warmup=True)
    warmup_steps = jnp.sum(mcmc.get_extra_fields()["num_steps"])
    mcmc.run(mcmc.post_warmup_state.rng_key, *args, **observed, extra_fields=("diverging", "num_steps"))
    samples = mcmc.get_samples(group_by_chain=True)
    timer.run_s += time.perf_counter() - start
    extra = mcmc.get_extra_fields(group_by_chain=True)
    return EngineOutput(
        posterior=samples,
        sample_stats={"diverging": extra["diverging"], "n_steps": extra["num_steps"]},
        num_grad_evals=int(jnp.sum(extra["num_steps"]) + warmup_steps),
    )
