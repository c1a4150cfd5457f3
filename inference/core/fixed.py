"""Which model parameters a run holds fixed, and which of them it fixed at the model's defaults unasked.

Engines that condition on parameters (``CONDITIONING``: the exact Gaussian posterior, the Kalman smoother, the
particle filter and smoothers at fixed theta) use ``params`` when given, else the model's ``default_params``: the
posterior they report is p(latents | y, theta = defaults), not the posterior a sampler of theta reports. ``run``
says so in one line on stderr (logger ``inference.params``) and records it in the result's attributes
``fixed_params`` (name -> value, JSON) and ``fixed_at_defaults`` (the names nobody asked for), so that a comparison
of engines can check that they all describe the same posterior (``benchmarks/posteriors.py``,
docs/architecture.md#one-posterior).

Engines whose ``params`` default to the model's defaults as a *starting point* (``STARTING``: particle MCMC over
theta, particle EM, particle-filter ML) fix nothing; every other engine samples or learns the
parameters ``params`` does not fix. ``tests/test_one_posterior.py`` checks that every registered engine whose
``params`` option defaults to None is in exactly one of the two sets.
"""

import json
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from inference.results.health import stderr_logger

__all__ = [
    "CONDITIONING",
    "STARTING",
    "announce",
    "conditions_on_params",
    "describe",
    "fixed_parameters",
    "format_value",
    "from_attrs",
    "same_values",
    "starts_from_params",
    "to_attrs",
]

CONDITIONING = frozenset({"exact", "kalman", "pf", "pgas", "ads", "is-ep", "laplace", "ep", "ess"})
STARTING = frozenset({"pmcmc", "pgas-em", "psaem", "pf-ml"})

LOG = stderr_logger("inference.params")


def starts_from_params(engine: str, options: Mapping[str, Any]) -> bool:
    """Whether ``engine`` with these options takes ``params`` as a starting point and fixes nothing: the STARTING
    engines, and ``laplace`` / ``ep`` with ``hyperparameters="ml2"`` (type-II ML from ``params``)."""
    return engine in STARTING or options.get("hyperparameters") == "ml2"


def conditions_on_params(engine: str) -> bool:
    """Whether ``engine`` holds every parameter fixed (given, or the model's defaults when ``params`` is None)."""
    return engine in CONDITIONING


def fixed_parameters(
    engine: str, resolved: Mapping[str, Any], given: Any, options: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """(the parameters the run holds fixed, the names of those fixed at the model's defaults because ``params``
    was not given). ``resolved``: the engine's ``params`` option after ``resolve_params``; ``given``: what the caller
    passed (None or absent: nothing); ``options``: the engine's options (``starts_from_params``)."""
    if starts_from_params(engine, options or {}):
        return {}, []
    fixed = {name: np.asarray(value) for name, value in (resolved or {}).items()}
    at_defaults = sorted(fixed) if engine in CONDITIONING and given is None else []
    return fixed, at_defaults


def format_value(value: Any, max_elements: int = 6) -> str:
    """A parameter value in a line of text: a scalar as ``0.25``, a small array as its nested list, a large one by
    its shape and range."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return f"{float(array):.4g}"
    if array.size <= max_elements:
        return json.dumps(np.round(array, 4).tolist())
    return f"<{'x'.join(map(str, array.shape))} array in [{array.min():.3g}, {array.max():.3g}]>"


def describe(fixed: Mapping[str, Any]) -> str:
    """``noise=0.25, A=[[0.9, -0.28], [0.28, 0.9]]``."""
    return ", ".join(f"{name}={format_value(value)}" for name, value in sorted(fixed.items()))


def announce(engine: str, model: str, fixed: Mapping[str, Any], at_defaults: list[str]) -> None:
    """The one line on stderr naming the parameters fixed at the model's defaults (nothing when there are none)."""
    if at_defaults:
        shown = describe({name: fixed[name] for name in at_defaults})
        LOG.info(
            f"note: {engine} conditions on parameters fixed at {model}'s defaults: {shown} "
            "(pass params=... / --params NAME=VALUE to choose them)"
        )


def to_attrs(fixed: Mapping[str, Any], at_defaults: list[str]) -> dict[str, str]:
    return {
        "fixed_params": json.dumps({name: np.asarray(v).tolist() for name, v in sorted(fixed.items())}),
        "fixed_at_defaults": json.dumps(sorted(at_defaults)),
    }


def from_attrs(attrs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The ``fixed_params`` attribute of a result as arrays (empty for results written before it existed)."""
    return {name: np.asarray(v) for name, v in json.loads(attrs.get("fixed_params", "{}")).items()}


def same_values(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two sets of fixed parameters name the same sites with the same values (to float64 rounding)."""
    if set(a) != set(b):
        return False
    for name in a:
        try:
            left, right = np.broadcast_arrays(np.asarray(a[name], float), np.asarray(b[name], float))
        except ValueError:
            return False
        if not np.allclose(left, right, rtol=1e-12, atol=0.0):
            return False
    return True


logging.getLogger("inference.params").setLevel(logging.INFO)
