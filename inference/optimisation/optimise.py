"""The project's optimisation loops, each one compiled program.

- ``fit``: SVI by Adam with a cosine-decayed learning rate, scanned. Used by the ``svi`` engine (any model and guide)
  and the ``nvc`` engine (an analytic bound under a point-mass guide). ``fit_recording``: the same loop keeping every
  k-th iterate (the ``svi`` engine's ``record_path_every``). Cosine decay so that the final iterates settle
  at the optimum instead of jittering around it.
- ``lbfgs``: deterministic L-BFGS to a gradient tolerance, in a ``while_loop``. Used by ``ml2`` (hyperparameters) and
  ``inference.applications.pilco`` (policy parameters).
- ``adam_scan``: a fixed number of Adam steps, scanned, on any gradient (an objective's, a score, a Monte Carlo Q's).
  Used by ``ml2``, ``pf-ml``, the particle-EM M-step and the applications (trimmed fits, NFQ, policy search).
- ``solver``: the optax set-up of an engine's declared ``optimizer`` option (``direct``'s loop).

Every Adam and L-BFGS set-up in ``inference`` comes from here, so that a change of optimiser is made once.
"""

from typing import Any

import jax
import jax.numpy as jnp
import optax
from numpyro.infer import SVI

from inference.optimisation.elbo import OrderedTraceELBO


def cosine_adam(learning_rate: float, num_steps: int, final_fraction: float) -> optax.GradientTransformation:
    """Adam whose step size decays from ``learning_rate`` to ``final_fraction * learning_rate`` over ``num_steps``."""
    return optax.adam(optax.cosine_decay_schedule(learning_rate, num_steps, alpha=final_fraction))


def solver(name: str, learning_rate: float) -> optax.GradientTransformation:
    """The optax optimiser an engine's ``optimizer`` option names: "adam" (at ``learning_rate``) or "lbfgs" (its own
    zoom line search; the learning rate is not used)."""
    if name == "lbfgs":
        return optax.lbfgs()
    if name == "adam":
        return optax.adam(learning_rate)
    raise ValueError(f"optimizer must be 'lbfgs' or 'adam', got {name!r}")


def adam_scan(gradient, z0: Any, learning_rate: float, xs: Any = None, num_steps: int | None = None):
    """Adam steps from ``z0`` (any pytree), one per element of ``xs`` (or ``num_steps`` with ``xs=None``), scanned.
    ``gradient(z, x) -> (grad, aux)``: the direction to descend at z and what to record there (the point before the
    step). Returns (the final z, the stacked aux)."""
    adam = optax.adam(learning_rate)

    def step(carry, x):
        z, state = carry
        grad, aux = gradient(z, x)
        updates, state = adam.update(grad, state, z)
        return (optax.apply_updates(z, updates), state), aux

    (z, _), aux = jax.lax.scan(step, (z0, adam.init(z0)), xs, length=num_steps)
    return z, aux


def make_svi(model, guide, learning_rate: float, num_steps: int, final_fraction: float, num_particles: int) -> SVI:
    return SVI(model, guide, cosine_adam(learning_rate, num_steps, final_fraction), OrderedTraceELBO(num_particles))


def fit(svi: SVI, key, num_steps: int, *args: Any, init_params=None, **kwargs: Any) -> tuple[dict, jax.Array]:
    """``num_steps`` SVI updates from ``svi.init`` (``init_params``: starting values of param sites, constrained).

    Returns the final params (constrained) and the loss (negative ELBO estimate) of every step (num_steps,); loss i
    is NumPyro's estimate at the params after i updates, the point step i + 1 starts from.
    """
    state = svi.init(key, *args, init_params=init_params, **kwargs)
    state, losses = jax.lax.scan(lambda s, _: svi.update(s, *args, **kwargs), state, None, length=num_steps)
    return svi.get_params(state), losses


