"""Type-II maximum likelihood of a latent GP's hyperparameters under an approximate evidence (Laplace's eq. 3.32 with
Algorithm 5.1's gradient, EP's eq. 3.65 with eq. 3.80's gradient; docs/sources/nonconjugate.md#type-ii-ml).

The search runs over the unconstrained values of the hyperparameter sites (NumPyro's ``biject_to`` of each site's
support: log for positive sites) by scipy's L-BFGS (``inference.optimisation.host_lbfgs``: one compiled
value-and-gradient, driven from the host), from the values in ``params`` (the model's defaults unless given). Every
hyperparameter site is optimised; the gradient in the unconstrained space is the evidence's gradient pulled back
through the transform (``jax.vjp``).
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import constraints
from numpyro.distributions.transforms import biject_to

from inference.core import options as opt
from inference.core.program import latent_sites
from inference.optimisation import host_lbfgs
from zoo.errors import OptionError
from zoo.options import Option

Array = Any

__all__ = ["HYPERPARAMETERS", "layout_of", "loss_program", "maximise", "options"]

HYPERPARAMETERS = ("fixed", "ml2")


def options() -> dict[str, Option]:
    """The options ``laplace`` and ``ep`` declare for type-II ML."""
    return {
        "hyperparameters": opt.choice(
            "fixed",
            HYPERPARAMETERS,
            "fixed: condition on params; ml2: maximise the approximate log evidence over every hyperparameter, "
            "starting from params (type-II ML)",
        ),
        "ml2_steps": Option("int", 500, "ml2: L-BFGS iterations at most", minimum=1),
        "ml2_tolerance": Option("float", 1e-5, "ml2: stop when no gradient component exceeds this", above=0.0),
    }


SUPPORTS = {"positive": constraints.positive, "real": constraints.real}  # the hyperparameter supports handled


def _kind(name: str, support) -> str:
    """The name in ``SUPPORTS`` of a site's elementwise support (under IndependentConstraint wrappers)."""
    while hasattr(support, "base_constraint"):
        support = support.base_constraint
    for kind, constraint in SUPPORTS.items():
        if support is constraint:
            return kind
    raise OptionError(f"hyperparameters='ml2': site {name!r} has support {support}; only {list(SUPPORTS)} are handled.")


def layout_of(spec, dataset, params: dict) -> tuple:
    """((name, shape, support kind), ...) of the sites in ``params``, sorted by name: a static cache key."""
    sites = latent_sites(spec, dataset)
    return tuple((name, tuple(np.shape(params[name])), _kind(name, sites[name].support)) for name in sorted(params))


def _split(flat: Array, layout: tuple) -> dict:
    sizes = [int(np.prod(shape)) for _, shape, _ in layout]
    parts = jnp.split(flat, np.cumsum(sizes)[:-1].tolist())
    return {name: part.reshape(shape) for (name, shape, _), part in zip(layout, parts, strict=True)}


def loss_program(evidence_and_grad, layout: tuple):
    """``jit((flat z, X, y) -> (-log evidence, -gradient in z))``: z the unconstrained sites of ``layout`` flattened;
    ``evidence_and_grad(params, X, y) -> (log evidence, gradient pytree like params)``."""

    def constrain(flat):
        z = _split(flat, layout)
        return {name: biject_to(SUPPORTS[support])(z[name]) for name, _, support in layout}

    def loss_and_grad(flat, X, y):
        constrained, pullback = jax.vjp(constrain, flat)
        value, grad = evidence_and_grad(constrained, X, y)
        (grad_flat,) = pullback({name: grad[name] for name, _, _ in layout})
        return -value, -grad_flat

    return jax.jit(loss_and_grad)


def maximise(program, layout: tuple, params: dict, X, y, timer, max_steps: int, gtol: float) -> tuple[dict, dict]:
    """L-BFGS on ``program`` (``loss_program``) from ``params``: (the optimum's constrained params, point estimates:
    those values, ``ml2_iterations`` and ``ml2_log_evidence``)."""
    flat0 = np.concatenate(
        [
            np.ravel(np.asarray(biject_to(SUPPORTS[support]).inv(jnp.asarray(params[name], float))))
            for name, _, support in layout
        ]
    )

    def value_and_grad(flat):
        value, grad = timer.call(program, jnp.asarray(flat), X, y)
        return value, np.asarray(grad, float)

    flat, _, iterations = host_lbfgs(value_and_grad, flat0, max_steps, gtol, 1e-12)
    z = _split(jnp.asarray(flat), layout)
    best = {name: biject_to(SUPPORTS[support])(z[name]) for name, _, support in layout}
    value, _ = value_and_grad(flat)
    return best, {**best, "ml2_iterations": jnp.asarray(iterations), "ml2_log_evidence": jnp.asarray(-value)}
