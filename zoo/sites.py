"""A program's sample sites (names, shapes, supports) without running it: one abstract trace.

Engines need a model's latent sites before they compile anything: to check fixed parameters and starting values
against shapes and supports, and to lay out an optimiser's vector. Running the program to find them (a seeded
NumPyro trace on the data) executes it operation by operation: JAX compiles each operation for its shapes on first
use, and every call computes the model (a Cholesky of the data's size for a GP). ``jax.eval_shape`` traces the same
program on abstract values instead, so nothing is computed or compiled (docs/performance.md#first-call).
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from numpyro import handlers
from numpyro.distributions.constraints import Constraint


class Site(NamedTuple):
    """One sample site: the shape and dtype of its value, its distribution's support, and whether it is observed."""

    shape: tuple[int, ...]
    dtype: Any
    support: Constraint
    is_observed: bool


class _TracedSupport(Exception):
    """A support with traced bounds (e.g. an interval whose ends are computed): only a concrete run can give it."""


# What a program raises when it needs values, not shapes: Python branches on an array, int(), np.asarray().
_NEEDS_VALUES = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    _TracedSupport,
)


def _abstract_or_run(trace_fn, args, kwargs):
    """``trace_fn(args, kwargs)`` on abstract values (``jax.eval_shape``), or run when the program needs values."""
    try:
        return jax.eval_shape(trace_fn, args, kwargs)
    except _NEEDS_VALUES:
        return trace_fn(args, kwargs)


def sample_sites(program, *args: Any, **kwargs: Any) -> dict[str, Site]:
    """Every sample site of ``program(*args, **kwargs)`` under ``seed(0)``, in the order the program reaches them.

    Abstract when it can be (``jax.eval_shape``: nothing computed or compiled); a program that branches on its data's
    values in Python, or whose support depends on computed values, is run instead, op by op, as before.
    """
    supports: dict[str, tuple[Constraint, bool]] = {}

    def site_values(args, kwargs):
        supports.clear()  # a failed abstract trace may have filled part of it
        with handlers.seed(rng_seed=0):
            trace = handlers.trace(program).get_trace(*args, **kwargs)
        samples = {name: site for name, site in trace.items() if site["type"] == "sample"}
        for name, site in samples.items():
            support = site["fn"].support
            if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(support)):
                raise _TracedSupport(name)
            supports[name] = (support, bool(site["is_observed"]))
        return {name: site["value"] for name, site in samples.items()}

    values = _abstract_or_run(site_values, args, kwargs)
    # ``supports`` keeps the program's order; eval_shape's output dict is sorted by name
    return {
        name: Site(tuple(jnp.shape(values[name])), jnp.result_type(values[name]), *found)
        for name, found in supports.items()
    }


def param_shapes(programs, *args: Any, **kwargs: Any) -> dict[str, tuple[int, ...]]:
    """Shapes of the ``numpyro.param`` sites of each of ``programs`` (e.g. a model and its guide) on these arguments,
    traced abstractly under ``seed(0)``; a later program's site of the same name wins."""
    shapes: dict[str, tuple[int, ...]] = {}

    def collect(args, kwargs):
        for program in programs:
            trace = handlers.trace(handlers.seed(program, 0)).get_trace(*args, **kwargs)
            shapes.update({name: tuple(jnp.shape(s["value"])) for name, s in trace.items() if s["type"] == "param"})
        return 0

    _abstract_or_run(collect, args, kwargs)
    return shapes


def latent(sites: Mapping[str, Site]) -> dict[str, Site]:
    """The unobserved ones."""
    return {name: site for name, site in sites.items() if not site.is_observed}
