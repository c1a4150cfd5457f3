"""``ess``: elliptical slice sampling of the latent f of a latent GP under its Gaussian prior, at fixed
hyperparameters (Murray, Adams & MacKay 2010; BlackJAX's ``elliptical_slice``; docs/sources/nonconjugate.md#ess).

Each step draws nu ~ N(0, K), a slice height under the current likelihood, and shrinks an angle bracket on the
ellipse f' = m + (f - m) cos t + nu sin t until the likelihood exceeds the height. It needs no step size and no
gradients, and leaves N(m, K) x p(y|f) invariant (MAM 2010, sec. 2). The hyperparameters are fixed (``params``,
else the model's defaults): no Gibbs step on them is offered here (docs/sources/nonconjugate.md#ess says why).

Chains start from independent prior draws (over-dispersed relative to the posterior, so R-hat can flag a chain
that has not mixed); the first ``num_warmup`` steps are discarded; every ``thinning``-th draw is kept.
"""

import blackjax
import jax
import jax.numpy as jnp

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from zoo.options import Option

__all__ = ["ess"]


@program_cache
def ess_runner(view, num_warmup: int, num_samples: int, thinning: int):
    def one_chain(key, params, X, y):
        m, K = view.prior(params, X)
        sampler = blackjax.elliptical_slice(lambda f: view.log_likelihood(params, f, y).sum(), mean=m, cov=K)
        k_init, k_run = jax.random.split(key)
        f0 = m + jnp.linalg.cholesky(K) @ jax.random.normal(k_init, m.shape)

        def step(state, k):
            state, info = sampler.step(k, state)
            return state, (state.position, info.subiter)

        state = sampler.init(f0)
        warm_keys, keys = jnp.split(jax.random.split(k_run, num_warmup + num_samples * thinning), [num_warmup])
        state, (_, warm_subiter) = jax.lax.scan(step, state, warm_keys)
        _, (f, subiter) = jax.lax.scan(step, state, keys)
        f, subiter = f[thinning - 1 :: thinning], subiter.reshape(num_samples, thinning).sum(-1)
        sites = jax.vmap(lambda g: view.to_sites(params, X, g))(f)
        # each sub-iteration is one likelihood evaluation; + 1 for the first proposal of each step
        evals = jnp.sum(warm_subiter + 1) + jnp.sum(subiter + thinning)
        return sites, subiter, evals

    return vmapped_chains(one_chain)


@register_engine(
    "ess",
    requires={"latent_gp"},
    options={
        "num_chains": opt.num_chains(4),
        "num_warmup": opt.num_warmup(500),
        "num_samples": opt.num_samples(1000),
        "thinning": Option("int", 1, "keep every k-th draw", minimum=1),
        "params": opt.params(),
    },
    summary="Elliptical slice sampling of latent f under the GP prior (BlackJAX), fixed hyperparameters",
    params_role="conditions",
)
def ess(spec, dataset, key, timer, **options) -> EngineOutput:
    view = spec.views["latent_gp"]
    runner = ess_runner(view, options["num_warmup"], options["num_samples"], options["thinning"])
    keys = jax.random.split(key, options["num_chains"])
    X, y = jnp.asarray(dataset.observed["X"]), jnp.asarray(dataset.observed["y"])
    sites, subiter, evals = runner.run(timer, keys, options["params"], X, y)
    return EngineOutput(posterior=sites, sample_stats={"n_steps": subiter}, num_lik_evals=int(jnp.sum(evals)))
