"""The Monte Carlo ELBO of NumPyro's ``Trace_ELBO``, with the sites' terms added in trace order.

``Trace_ELBO`` (NumPyro 0.22) subtracts log q from log p site by site over a ``set`` of site names. A set of strings
iterates in an order that depends on Python's per-process hash seed, so the same model and guide lower to a different
program in every new process: the persistent compile cache misses for every SVI program, and the ELBO's terms are
added in a different order, so its rounding changes from one process to the next (docs/performance.md#first-call).

``OrderedTraceELBO`` is the same estimator with the same random numbers (each particle's key split into the model's
and the guide's seed, in NumPyro's order) whose sum follows the traces' order: ``log_density`` of the seeded guide,
then of the model replayed against the guide's trace. Mutable sites (``numpyro.mutable``), which no zoo model uses,
are refused rather than silently dropped.
"""

import jax
import jax.numpy as jnp
from numpyro.handlers import replay, seed
from numpyro.infer.elbo import ELBO
from numpyro.infer.util import log_density


class OrderedTraceELBO(ELBO):
    """``Trace_ELBO(num_particles, vectorize_particles)`` with a deterministic order of summation."""

    def loss_with_mutable_state(self, rng_key, param_map, model, guide, *args, **kwargs):
        def particle_elbo(key):
            model_seed, guide_seed = jax.random.split(key)
            guide_log_q, guide_trace = log_density(seed(guide, guide_seed), args, kwargs, param_map)
            if any(site["type"] == "mutable" for site in guide_trace.values()):
                raise NotImplementedError("OrderedTraceELBO does not support mutable sites; use Trace_ELBO.")
            model_log_p, _ = log_density(replay(seed(model, model_seed), guide_trace), args, kwargs, param_map)
            return model_log_p - guide_log_q

        if self.num_particles == 1:
            return {"loss": -particle_elbo(rng_key), "mutable_state": None}
        keys = jax.random.split(rng_key, self.num_particles)
        elbos = self.vectorize_particles_fn(particle_elbo, keys)
        return {"loss": -jnp.mean(elbos), "mutable_state": None}
