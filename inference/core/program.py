"""A model's program seen by engines: conditioning on fixed parameters and inspecting its sites."""

from collections.abc import Mapping
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers

from zoo import sites
from zoo.errors import OptionError, unknown_name
from zoo.registry import Dataset, ModelSpec

__all__ = ["check_init", "conditioned_program", "latent_sites", "observed_args", "resolve_params"]


@cache
def conditioned_program(spec: ModelSpec):
    """``model(params, **observed)``: the spec's program with the sites in ``params`` fixed.

    ``params`` is a dynamic argument, so one jitted engine serves every value of the fixed parameters. Cached
    per spec so that jitted engines built on it are reused across calls.
    """

    def model(params: Mapping[str, Any], **observed: Any) -> None:
        with handlers.condition(data=params):
            spec.program(**observed)

    return model


def latent_sites(spec: ModelSpec, dataset: Dataset) -> dict[str, sites.Site]:
    """The sample sites the program does not observe: shapes and supports (one abstract trace, ``zoo.sites``)."""
    return sites.latent(sites.sample_sites(spec.program, **_as_jax(dataset.observed)))


def resolve_params(spec: ModelSpec, dataset: Dataset, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Fixed parameter values checked against the program's sites and broadcast to their shapes.

    ``None`` means the model's defaults (``spec.default_params``). Raises OptionError on unknown names,
    wrong shapes or values outside a site's support.
    """
    params = dict(spec.default_params if params is None else params)
    if not params:
        return {}
    latent = latent_sites(spec, dataset)
    resolved = {}
    for name, value in params.items():
        if name not in latent:
            raise OptionError(_unknown_parameter(spec, name, latent))
        shape = latent[name].shape
        # Checked in NumPy: run in jnp, these few checks compiled a dozen small programs per call
        # (docs/performance.md#first-call-eager)
        try:
            array = np.broadcast_to(np.asarray(value, dtype=float), shape)
        except ValueError:
            raise OptionError(f"params[{name!r}] has shape {np.shape(value)}; the site has shape {shape}.") from None
        support = latent[name].support
        if not np.all(np.asarray(support(array))) or not np.all(np.isfinite(array)):
            raise OptionError(f"params[{name!r}] = {value!r} is outside the support of the site ({support}).")
        resolved[name] = jnp.asarray(array)
    return resolved


def _unknown_parameter(spec: ModelSpec, name: str, sites: Mapping[str, Any]) -> str:
    """The message for a name that is no site: the parameters (the sites the model gives defaults for, when it
    does) are listed as known; the other latent sites (states, latent functions) are named apart."""
    parameters = [site for site in sites if site in spec.default_params] or list(sites)
    latent = sorted(set(sites) - set(parameters))
    message = str(unknown_name(f"parameter of {spec.name}", name, parameters))
    return message + (f" Latent variables (not parameters): {', '.join(latent)}." if latent else "")


def _as_jax(arrays: Mapping[str, Any]) -> dict[str, Any]:
    return {k: jnp.asarray(v) for k, v in arrays.items()}


def observed_args(dataset: Dataset) -> dict[str, jax.Array]:
    """The program's keyword arguments as JAX arrays."""
    return _as_jax(dataset.observed)


def check_init(sites: Mapping[str, Mapping[str, Any]], init: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
    """Refuse an ``init`` option (starting values by site name) that names no site of ``sites`` (name ->
    {"shape", ...}), gives a value of the wrong shape or a start for a site ``fixed`` holds: ``OptionError``. Run
    before any start is fitted or anything compiled (by the preparation step and again by the engine)."""
    unknown, both = sorted(set(init) - set(sites)), sorted(set(init) & set(fixed))
    if unknown:
        raise OptionError(f"init names {unknown}, which are not parameter sites; the sites are {sorted(sites)}.")
    if both:
        raise OptionError(f"init and params both give {both}; a fixed parameter has no starting value.")
    for name, value in init.items():
        if np.shape(value) != tuple(sites[name]["shape"]):
            raise OptionError(
                f"init[{name!r}] has shape {np.shape(value)}; the site has {tuple(sites[name]['shape'])}."
            )