def fit_recording(
    svi: SVI, key, num_steps: int, every: int, *args: Any, init_params=None, **kwargs: Any
) -> tuple[dict, jax.Array, dict]:
    """``fit`` that also keeps the params (constrained) after 0, every, 2 every, ... (< num_steps) updates and after
    the last: ``inference.core.parameter_path.thinned_iterations(num_steps, every)``. Only those snapshots are held
    (an outer scan over blocks of ``every`` steps), so memory grows with num_steps / every, not num_steps.

    Returns (final params, losses (num_steps,) as ``fit``'s, path {param: (S, *shape)}; path[-1] is the final)."""
    state = svi.init(key, *args, init_params=init_params, **kwargs)

    def steps(s, length):
        return jax.lax.scan(lambda s, _: svi.update(s, *args, **kwargs), s, None, length=length)

    def block(s, _):
        snapshot = svi.get_params(s)  # the point the block's first loss is evaluated at
        s, losses = steps(s, every)
        return s, (snapshot, losses)

    def appended(path, params):
        return jax.tree.map(lambda p, v: jnp.concatenate([p, v[None]]), path, params)

    blocks, rest = divmod(num_steps, every)
    state, (path, losses) = jax.lax.scan(block, state, None, length=blocks)
    losses = losses.reshape(-1)
    if rest:
        path = appended(path, svi.get_params(state))
        state, tail = steps(state, rest)
        losses = jnp.concatenate([losses, tail])
    final = svi.get_params(state)
    return final, losses, appended(path, final)


def lbfgs(loss, z0: Any, max_steps: int, tol: float) -> tuple[Any, jax.Array, jax.Array]:
    """Minimise ``loss`` from ``z0`` (any pytree) by optax's L-BFGS (zoom line search) until the gradient norm falls
    below ``tol`` or after ``max_steps`` iterations (at least one).

    Returns (z, losses (max_steps,): the loss before each iteration, NaN past the last; iterations run)."""
    solver = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def running(carry):
        _, state, i, _ = carry
        grad = optax.tree_utils.tree_get(state, "grad")
        return (i < max_steps) & ((i == 0) | (optax.tree_utils.tree_norm(grad) > tol))

    def step(carry):
        z, state, i, losses = carry
        value, grad = value_and_grad(z, state=state)
        updates, state = solver.update(grad, state, z, value=value, grad=grad, value_fn=loss)
        return optax.apply_updates(z, updates), state, i + 1, losses.at[i].set(value)

    init = (z0, solver.init(z0), jnp.asarray(0), jnp.full(max_steps, jnp.nan))
    z, _, steps, losses = jax.lax.while_loop(running, step, init)
    return z, losses, steps


def host_lbfgs(value_and_grad, z0, max_steps: int, gtol: float, ftol: float):
    """Minimise from ``z0`` (1-D float64 array) by scipy's L-BFGS-B without bounds (i.e. L-BFGS, More-Thuente line
    search), driven from the host: ``value_and_grad(z) -> (loss, grad)`` is called once per evaluation, typically
    a compiled function, so only it is compiled (a small program, seconds less than ``lbfgs``'s while_loop with
    its zoom line search). Stops when the largest gradient component is <= ``gtol``, when an iteration lowers the
    loss by <= ``ftol`` relative to max(|f|, 1) (scipy's factr criterion), or after ``max_steps`` iterations.
    A non-finite loss is returned to scipy as +inf with a zero gradient, so its line search steps back.

    Returns (z, losses (max_steps,): the loss before each iteration, NaN past the last; iterations run)."""
    import numpy as np
    from scipy.optimize import minimize

    def fun(z):
        value, grad = value_and_grad(z)
        value, grad = float(value), np.asarray(grad, float)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            return np.inf, np.zeros_like(grad)
        return value, grad

    losses = np.full(max_steps, np.nan)
    losses[0] = fun(np.asarray(z0, float))[0]
    steps = [0]

    def record(intermediate_result):
        steps[0] += 1
        if steps[0] < max_steps:
            losses[steps[0]] = intermediate_result.fun

    options = {"maxiter": max_steps, "gtol": gtol, "ftol": ftol, "maxfun": 20 * max_steps}
    result = minimize(fun, np.asarray(z0, float), jac=True, method="L-BFGS-B", callback=record, options=options)
    return result.x, losses, max(int(result.nit), 1)
