"""A user's own NumPyro program as a ModelSpec, so every engine that fits it runs it (docs/own-model.md).

A plain function whose keyword arguments are its data, as NumPyro users write them, goes to ``inference.run``
as it is. What the engines need to know is read off one trace of the program on the data:

* the data's names and shapes (``data_shapes``: each array's own sizes, so new data of other sizes are accepted);
* whether every latent site is continuous (capability ``continuous``: NUTS, HMC, SVI, tempered SMC) or some are
  discrete, which no gradient-based engine can run (the spec's ``notes`` name the discrete sites, and an engine
  that cannot run says so).

``@zoo.model(...)`` adds what a trace cannot tell: ``simulate`` (so ``inference.run`` can draw data, and
``zoo bench`` run seeds), ``default_params`` (engines that condition on parameters), and structured ``views``
with the capabilities they give (``state_space``: particle filters and PGAS; ``conjugate``: the exact engine).
The program stays an ordinary NumPyro function: the decorator returns it unchanged, with the extras attached.
"""

import dataclasses
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zoo import sites
from zoo.errors import DataError, ZooError
from zoo.registry import Dataset, ModelSpec, frozen

EXTRAS = "__zoo_model__"  # the attribute ``model`` attaches to a program


@dataclasses.dataclass(frozen=True)
class ProgramExtras:
    """What ``@zoo.model`` attaches: all optional."""

    name: str | None = None
    simulate: Callable[..., Dataset] | None = None
    default_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    views: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    capabilities: frozenset[str] = frozenset()
    data_shapes: Mapping[str, tuple] | None = None
    summary: str = ""


def model(
    program: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    simulate: Callable[..., Dataset] | None = None,
    default_params: Mapping[str, Any] | None = None,
    views: Mapping[str, Any] | None = None,
    capabilities: set[str] | frozenset[str] = frozenset(),
    data_shapes: Mapping[str, tuple] | None = None,
    summary: str = "",
):
    """Decorate a NumPyro program with what engines beyond the program need; usable bare (``@zoo.model``) or with
    arguments. ``views`` maps a capability to its view (e.g. ``{"state_space": zoo.ssm.gaussian_view(...)}``);
    a view's key is a capability of the model, and ``capabilities`` adds others (e.g. ``linear_gaussian``).
    ``data_shapes`` (e.g. ``{"y": ("K", "T", 1), "lengths": ("K",)}``) replaces the shapes read off the data, so
    that sizes shared between arrays are checked."""

    def attach(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise ZooError(f"zoo.model decorates a NumPyro program (a function), got {type(fn).__name__}.")
        extras = ProgramExtras(
            name=name,
            simulate=simulate,
            default_params=frozen(default_params or {}),
            views=frozen(views or {}),
            capabilities=frozenset(capabilities) | frozenset(views or {}),
            data_shapes=None if data_shapes is None else frozen(data_shapes),
            summary=summary,
        )
        setattr(fn, EXTRAS, extras)
        return fn

    return attach if program is None else attach(program)


# One spec per (program, data signature): engines cache compiled functions per spec, so a second run on data of
# the same shapes compiles nothing. Weak keys: a program that goes away takes its specs with it.
_SPECS: "weakref.WeakKeyDictionary[Callable, dict[tuple, ModelSpec]]" = weakref.WeakKeyDictionary()


def program_spec(program: Callable[..., Any], data: "Dataset | Mapping[str, Any] | None") -> ModelSpec:
    """The ModelSpec of a plain NumPyro ``program`` for ``data`` (module docstring). Raises ZooError for something
    that is not a program, DataError for missing or non-numeric data."""
    if not callable(program):
        raise ZooError(f"a model is a registered name, a ModelSpec or a NumPyro program; got {type(program).__name__}.")
    extras: ProgramExtras = getattr(program, EXTRAS, ProgramExtras())
    name = extras.name or getattr(program, "__qualname__", None) or repr(program)
    if data is None:
        if extras.simulate is None:
            raise DataError(
                f"{name}: a program without simulate needs data: inference.run({name}, data={{...}}), or give it "
                "simulate with @zoo.model(simulate=...)."
            )
        # ``inference.run`` simulates with its own seed; the shapes come from a first draw here
        observed = extras.simulate(jax.random.key(0)).observed
    else:
        observed = data.observed if isinstance(data, Dataset) else data
    arrays = _numeric_arrays(name, observed)
    # the extras take part: decorating the same function again gives another spec
    signature = (id(extras), tuple(sorted((k, v.shape) for k, v in arrays.items())))
    specs = _SPECS.setdefault(program, {})
    if signature not in specs:
        specs[signature] = _build(program, name, extras, arrays)
    return specs[signature]


def declared_data_shapes(program: Callable[..., Any]) -> Mapping[str, tuple]:
    """The ``data_shapes`` given with ``@zoo.model``: what a data file is read against. DataError without them."""
    shapes = getattr(program, EXTRAS, ProgramExtras()).data_shapes
    if shapes is None:
        name = getattr(program, "__qualname__", repr(program))
        raise DataError(
            f"{name}: to read a data file, declare the program's arrays: @zoo.model(data_shapes={{'X': ('N', 'D'), "
            "'y': ('N',)}) -- or load the file yourself and pass the arrays."
        )
    return shapes


def _numeric_arrays(name: str, observed: Mapping[str, Any]) -> dict[str, np.ndarray]:
    arrays = {}
    for key, value in observed.items():
        try:
            arrays[key] = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{name}: data {key!r} is not a numeric array ({type(value).__name__}).") from None
    return arrays


def _build(program, name: str, extras: ProgramExtras, arrays: Mapping[str, np.ndarray]) -> ModelSpec:
    latent = _latent_sites(program, name, arrays)
    if not latent:
        raise ZooError(f"{name}: the program has no latent sample site given this data; there is nothing to infer.")
    discrete = sorted(n for n, site in latent.items() if site.support.is_discrete)
    capabilities = set(extras.capabilities)
    notes = ""
    if discrete:
        notes = (
            f"its latent sites {', '.join(discrete)} are discrete, which no gradient-based engine can move; "
            "marginalise them (NumPyro's enumeration) or give the model a structured view"
        )
    else:
        capabilities.add("continuous")
    shapes = extras.data_shapes or {key: tuple(f"{key}[{axis}]" for axis in range(a.ndim)) for key, a in arrays.items()}
    return ModelSpec(
        name=name,
        summary=extras.summary or f"user program {name} ({len(latent)} latent sites)",
        source="user program",
        program=program,
        simulate=extras.simulate or _no_simulate(name),
        data_shapes=frozen(shapes),
        default_params=extras.default_params,
        capabilities=frozenset(capabilities),
        views=extras.views,
        notes=notes,
    )


def _latent_sites(program, name: str, arrays: Mapping[str, np.ndarray]) -> dict[str, sites.Site]:
    """The program's unobserved sample sites on the data (``zoo.sites``). A program that fails here would fail in
    every engine, so its error is raised now, named."""
    try:
        return sites.latent(sites.sample_sites(program, **{k: jnp.asarray(v) for k, v in arrays.items()}))
    except TypeError as exc:  # data names that are not the program's arguments
        raise DataError(f"{name}: the program does not take this data ({exc}).") from None


def _no_simulate(name: str) -> Callable[..., Dataset]:
    def simulate(key, **size):
        raise DataError(f"{name}: a user program has no simulate; pass data, or give it @zoo.model(simulate=...).")

    return simulate
