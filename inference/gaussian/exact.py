"""Exact conjugate posteriors (BLR; GP latent f given hyperparameters): the reference other engines meet.

Draws are independent samples from the model's ``conjugate`` view, mapped to the model's latent sites; the
log evidence log p(y | params) is exact.
"""

import jax
import jax.numpy as jnp

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import observed_args


@program_cache
def conjugate_sampler(view, num_chains: int, num_samples: int):
    def sample(key, params, observed):
        posterior = view(params, **observed)
        L = jnp.linalg.cholesky(posterior.cov + 1e-12 * jnp.eye(posterior.mean.shape[0]))
        eps = jax.random.normal(key, (num_chains, num_samples, posterior.mean.shape[0]))
        draws = posterior.mean + eps @ L.T
        sites = jax.vmap(jax.vmap(posterior.to_sites))(draws)
        return sites, posterior.log_evidence, jnp.full(num_chains, posterior.jitter)

    return jax.jit(sample)


@register_engine(
    "exact",
    requires={"conjugate"},
    options={"num_chains": opt.num_chains(4), "num_samples": opt.num_samples(1000), "params": opt.params()},
    summary="Exact conjugate posterior draws and log evidence (given the parameters)",
    params_role="conditions",
)
def exact(spec, dataset, key, timer, **options) -> EngineOutput:
    sample = conjugate_sampler(spec.views["conjugate"], options["num_chains"], options["num_samples"])
    posterior, log_evidence, jitter = timer.call(sample, key, options["params"], observed_args(dataset))
    # point estimate ``jitter``: what the model added to a covariance diagonal (0 when none; ConjugatePosterior)
    return EngineOutput(
        posterior=posterior, point_estimates={"jitter": jitter}, log_evidence=float(log_evidence), num_lik_evals=1
    )
