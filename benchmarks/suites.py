"""Benchmark suites: small declarative TOML files in ``benchmarks/suites/``, expanded into a grid of cells.

A suite file::

    description = "what the suite compares"
    seeds = [0, 1]                     # engine seeds of every model (a model may override)

    [[models]]
    name = "blr"                       # a registered model (see `zoo list`)
    size = { n = 50, d = 2 }           # keyword arguments of spec.simulate
    model_options = { }                # options of a model family, e.g. { num_modes = 3 } (see `zoo list`)
    data_seed = 0                      # the dataset every engine of this model sees
    reference = "exact"                # label of the engine the others are compared against, or "stored":
                                       # the model's stored reference posterior (zoo/references/, `zoo reference`)
    options = { num_chains = 2 }       # options shared by every engine of this model (engines override)

      [[models.engines]]
      engine = "exact"
      label = "exact"                  # optional; defaults to the engine name (labels must be unique)
      options = { num_samples = 500 }

A cell is one (model, engine label, seed). Names of models and engines are not checked here: a name that
does not exist (yet) makes its cells fail with the error, recorded like any other failure.
"""

import json
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


# ``reference = "stored"``: every engine of the model is compared against its stored reference posterior
# (inference/results/references.py); ``zoo bench`` refuses the suite before running anything when one is missing.
STORED = "stored"


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
    # Data read from files instead of simulated (``zoo compare --data``; suite files have no such key):
    # absolute paths, the --map of argument -> columns, and the data file's SHA-256 so a changed file reruns.
    data_file: str = ""
    data_map: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    test_file: str = ""
    data_digest: str = ""

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
            # only when set, so rows of suites written before data files existed still match on resume
            **({"data": self.data_source()} if self.data_file else {}),
        }

    def data_source(self) -> dict[str, Any]:
        """The data files of the cell as plain JSON data (empty when its data are simulated)."""
        if not self.data_file:
            return {}
        return {
            "file": self.data_file,
            "map": {k: list(v) for k, v in self.data_map.items()},
            "test": self.test_file,
            "sha256": self.data_digest,
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
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise SuiteError(f"{where}: 'description' must be a string.")
    return from_cells(name, description, cells, source=text, where=where)


def from_cells(name: str, description: str, cells: list[Cell], source: str | None = None, where: str = "") -> Suite:
    """A Suite of ``cells`` built in code (``zoo compare``) or parsed (``parse``). ``source`` is the TOML text kept
    with the results; None writes the equivalent suite file (``to_toml``), which also orders the report."""
    ids = [cell.id for cell in cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SuiteError(
            f"{where or name}: cells appear twice: {', '.join(duplicates)} (give engines distinct labels)."
        )
    # References first: the other cells of a model are compared against them as soon as they finish.
    ordered = sorted(cells, key=lambda cell: not cell.is_reference)
    text = to_toml(description, cells) if source is None else source
    return Suite(name=name, description=description, cells=tuple(ordered), source=text)


# Engines whose answer is exact for the models they fit: the reference of a comparison when one fits the model.
EXACT_ENGINES = ("exact", "kalman")


def default_reference(engines: list[str], fitting: list[str]) -> str:
    """The reference of a comparison of ``engines`` (engine names, in order) on a model that ``fitting`` engines
    fit: the first exact engine that fits (it may not be among ``engines``: the caller adds it), else the first
    of ``engines``, as a suite file without ``reference`` does."""
    exact = [name for name in EXACT_ENGINES if name in fitting]
    listed = [name for name in exact if name in engines]
    return (listed or exact or engines)[0]


def to_toml(description: str, cells: list[Cell]) -> str:
    """A suite file that ``parse`` reads back into ``cells`` (every engine's options written in full, so shared
    ones repeat). Data files have no key in the format: they are named in a comment, and such a file rerun by
    ``zoo bench`` would simulate its data."""
    lines = [f"description = {_toml(description)}", ""]
    models: dict[str, list[Cell]] = {}
    for cell in cells:
        models.setdefault(cell.variant, []).append(cell)
    for group in models.values():
        first = group[0]
        seeds = list(dict.fromkeys(cell.seed for cell in group))
        lines += ["[[models]]", f"name = {_toml(first.model)}"]
        if first.data_file:
            lines.append(f"# data read from files, not simulated: {json.dumps(first.data_source(), sort_keys=True)}")
        for key, value in (("size", first.size), ("model_options", first.model_options)):
            if value:
                lines.append(f"{key} = {_toml(dict(value))}")
        lines += [f"data_seed = {first.data_seed}", f"reference = {_toml(first.reference)}", f"seeds = {seeds}"]
        for label in dict.fromkeys(cell.label for cell in group):
            cell = next(c for c in group if c.label == label)
            lines += ["", "  [[models.engines]]", f"  engine = {_toml(cell.engine)}", f"  label = {_toml(label)}"]
            if cell.options:
                lines.append(f"  options = {_toml(dict(cell.options))}")
        lines.append("")
    return "\n".join(lines)


def _toml(value: Any) -> str:
    """A TOML value (inline tables and arrays) of plain JSON-like data."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(int(value)) if isinstance(value, int) else repr(float(value))  # nan, inf: TOML spells them so
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string uses JSON's escapes
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise SuiteError(f"a suite file cannot hold {value!r} ({type(value).__name__}).")


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
    if reference == STORED and STORED in labels:
        raise SuiteError(f"{where}: an engine's label is {STORED!r}, which names the stored reference; rename it.")
    if reference not in labels and reference != STORED:
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


def _toml_key(key: str) -> str:
    return key if key and all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in key) else json.dumps(key)


def _compact(value: Any) -> str:
    """An option value without spaces or brackets, for identifiers: (1, 2) -> 1,2."""
    if isinstance(value, list | tuple):
        return ",".join(_compact(v) for v in value)
    return str(value).replace(" ", "")
