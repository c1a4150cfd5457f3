"""The one SVI optimisation loop of the project: Adam with a cosine-decayed learning rate, scanned in one program.

Used by the ``svi`` engine (any model and guide) and the ``nvc`` engine (an analytic bound under a point-mass
guide). Cosine decay so that the final iterates settle at the optimum instead of jittering around it.
"""

from typing import Any

import jax
import optax
from numpyro.infer import SVI, Trace_ELBO


def cosine_adam(learning_rate: float, num_steps: int, final_fraction: float) -> optax.GradientTransformation:
    """Adam whose step size decays from ``learning_rate`` to ``final_fraction * learning_rate`` over ``num_steps``."""
    return optax.adam(optax.cosine_decay_schedule(learning_rate, num_steps, alpha=final_fraction))


def make_svi(model, guide, learning_rate: float, num_steps: int, final_fraction: float, num_particles: int) -> SVI:
    return SVI(model, guide, cosine_adam(learning_rate, num_steps, final_fraction), Trace_ELBO(num_particles))


def fit(svi: SVI, key, num_steps: int, *args: Any, init_params=None, **kwargs: Any) -> tuple[dict, jax.Array]:
    """``num_steps`` SVI updates from ``svi.init`` (``init_params``: starting values of param sites, constrained).

    Returns the final params (constrained) and the loss (negative ELBO estimate) of every step (num_steps,).
    """
    state = svi.init(key, *args, init_params=init_params, **kwargs)
    state, losses = jax.lax.scan(lambda s, _: svi.update(s, *args, **kwargs), state, None, length=num_steps)
    return svi.get_params(state), losses
