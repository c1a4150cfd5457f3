"""ModelSpec, the Dataset it simulates, and the registry of models (docs/architecture.md#modelspec)."""

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from zoo.errors import DataError, OptionError, ZooError, unknown_name
from zoo.options import Option, validate
from zoo.symmetry import Symmetry

# A dimension is either a fixed size or a symbol ("N", "D") that must agree across arrays.
Shape = tuple[int | str, ...]


@dataclass(frozen=True)
class Dataset:
    """Data for one model.

    observed: keyword arguments of the program (inputs and observations), float64 arrays.
    truth: ground truth of synthetic data (latents, true parameters); never shown to an engine's program.
    test: held-out arrays for predictive metrics, named like ``observed``.
    """

    observed: Mapping[str, np.ndarray]
    truth: Mapping[str, Any] = field(default_factory=dict)
    test: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)  # hashed by identity: engines cache compiled functions per spec
class ModelSpec:
    """One registered model: a NumPyro program plus what engines need to know about it.

    program: ``program(**observed)``; an observed argument set to ``None`` is sampled (prior predictive).
    simulate: ``simulate(key, **size) -> Dataset``.
    data_shapes: the program's array arguments and their shapes, e.g. ``{"X": ("N", "D"), "y": ("N",)}``.
    default_params: default values (constrained) of the hyperparameter sites, used by engines that
        condition on parameters when no ``params`` option is given.
    capabilities: what the model offers, e.g. ``{"continuous", "conjugate"}``; engines declare what they need.
    views: structured views derived from the same definition as the program, keyed by capability.
    options: the family options this variant was built with (``zoo.get(name, **options)``); empty for a model
        that takes none.
    notes: why the capabilities are what they are, where that is not obvious (a user program's discrete latent
        sites); an engine that does not fit repeats it.
    symmetry: the finite group under which the posterior is exactly invariant (``zoo.symmetry.Symmetry``: mirror
        modes that chains do not cross), or None; certified references apply it to their draws
        (docs/gym.md#symmetry).
    """

    name: str
    summary: str
    source: str
    program: Callable[..., Any]
    simulate: Callable[..., Dataset]
    data_shapes: Mapping[str, Shape]
    default_params: Mapping[str, Any] = field(default_factory=dict)
    capabilities: frozenset[str] = frozenset({"continuous"})
    views: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: str = ""
    symmetry: "Symmetry | None" = None

    def validate(self, data: "Dataset | Mapping[str, Any]") -> Dataset:
        """Check names, shapes and finiteness of ``data``; return a Dataset of float64 arrays.

        Raises DataError with a message naming the offending array, before anything is compiled.
        """
        dataset = data if isinstance(data, Dataset) else Dataset(observed=dict(data))
        observed = _validate_arrays(self.name, dataset.observed, self.data_shapes)
        test = _validate_arrays(self.name, dataset.test, self.data_shapes, partial=True) if dataset.test else {}
        return Dataset(observed=observed, truth=dataset.truth, test=test)


def _validate_arrays(
    model: str, arrays: Mapping[str, Any], shapes: Mapping[str, Shape], partial: bool = False
) -> dict[str, np.ndarray]:
    unknown = set(arrays) - set(shapes)
    if unknown:
        raise DataError(f"{model}: unexpected data {sorted(unknown)}; the model takes {sorted(shapes)}.")
    missing = set(shapes) - set(arrays)
    if missing and not partial:
        raise DataError(f"{model}: missing data {sorted(missing)}; the model takes {sorted(shapes)}.")
    sizes: dict[str, int] = {}
    checked = {}
    for name, value in arrays.items():
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{model}: data {name!r} is not numeric ({exc}).") from None
        expected = shapes[name]
        if array.ndim != len(expected):
            raise DataError(
                f"{model}: data {name!r} has shape {array.shape}; expected {len(expected)} dimensions "
                f"{_show(expected)}."
            )
        for axis, (dim, size) in enumerate(zip(expected, array.shape, strict=True)):
            if size == 0:
                raise DataError(f"{model}: data {name!r} is empty along axis {axis} ({_show(expected)}).")
            if isinstance(dim, int):
                if size != dim:
                    raise DataError(f"{model}: data {name!r} has size {size} on axis {axis}; expected {dim}.")
            elif sizes.setdefault(dim, size) != size:
                raise DataError(
                    f"{model}: data {name!r} has {dim}={size} on axis {axis}, but other data have {dim}={sizes[dim]}."
                )
        if not np.all(np.isfinite(array)):
            bad = int(np.size(array) - np.isfinite(array).sum())
            raise DataError(f"{model}: data {name!r} has {bad} NaN or infinite values.")
        checked[name] = array
    return checked


