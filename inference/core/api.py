"""``inference.run``: the engine registry, capability checks, option validation, timing, result assembly.

An engine is a function ``(spec, dataset, key, timer, **options) -> EngineOutput`` registered with its
name, the capabilities it requires and its default options (docs/architecture.md#engines). ``run`` validates the
model, data and options before anything is compiled, times compilation and execution apart, and returns
ArviZ InferenceData.
"""

import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import jax
import numpy as np

import zoo
from inference.core.cache import MAX_PROGRAMS, on_release, release_if_mappings_short
from inference.core.program import resolve_params
from zoo import cpu_threads
from zoo.errors import IncompatibleEngineError, OptionError, unknown_name
from zoo.options import Option
from zoo.options import validate as validate_declared
from zoo.programs import declared_data_shapes, program_spec
from zoo.registry import Dataset, ModelSpec

__all__ = [
    "Engine",
    "EngineOutput",
    "Timer",
    "check_run",
    "data_key",
    "engine_names",
    "engines_for",
    "fits",
    "get_engine",
    "package_versions",
    "register_engine",
    "resolve_model",
    "run",
    "validate_options",
]

Array = Any


@dataclass
class EngineOutput:
    """What an engine returns; ``run`` turns it into InferenceData.

    posterior: constrained draws, each (chain, draw, *site_shape).
    sample_stats: per-draw statistics, each (chain, draw) (``diverging``, ``n_steps``, ...).
    point_estimates: learned parameter values (ML-II, EM, MAP), each (chain, *shape).
    traces: objective traces of learning engines, each (chain, step), and parameter paths (chain, step, ...): see
    ``inference.core.parameter_path``.
    """

    posterior: dict[str, Array]
    sample_stats: dict[str, Array] = field(default_factory=dict)
    point_estimates: dict[str, Array] = field(default_factory=dict)
    traces: dict[str, Array] = field(default_factory=dict)
    log_evidence: float | None = None
    num_grad_evals: int | None = None
    num_lik_evals: int | None = None


@dataclass(frozen=True)
class Engine:
    name: str
    fn: Callable[..., EngineOutput]
    requires: frozenset[str]
    options: Mapping[str, Option]  # declared once: kind, default, range (inference/core/options.py)
    summary: str
    alternatives: tuple[frozenset[str], ...] = ()  # other capability sets any one of which also suffices
    # what its ``params`` option means (inference/core/fixed.py's PARAMS_ROLES), or a function of the options giving it
    params_role: str | Callable[[Mapping[str, Any]], str] = "learns"

    @property
    def defaults(self) -> dict[str, Any]:
        return {name: option.default for name, option in self.options.items()}

    def role(self, options: Mapping[str, Any]) -> str:
        """``conditions``, ``starts`` or ``learns``: what the model's parameters are to a run with ``options``
        (the given ones; the rest at their defaults)."""
        if callable(self.params_role):
            return self.params_role({**self.defaults, **options})
        return self.params_role


_ENGINES: dict[str, Engine] = {}


def register_engine(
    name: str,
    requires: set[str],
    options: Mapping[str, Option],
    summary: str,
    alternatives: tuple[set[str], ...] = (),
    params_role: str | Callable[[Mapping[str, Any]], str] = "learns",
):
    """Decorator registering an engine function under ``name``, with its declared options. The engine fits a model
    that offers ``requires`` or any one of the capability sets in ``alternatives`` (it dispatches on the views it
    finds). ``params_role`` says what the model's parameters are to it (``fixed.PARAMS_ROLES``): ``conditions``
    (held fixed, at the model's defaults unless ``params`` gives them), ``starts`` (the defaults only start it)
    or ``learns`` (sampled or learnt, except those ``params`` fixes), or a function of the run's options giving one."""

    def decorate(fn: Callable[..., EngineOutput]) -> Callable[..., EngineOutput]:
        others = tuple(frozenset(a) for a in alternatives)
        for option_name, option in options.items():
            if not isinstance(option, Option):
                raise TypeError(f"engine {name!r}: option {option_name!r} must be declared as an Option")
        from inference.core import fixed  # here: it imports inference.results, which is not loaded yet at startup

        engine = Engine(name, fn, frozenset(requires), dict(options), summary, others, params_role)
        fixed.check_params_role(name, engine.role({}), options.get("params"))
        _ENGINES[name] = engine
        return fn

    return decorate


