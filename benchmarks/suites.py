"""Benchmark suites: small declarative TOML files in ``benchmarks/suites/``, expanded into a grid of cells.

A suite file::

    description = "what the suite compares"
    seeds = [0, 1]                     # engine seeds of every model (a model may override)

    [[models]]
    name = "blr"                       # a registered model (see `zoo list`)
    size = { n = 50, d = 2 }           # keyword arguments of spec.simulate
    model_options = { }                # options of a model family, e.g. { num_modes = 3 } (see `zoo list`)
    data_seed = 0                      # the dataset every engine of this model sees
    reference = "exact"                # label of the engine the others are compared against
    options = { num_chains = 2 }       # options shared by every engine of this model (engines override)

      [[models.engines]]
      engine = "exact"
      label = "exact"                  # optional; defaults to the engine name (labels must be unique)
      options = { num_samples = 500 }

A cell is one (model, engine label, seed). Names of models and engines are not checked here: a name that
does not exist (yet) makes its cells fail with the error, recorded like any other failure.
"""

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.errors import ZooError, unknown_name

SUITES_DIR = Path(__file__).resolve().parent / "suites"

_SUITE_KEYS = {"description", "seeds", "models"}
_MODEL_KEYS = {"name", "size", "model_options", "data_seed", "reference", "seeds", "options", "engines"}
_ENGINE_KEYS = {"engine", "label", "options"}


class SuiteError(ZooError):
    """A malformed suite file; the message names the file and the offending key."""


@dataclass(frozen=True)
class Cell:
    """One unit of work: ``engine`` with ``options`` on ``model`` built with ``model_options`` (data simulated with
    ``size`` and ``data_seed``), engine seed ``seed``. ``reference`` is the label compared against at the same
    seed."""

    model: str
    label: str
    engine: str
    seed: int
    options: Mapping[str, Any]
    size: Mapping[str, Any]
    data_seed: int
    reference: str
    model_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def variant(self) -> str:
        """The model and its options, e.g. ``dagp+num_modes=3`` (the model's name alone without options)."""
        shown = [f"{k}={_compact(v)}" for k, v in sorted(self.model_options.items())]
        return "+".join([self.model, *shown])

    @property
    def id(self) -> str:
        """A file-name-safe identifier, unique within a suite, e.g. ``gp__regression--nuts--s0``."""
        return f"{self.variant.replace('/', '__')}--{self.label}--s{self.seed}"

    @property
    def is_reference(self) -> bool:
        return self.label == self.reference

    def spec(self) -> dict[str, Any]:
        """Everything that decides the cell's result, as plain JSON data (compared on resume)."""
        return {
            "model": self.variant,
            "label": self.label,
            "engine": self.engine,
            "seed": self.seed,
            "options": dict(self.options),
            "size": dict(self.size),
            "model_options": dict(self.model_options),
            "data_seed": self.data_seed,
            "reference": self.reference,
        }


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    cells: tuple[Cell, ...] = field(default_factory=tuple)
    source: str = ""  # the TOML text, stored with the results

    def models(self) -> list[str]:
        """The model variants of the suite (``Cell.variant``), in order."""
        return list(dict.fromkeys(cell.variant for cell in self.cells))


def available() -> list[str]:
    """Names of the suites shipped in ``benchmarks/suites/``."""
    return sorted(path.stem for path in SUITES_DIR.glob("*.toml"))


def suite_path(name: str) -> Path:
    """The file of suite ``name``: a shipped suite's name, or a path to a ``.toml`` file."""
    candidate = Path(name)
    if candidate.suffix == ".toml":
        if not candidate.is_file():
            raise SuiteError(f"suite file {name!r} does not exist.")
        return candidate
    path = SUITES_DIR / f"{name}.toml"
    if not path.is_file():
        raise unknown_name("suite", name, available())
    return path


def load(name: str) -> Suite:
    """Read and validate suite ``name`` (a shipped name or a path to a TOML file)."""
    path = suite_path(name)
    text = path.read_text()
    return parse(text, path.stem, where=str(path))