def _show(shape: Shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


_REGISTRY: dict[str, ModelSpec] = {}
_FAMILIES: dict[str, "ModelFamily"] = {}


@dataclass(frozen=True)
class ModelFamily:
    """A model that takes options: ``build(**options) -> ModelSpec`` for each validated set of ``options``.

    ``options`` declares every option once (kind, default, range); ``zoo.get(name, **given)`` validates ``given``
    against it before ``build`` runs, and ``build`` checks what involves several options together (raising
    OptionError), so nothing is traced or compiled for a bad variant.
    """

    name: str
    summary: str
    source: str
    build: Callable[..., ModelSpec]
    options: Mapping[str, Option]


def register(spec: ModelSpec) -> ModelSpec:
    _check_new(spec.name)
    _REGISTRY[spec.name] = spec
    return spec


def register_family(name: str, options: Mapping[str, Option], summary: str, source: str):
    """Decorator registering ``build(**options) -> ModelSpec`` as the model family ``name``."""

    def decorate(build: Callable[..., ModelSpec]) -> Callable[..., ModelSpec]:
        _check_new(name)
        _FAMILIES[name] = ModelFamily(name, summary, source, build, frozen(options))
        return build

    return decorate


def _check_new(name: str) -> None:
    if name in _REGISTRY or name in _FAMILIES:
        raise ZooError(f"model {name!r} is registered twice")


def get(name: "str | ModelSpec", **options: Any) -> ModelSpec:
    """The ModelSpec called ``name`` with ``options`` (a ModelSpec is returned as is).

    Raises UnknownNameError for an unknown model and OptionError for an unknown option or a bad value. The same
    (name, options) gives the same ModelSpec object, so engines' compiled programs are reused.
    """
    if isinstance(name, ModelSpec):
        if options:
            raise OptionError(f"model {name.name!r} is already built; pass options to zoo.get by name.")
        return name
    if name in _REGISTRY:
        if options:
            raise OptionError(f"model {name!r} takes no options, got {', '.join(sorted(options))}.")
        return _REGISTRY[name]
    if name not in _FAMILIES:
        raise unknown_name("model", name, names())
    family = _FAMILIES[name]
    values = validate(f"model {name!r}", family.options, options)
    return _built(name, tuple(sorted(values.items())))


@functools.cache
def _built(name: str, options: tuple[tuple[str, Any], ...]) -> ModelSpec:
    family = _FAMILIES[name]
    spec = family.build(**dict(options))
    return dataclasses.replace(spec, name=name, options=frozen(dict(options)))


def family_options(name: str) -> Mapping[str, Option]:
    """The declared options of model ``name`` (empty for a model without options)."""
    if name in _FAMILIES:
        return _FAMILIES[name].options
    get(name)  # unknown names raise
    return frozen({})


def names() -> list[str]:
    return sorted([*_REGISTRY, *_FAMILIES])


def frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view, for the mappings a ModelSpec holds."""
    return MappingProxyType(dict(mapping))


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int >= 1, else a ZooError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ZooError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class ConjugatePosterior:
    """The ``conjugate`` view's answer: a Gaussian posterior over a flat latent vector v.

    mean (d,), cov (d, d); ``to_sites(v)`` maps one draw of v to the model's latent sites (e.g. z and f);
    ``log_evidence`` is log p(observed | params); ``jitter`` the absolute jitter the model added to a prior
    covariance's diagonal to factorise it (0.0 when none), so that the evidence is that of the jittered model.
    """

    mean: Any
    cov: Any
    to_sites: Callable[[Any], dict[str, Any]]
    log_evidence: Any
    jitter: Any = 0.0