def get_engine(name: str) -> Engine:
    try:
        return _ENGINES[name]
    except KeyError:
        raise unknown_name("engine", name, _ENGINES) from None


def engine_names() -> list[str]:
    return sorted(_ENGINES)


def fits(engine: Engine, spec: ModelSpec) -> bool:
    return any(needs <= spec.capabilities for needs in (engine.requires, *engine.alternatives))


def engines_for(spec: ModelSpec) -> list[str]:
    return [name for name in engine_names() if fits(_ENGINES[name], spec)]


class Timer:
    """Splits an engine's wall time into compilation and execution.

    ``timer.call(fn, *args)`` compiles ``fn`` (a ``jax.jit`` object) ahead of time for these argument
    shapes, then runs it to completion. Compiled executables are kept per (fn, shapes), so calling again
    with other seeds or data of the same shapes compiles nothing.
    """

    _compiled: "OrderedDict[tuple, Any]" = OrderedDict()
    _max_cached = MAX_PROGRAMS  # each holds an executable's memory mappings (inference.core.cache)
    on_release(_compiled.clear)

    def __init__(self) -> None:
        self.compile_s = 0.0
        self.run_s = 0.0

    def call(self, fn: Any, *args: Any) -> Any:
        leaves, treedef = jax.tree.flatten(args)
        signature = (fn, treedef, tuple((np.shape(x), str(getattr(x, "dtype", type(x).__name__))) for x in leaves))
        compiled = self._compiled.get(signature)
        if compiled is None:
            release_if_mappings_short()
            start = time.perf_counter()
            compiled = fn.lower(*args).compile()
            self.compile_s += time.perf_counter() - start
            self._compiled[signature] = compiled
            if len(self._compiled) > self._max_cached:
                self._compiled.popitem(last=False)
        start = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        self.run_s += time.perf_counter() - start
        return out


def _read_data_file(model, path) -> Dataset:
    from inference.files.data import load_data, load_dataset

    if isinstance(model, str | ModelSpec):
        return load_dataset(path, zoo.get(model))
    return Dataset(observed=load_data(path, declared_data_shapes(model)))


