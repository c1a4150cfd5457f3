"""Which model parameters a run holds fixed, and which of them it fixed at the model's defaults unasked.

Every engine declares at registration what the model's parameters are to it (``params_role``, one of
``PARAMS_ROLES``):

- ``conditions``: it holds every parameter fixed (the exact Gaussian posterior, the Kalman smoother, the particle
  filter and smoothers, Laplace, EP and elliptical slice at fixed theta): ``params`` when given, else the model's
  ``default_params``. The posterior it reports is p(latents | y, theta = defaults), not the posterior a sampler of
  theta reports. ``run`` says so in one line on stderr (logger ``inference.params``) and records it in the result's
  attributes ``fixed_params`` (name -> value, JSON) and ``fixed_at_defaults`` (the names nobody asked for), so that
  a comparison of engines can check that they all describe the same posterior (``benchmarks/posteriors.py``,
  docs/architecture.md#one-posterior).
- ``starts``: the defaults only start it (particle MCMC over theta, particle EM, particle-filter ML); it fixes
  nothing.
- ``learns`` (the default): it samples or learns every parameter ``params`` does not fix.

A role may depend on the run's options: ``params_role`` is then a function of them (``conditions_unless_ml2``,
``conditions_unless_gibbs``).

An engine whose ``params`` option defaults to None (the model's defaults) must declare ``conditions`` or
``starts``, and only such an engine may: ``check_params_role`` refuses the registration otherwise.
"""

import json
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from inference.results.health import stderr_logger

__all__ = [
    "PARAMS_ROLES",
    "announce",
    "check_params_role",
    "conditions_unless_gibbs",
    "conditions_unless_ml2",
    "describe",
    "fixed_parameters",
    "format_value",
    "from_attrs",
    "same_values",
    "to_attrs",
]

PARAMS_ROLES = ("conditions", "starts", "learns")

LOG = stderr_logger("inference.params")


def conditions_unless_ml2(options: Mapping[str, Any]) -> str:
    """The role of ``laplace`` and ``ep``: they condition on ``params``, unless ``hyperparameters="ml2"`` makes
    ``params`` the start of type-II ML (docs/sources/nonconjugate.md#type-ii-ml)."""
    return "starts" if options.get("hyperparameters") == "ml2" else "conditions"


def conditions_unless_gibbs(options: Mapping[str, Any]) -> str:
    """The role of ``ess``: it conditions on ``params``, unless ``hyperparameters="gibbs"`` samples them and
    ``params`` only starts the chain (docs/sources/nonconjugate.md#ess)."""
    return "starts" if options.get("hyperparameters") == "gibbs" else "conditions"


def check_params_role(engine: str, role: str, params_option: Any) -> None:
    """Refuse a registration whose ``params_role`` (at the engine's default options) contradicts its ``params``
    option: defaulting to None (the model's defaults) is what ``conditions`` and ``starts`` mean, and nothing else
    may."""
    if role not in PARAMS_ROLES:
        raise TypeError(f"engine {engine!r}: params_role {role!r} is not one of {', '.join(PARAMS_ROLES)}")
    defaults_to_model = params_option is not None and params_option.default is None
    if defaults_to_model != (role != "learns"):
        raise TypeError(
            f"engine {engine!r}: a params option defaulting to the model's defaults goes with params_role "
            f"'conditions' or 'starts' (and only with those); got {role!r}"
        )


def fixed_parameters(role: str, resolved: Mapping[str, Any], given: Any) -> tuple[dict[str, Any], list[str]]:
    """(the parameters the run holds fixed, the names of those fixed at the model's defaults because ``params``
    was not given). ``role``: the engine's ``params_role``; ``resolved``: its ``params`` option after
    ``resolve_params``; ``given``: what the caller passed (None or absent: nothing)."""
    if role == "starts":
        return {}, []
    fixed = {name: np.asarray(value) for name, value in (resolved or {}).items()}
    at_defaults = sorted(fixed) if role == "conditions" and given is None else []
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