def parse(text: str, name: str, where: str = "<suite>") -> Suite:
    """A Suite from TOML ``text``; every error names ``where`` and the key at fault."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"{where}: not valid TOML ({exc}).") from None
    _check_keys(raw, _SUITE_KEYS, where)
    default_seeds = _seeds(raw.get("seeds", [0]), f"{where}: seeds")
    models = raw.get("models")
    if not isinstance(models, list) or not models:
        raise SuiteError(f"{where}: 'models' must be a non-empty array of tables ([[models]]).")
    cells: list[Cell] = []
    for i, model in enumerate(models):
        cells.extend(_model_cells(model, default_seeds, f"{where}: models[{i}]"))
    ids = [cell.id for cell in cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SuiteError(f"{where}: cells appear twice: {', '.join(duplicates)} (give engines distinct labels).")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise SuiteError(f"{where}: 'description' must be a string.")
    # References first: the other cells of a model are compared against them as soon as they finish.
    ordered = sorted(cells, key=lambda cell: not cell.is_reference)
    return Suite(name=name, description=description, cells=tuple(ordered), source=text)


def _model_cells(model: Any, default_seeds: list[int], where: str) -> list[Cell]:
    if not isinstance(model, dict):
        raise SuiteError(f"{where}: must be a table.")
    _check_keys(model, _MODEL_KEYS, where)
    name = _required_str(model, "name", where)
    where = f"{where} ({name})"
    size = _table(model, "size", where)
    model_options = _table(model, "model_options", where)
    shared = _table(model, "options", where)
    seeds = _seeds(model.get("seeds", default_seeds), f"{where}: seeds")
    data_seed = model.get("data_seed", 0)
    if isinstance(data_seed, bool) or not isinstance(data_seed, int) or data_seed < 0:
        raise SuiteError(f"{where}: 'data_seed' must be a non-negative integer, got {data_seed!r}.")
    engines = model.get("engines")
    if not isinstance(engines, list) or not engines:
        raise SuiteError(f"{where}: 'engines' must be a non-empty array of tables ([[models.engines]]).")
    entries = [_engine_entry(entry, f"{where}: engines[{j}]") for j, entry in enumerate(engines)]
    labels = [label for label, _, _ in entries]
    reference = model.get("reference", labels[0])
    if reference not in labels:
        raise SuiteError(f"{where}: 'reference' is {reference!r}, which is not one of its engines {labels}.")
    return [
        Cell(name, label, engine, seed, {**shared, **options}, size, data_seed, reference, model_options)
        for label, engine, options in entries
        for seed in seeds
    ]


def _engine_entry(entry: Any, where: str) -> tuple[str, str, dict[str, Any]]:
    if not isinstance(entry, dict):
        raise SuiteError(f"{where}: must be a table.")
    _check_keys(entry, _ENGINE_KEYS, where)
    engine = _required_str(entry, "engine", where)
    label = entry.get("label", engine)
    if not isinstance(label, str) or not label or any(ch in label for ch in "/\\ "):
        raise SuiteError(f"{where}: 'label' must be a non-empty string without '/', '\\' or spaces.")
    return label, engine, _table(entry, "options", where)


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise SuiteError(f"{where}: {unknown_name('key', key, allowed)}")


def _required_str(table: dict, key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise SuiteError(f"{where}: '{key}' is required and must be a non-empty string.")
    return value


def _table(table: dict, key: str, where: str) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise SuiteError(f"{where}: '{key}' must be a table (e.g. {key} = {{ ... }}).")
    return dict(value)


def _seeds(value: Any, where: str) -> list[int]:
    ok = isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) for s in value)
    if not ok or min(value) < 0 or len(set(value)) != len(value):
        raise SuiteError(f"{where} must be a non-empty list of distinct non-negative integers, got {value!r}.")
    return list(value)


def _compact(value: Any) -> str:
    """An option value without spaces or brackets, for identifiers: (1, 2) -> 1,2."""
    if isinstance(value, list | tuple):
        return ",".join(_compact(v) for v in value)
    return str(value).replace(" ", "")