def validate_options(engine: Engine, options: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's defaults updated by ``options``, each coerced to its declared kind and range-checked: the one
    place engine options are validated. Unknown names and bad values raise OptionError."""
    return validate_declared(f"engine {engine.name!r}", engine.options, options)


def package_versions() -> dict[str, str]:
    found = {}
    for package in ("structured-gp-zoo", "jax", "jaxlib", "numpyro", "blackjax", "optax", "arviz"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    return found


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray | jax.Array):
        return np.asarray(value).tolist()
    return value


def resolve_model(model: "str | ModelSpec | Callable[..., Any]", data: Any) -> tuple[ModelSpec, Any]:
    """(the model's spec, its data with a data file read): ``run``'s first step, public so that a caller that
    prepares data first (``inference.applications.preparation``) sees the same spec and data."""
    if isinstance(data, str | os.PathLike):
        data = _read_data_file(model, data)
    spec = zoo.get(model) if isinstance(model, str | ModelSpec) else program_spec(model, data)
    return spec, data


def check_run(spec: ModelSpec, engine: str, seed: Any, options: Mapping[str, Any]) -> tuple[Engine, dict[str, Any]]:
    """(the engine, its validated options): that the engine fits the model, that ``seed`` is a non-negative integer
    and the options are valid, before anything is fitted or compiled."""
    chosen = get_engine(engine)
    if not fits(chosen, spec):
        needs = (chosen.requires, *chosen.alternatives)
        missing = " or ".join(", ".join(sorted(need - spec.capabilities)) for need in needs)
        raise IncompatibleEngineError(
            f"engine {engine!r} needs {missing}, which model {spec.name!r} does not offer"
            + (f" ({spec.notes})" if spec.notes else "")
            + f"; engines that fit: {', '.join(engines_for(spec)) or 'none'}."
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise OptionError(f"seed must be a non-negative integer, got {seed!r}")
    return chosen, validate_options(chosen, options)


def data_key(seed: int) -> Array:
    """The key that simulates data when ``run`` is given none (the engine gets the other half of the split)."""
    return jax.random.split(jax.random.key(int(seed)))[0]


def _num_points(dataset: Dataset) -> int:
    """The data's size as the BLAS thread count sees it: the longest leading axis of an observed array."""
    return max((np.shape(a)[0] for a in dataset.observed.values() if np.ndim(a) > 0), default=0)


def run(
    model: "str | ModelSpec | Callable[..., Any]",
    data: "Dataset | Mapping[str, Any] | None" = None,
    engine: str = "nuts",
    seed: int = 0,
    **options: Any,
):
    """Run ``engine`` on ``model`` and return ``az.InferenceData``: the driver, with no preparation step.
    ``inference.run`` (``inference.applications.preparation.run``) runs the steps a model declares (the GP-SSMs'
    pseudo-inputs and AR1-GP start) first and then this.

    model: a registered name, a ModelSpec, or any NumPyro program whose keyword arguments are its data
        (``zoo.programs``; docs/own-model.md).
    data: a Dataset, a mapping of the program's arrays, or a data file (.csv, .npz, .nc;
        docs/architecture.md#data-files; a user program declares its ``data_shapes`` with ``@zoo.model`` to read
        one); ``None`` simulates data with ``seed``.
    options: engine options (``num_chains``, ``num_samples``, ``params``, ...); see ``zoo list``.
    Raises ZooError subclasses for unknown names, engines that do not fit, bad data or options.
    """
    from inference.core import fixed
    from inference.results import diagnostics, health

    spec, data = resolve_model(model, data)
    chosen, opts = check_run(spec, engine, seed, options)
    backend = jax.default_backend()
    if "chain_method" in opts:  # device-aware default, recorded in the result's options
        from inference.core.options import resolve_chain_method

        opts["chain_method"] = resolve_chain_method(opts["chain_method"], backend)
    simulate_key, engine_key = jax.random.split(jax.random.key(int(seed)))
    dataset = spec.validate(spec.simulate(simulate_key) if data is None else data)
    fixed_params, at_defaults = {}, []
    if "params" in opts:
        opts["params"] = resolve_params(spec, dataset, opts["params"])
        # what this posterior conditions on, and what nobody asked to fix (docs/architecture.md#one-posterior)
        fixed_params, at_defaults = fixed.fixed_parameters(chosen.role(opts), opts["params"], options.get("params"))
        fixed.announce(chosen.name, spec.name, fixed_params, at_defaults)

    timer = Timer()
    start = time.perf_counter()
    # One BLAS thread for small problems, every core for large ones (docs/performance.md#busy-machine)
    with cpu_threads.for_problem_size(_num_points(dataset)) as threads:
        output = chosen.fn(spec, dataset, engine_key, timer, **opts)
    wall_s = time.perf_counter() - start
    attrs = {
        "engine": chosen.name,
        "model": spec.name,
        "model_options": json.dumps(_jsonable(spec.options), sort_keys=True),
        "seed": int(seed),
        "options": json.dumps(_jsonable(opts), sort_keys=True),
        "versions": json.dumps(package_versions(), sort_keys=True),
        "cpu_threads": threads,
        "backend": backend,
        "wall_s": wall_s,
        "compile_s": timer.compile_s,
        "run_s": timer.run_s,
        "num_grad_evals": -1 if output.num_grad_evals is None else int(output.num_grad_evals),
        "num_lik_evals": -1 if output.num_lik_evals is None else int(output.num_lik_evals),
        "log_evidence": np.nan if output.log_evidence is None else float(output.log_evidence),
        **fixed.to_attrs(fixed_params, at_defaults),
    }
    idata = diagnostics.to_inference_data(output, dataset, attrs)
    # the engine's own diagnostics against stated thresholds, one warning line each (docs/architecture.md#health)
    problems = health.check(idata)
    health.announce(chosen.name, spec.name, problems)
    for group in idata.groups():
        idata[group].attrs["health"] = json.dumps(health.messages(problems))
    return idata
