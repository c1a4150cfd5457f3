"""The chains' starting points of the MCMC engines (``nuts``, ``hmc`` and the gym's, docs/gym.md#engines): uniform
on (-r, r) in NumPyro's unconstrained space, retried until finite, found by one compiled search."""

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.initialization import init_to_uniform
from numpyro.infer.util import initialize_model

from inference.core.cache import program_cache

__all__ = ["initial_positions"]


def initial_positions(
    model, key: jax.Array, num_chains: int, params, observed, radius: float, timer=None, check_gradient: bool = True
) -> dict[str, jax.Array]:
    """Unconstrained starting points, one per chain: uniform on (-radius, radius) in NumPyro's unconstrained
    space (init_to_uniform), retried until the potential (and, with ``check_gradient``, its gradient) is finite.
    Each (num_chains, *site_shape). A larger radius overdisperses the chains, which is what lets R-hat detect
    separated modes.

    The search runs compiled (``_initial_search``, through ``timer`` when given), so a repeated call with data of
    the same shapes compiles and traces nothing. Run op by op it re-traced the program and re-lowered NumPyro's
    search loop on every call (0.3-0.5 s of host time per ``inference.run``). Under ``jit`` NumPyro cannot raise
    for starts it failed to find, so those are re-run eagerly, which raises its error with the site that failed.
    """
    keys = jax.random.split(key, num_chains)
    search = _initial_search(model, float(radius), check_gradient)
    z, valid = search(keys, params, observed) if timer is None else timer.call(search, keys, params, observed)
    if not np.all(np.asarray(valid)):  # host-side: a jnp call here would compile its own small program
        return _eager_initial_positions(model, keys, params, observed, radius)
    return z


@program_cache
def _initial_search(model, radius: float, check_gradient: bool):
    """Jitted ``(keys (C,), params, observed) -> (z, valid (C,))``: NumPyro's start search, as NumPyro judges it (a
    finite potential and, with ``check_gradient``, a finite gradient). Without the gradient check the program
    holds no derivative of the model, so it compiles faster (docs/performance.md#nuts-start)."""

    def search(keys, params, observed):
        info = initialize_model(
            keys,
            model,
            model_args=(params,),
            model_kwargs=observed,
            init_strategy=init_to_uniform(radius=radius),
            validate_grad=check_gradient,
        )
        finite = [jnp.isfinite(info.param_info.potential_energy)]
        if check_gradient:
            grads = jax.tree.leaves(info.param_info.z_grad)
            finite += [jnp.isfinite(g).reshape(g.shape[0], -1).all(axis=1) for g in grads]
        return info.param_info.z, jnp.stack(finite).all(axis=0)

    return jax.jit(search)


def _eager_initial_positions(model, keys, params, observed, radius: float) -> dict[str, jax.Array]:
    info = initialize_model(
        keys, model, model_args=(params,), model_kwargs=observed, init_strategy=init_to_uniform(radius=radius)
    )
    return info.param_info.z
