"""Data files: a model's arrays read from ``.csv``, ``.npz`` or ``.nc`` (docs/architecture.md#data-files).

Reading only: nothing here writes a file. Every problem is a one-line ``DataError`` naming the file and, where
there is one, the column (or variable) and the row, raised before anything is compiled.

How a model argument finds its data (``shapes`` is the model's ``data_shapes``, e.g. ``{"X": ("N", "D"),
"y": ("N",)}``):

- CSV (header row, comma-separated): every array has one entry per data row. A 1-D argument ``y`` is the column
  ``y``; a 2-D argument ``X`` is the columns ``X_0, X_1, ...`` (numbered from 0, consecutive; ordered by number,
  so ``X_10`` follows ``X_9``) or a single column ``X`` (one feature). ``mapping`` renames: ``{"y": "strength"}``,
  ``{"X": "cement,age"}`` (a comma list, in that order). Rows are counted as a spreadsheet counts them: the header
  is row 1, so the first data row is row 2. Columns no argument uses are ignored (an id column, notes).
- NPZ: the array named like the argument (or as ``mapping`` says).
- netCDF (``.nc``, read with xarray's h5netcdf engine): the variable named like the argument (or as mapped).
  In ``.npz`` and ``.nc`` a mapping to several names stacks those 1-D arrays as columns.
"""

import csv
import dataclasses
import difflib
import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zoo.errors import DataError
from zoo.registry import Dataset

__all__ = ["SUFFIXES", "file_digest", "load_data", "load_dataset", "parse_mapping"]

Shape = tuple[int | str, ...]
SUFFIXES = (".csv", ".npz", ".nc")
# Cells a spreadsheet or R writes for a missing value: reported as missing, not as "not a number".
_MISSING = {"", "na", "nan", "n/a", "null", "none", "-nan", "#n/a"}


def parse_mapping(pairs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``["y=strength", "X=cement,age"]`` (the ``--map`` flags) -> ``{"y": ("strength",), "X": ("cement", "age")}``."""
    out: dict[str, tuple[str, ...]] = {}
    for pair in pairs:
        name, sep, columns = pair.partition("=")
        names = tuple(c.strip() for c in columns.split(","))
        if not sep or not name.strip() or not all(names):
            raise DataError(f"--map expects ARGUMENT=COLUMN or ARGUMENT=COLUMN,COLUMN,..., got {pair!r}.")
        if name.strip() in out:
            raise DataError(f"--map names argument {name.strip()!r} twice.")
        out[name.strip()] = names
    return out


def load_data(
    path: "str | Path",
    shapes: Mapping[str, Shape],
    mapping: "Mapping[str, str | Sequence[str]] | None" = None,
    optional: Iterable[str] = (),
) -> dict[str, np.ndarray]:
    """The model's arrays read from ``path`` (``.csv``, ``.npz`` or ``.nc``): ``{argument: float64 array}``, each
    with ``len(shapes[argument])`` dimensions (sizes are checked by ``spec.validate``).

    mapping: argument -> the file's column/variable name, or several (a comma string or a sequence).
    optional: arguments that may be absent from the file (left out of the result); every other one is required.
    """
    path = Path(path)
    columns = _normalise_mapping(path, shapes, mapping or {})
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise DataError(f"{path}: unknown data file type {path.suffix!r}; use one of {', '.join(SUFFIXES)}.")
    if not path.is_file():
        raise DataError(f"{path}: no such file.")
    reader = {".csv": _load_csv, ".npz": _load_npz, ".nc": _load_netcdf}[suffix]
    return reader(path, shapes, columns, frozenset(optional))


def load_dataset(
    path: "str | Path",
    spec: Any,
    mapping: "Mapping[str, str | Sequence[str]] | None" = None,
    test: "str | Path | None" = None,
) -> Dataset:
    """A Dataset for ``spec`` (a ModelSpec): ``observed`` from ``path``, ``test`` (held-out arrays, any subset of the
    model's arguments) from ``test``; both through :func:`load_data` with the same ``mapping``. Sizes are checked
    against the model here (a DataError naming the file); ``inference.run`` validates the Dataset again."""
    shapes = spec.data_shapes
    # A model that computes an argument from the others when it is missing (the GP-SSMs' pseudo-inputs, see
    # inference.applications.ar1.prepare) does not need it in the file.
    derived = {"pseudo_inputs"} if "pseudo_inputs" in spec.views else set()
    observed = load_data(path, shapes, mapping, optional=derived)
    _check_sizes(spec, path, observed)
    held_out = load_data(test, shapes, mapping, optional=shapes) if test else {}
    if test and not held_out:
        raise DataError(f"{test}: no column or variable of the model's data ({', '.join(shapes)}).")
    if held_out:
        _check_sizes(spec, test, held_out)
    return Dataset(observed=observed, test=held_out)


def _check_sizes(spec: Any, path: "str | Path", arrays: Mapping[str, np.ndarray]) -> None:
    """``spec.validate`` on the arrays the file gave (sizes that disagree, a wrong fixed size), its DataError
    prefixed with the file, so the user learns which file is wrong before anything is compiled."""
    shapes = {name: shape for name, shape in spec.data_shapes.items() if name in arrays}
    try:
        dataclasses.replace(spec, data_shapes=shapes).validate(Dataset(observed=dict(arrays)))
    except DataError as exc:
        raise DataError(f"{path}: {exc}") from None


def file_digest(path: "str | Path") -> str:
    """SHA-256 of a file's bytes: a benchmark cell's data identity (a changed file is rerun on resume)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# -- mapping ------------------------------------------------------------------------------------------------------


def _normalise_mapping(path: Path, shapes: Mapping[str, Shape], mapping: Mapping[str, Any]) -> dict[str, tuple]:
    out = {}
    for name, columns in mapping.items():
        if name not in shapes:
            close = _close(name, list(shapes))
            hint = f" Did you mean {close}?" if close else ""
            raise DataError(
                f"{path}: --map names {name!r}, which is not an argument of the model.{hint} "
                f"Arguments: {', '.join(shapes)}."
            )
        names = tuple(c.strip() for c in columns.split(",")) if isinstance(columns, str) else tuple(columns)
        if not names or not all(isinstance(c, str) and c for c in names):
            raise DataError(f"{path}: --map {name}= needs column names, got {columns!r}.")
        if len(shapes[name]) == 1 and len(names) > 1:
            raise DataError(f"{path}: {name!r} is 1-D, so --map {name}= takes one column, got {len(names)}.")
        out[name] = names
    return out


def _missing(path: Path, name: str, shape: Shape, mapped: str | None, known: Sequence[str], kind: str) -> DataError:
    """A missing column (variable): the one ``--map`` named (``mapped``), else the one the convention expects."""
    if mapped is None:
        wanted = name
        expected = f"{name}_0, {name}_1, ... or {name}" if kind == "column" and len(shape) == 2 else name
        placeholder = "COLUMN" if kind == "column" else "NAME"
        what = f"no {kind} {expected} for the model's {name!r}; name yours with --map {name}={placeholder}"
    else:
        wanted = mapped
        what = f"no {kind} {mapped!r} (the --map of the model's {name!r})"
    close = _close(wanted, known)
    hint = f" Did you mean {close}?" if close else ""
    shown = ", ".join(repr(k) for k in list(known)[:12]) + (", ..." if len(known) > 12 else "")
    return DataError(f"{path}: {what}.{hint} The file has {shown or 'nothing'}.")


def _close(word: str, known: Sequence[str]) -> str:
    """Close matches of ``word`` among ``known``, quoted ("'y'"), ignoring case (a header's "Y" is the model's y)."""
    lower = {k.lower(): k for k in reversed(known)}
    close = difflib.get_close_matches(word.lower(), list(lower), n=3, cutoff=0.5)
    return ", ".join(repr(lower[c]) for c in close)


# -- CSV ----------------------------------------------------------------------------------------------------------


def _load_csv(path: Path, shapes, mapping, optional) -> dict[str, np.ndarray]:
    header, rows = _read_csv(path)
    out = {}
    for name, shape in shapes.items():
        if len(shape) not in (1, 2):
            if name in optional:
                continue
            raise DataError(
                f"{path}: the model's {name!r} has {len(shape)} dimensions {shape}; a CSV file holds 1-D and 2-D "
                "arrays only, so give it in a .npz or .nc file."
            )
        columns = mapping.get(name) or _default_columns(path, name, shape, header)
        absent = columns is None or not any(column in header for column in columns)
        if absent and name in optional:  # e.g. a test file with inputs only: its mapped y is simply not there
            continue
        if columns is None:
            raise _missing(path, name, shape, None, header, "column")
        for column in columns:
            if column not in header:
                raise _missing(path, name, shape, column, header, "column")
        where = [(header.index(column), column) for column in columns]
        values = np.array([[_number(path, row[i], column, line) for i, column in where] for line, row in rows])
        out[name] = values[:, 0] if len(shape) == 1 else values.reshape(len(rows), len(columns))
    return out


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header (names stripped) and the data rows as ``(spreadsheet row number, fields)``; blank lines skipped.
    Ragged rows and duplicate names raise here, for every column, since no column is trustworthy after a shift."""
    try:
        # utf-8-sig: Excel starts a CSV with a byte-order mark, which would otherwise stick to the first name
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise DataError(f"{path}: the file is empty; expected a header row of column names.")
            header = [name.strip() for name in header]
            rows = [(reader.line_num, fields) for fields in reader if fields]
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start}).") from None
    except csv.Error as exc:
        raise DataError(f"{path}: not a readable CSV file ({exc}).") from None
    seen = set()
    for i, name in enumerate(header):
        if not name:
            raise DataError(f"{path}: column {i + 1} of the header (row 1) has no name.")
        if name in seen:
            raise DataError(f"{path}: column {name!r} appears twice in the header (row 1).")
        seen.add(name)
    for line, fields in rows:
        if len(fields) != len(header):
            more = "many" if len(fields) > len(header) else "few"
            last = header[min(len(fields), len(header)) - 1]
            raise DataError(
                f"{path}: row {line} has {len(fields)} fields but the header has {len(header)} columns (too {more}; "
                f"after column {last!r})."
            )
    if not rows:
        raise DataError(f"{path}: no data rows below the header.")
    return header, rows


def _default_columns(path: Path, name: str, shape: Shape, header: Sequence[str]) -> tuple[str, ...] | None:
    """The columns argument ``name`` takes by the naming convention, or None when the file has none of them."""
    if len(shape) == 1:
        return (name,) if name in header else None
    pattern = re.compile(rf"{re.escape(name)}_(\d+)")
    numbered = {int(m.group(1)): column for column in header if (m := pattern.fullmatch(column))}
    if not numbered:
        return (name,) if name in header else None
    if name in header:
        raise DataError(
            f"{path}: ambiguous columns for {name!r}: both {name!r} and {numbered[min(numbered)]!r}; "
            f"choose with --map {name}=..."
        )
    expected = list(range(len(numbered)))
    if sorted(numbered) != expected:
        gap = next(i for i in expected if i not in numbered)
        raise DataError(
            f"{path}: columns {name}_0, {name}_1, ... must be numbered from 0 without gaps; {name}_{gap} is "
            f"missing (found {', '.join(numbered[i] for i in sorted(numbered))})."
        )
    return tuple(numbered[i] for i in expected)


def _number(path: Path, cell: str, column: str, line: int) -> float:
    text = cell.strip()
    where = f"{path}: column {column!r}, row {line}"
    if text.lower() in _MISSING:
        shown = "an empty cell" if not text else f"the missing value {text!r}"
        raise DataError(f"{where}: {shown}; every cell of a column the model uses must hold a number.")
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{where}: {text[:40]!r} is not a number.") from None
    if not math.isfinite(value):
        raise DataError(f"{where}: {text!r} is not a finite number.")
    return value


# -- NPZ and netCDF -----------------------------------------------------------------------------------------------


def _load_npz(path: Path, shapes, mapping, optional) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:  # never unpickle: a data file must not run code
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:  # a corrupt zip, object arrays, ...: whatever numpy says, in one line
        raise DataError(f"{path}: not a readable .npz file ({type(exc).__name__}: {exc}).") from None
    return _pick(path, arrays, shapes, mapping, optional, "array")


def _load_netcdf(path: Path, shapes, mapping, optional) -> dict[str, np.ndarray]:
    import xarray as xr

    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            arrays = {str(name): ds[name].values for name in ds.variables}
    except Exception as exc:
        raise DataError(f"{path}: not a readable netCDF-4 file ({type(exc).__name__}: {exc}).") from None
    return _pick(path, arrays, shapes, mapping, optional, "variable")


def _pick(path: Path, arrays: Mapping[str, np.ndarray], shapes, mapping, optional, kind: str) -> dict:
    out = {}
    for name, shape in shapes.items():
        names = mapping.get(name, (name,))
        if name in optional and not any(source in arrays for source in names):
            continue
        for source in names:
            if source not in arrays:
                raise _missing(path, name, shape, source if name in mapping else None, list(arrays), kind)
        parts = [_numeric(path, source, arrays[source], kind) for source in names]
        if len(parts) > 1:
            for source, part in zip(names, parts, strict=True):
                if part.ndim != 1 or len(part) != len(parts[0]):
                    raise DataError(
                        f"{path}: {kind} {source!r} has shape {part.shape}; stacking "
                        f"{', '.join(names)} as columns of {name!r} needs 1-D arrays of one length."
                    )
            value = np.stack(parts, axis=1)
        else:
            value = parts[0]
        if value.ndim != len(shape):
            raise DataError(
                f"{path}: {kind} {names[0]!r} has shape {value.shape}, but the model's {name!r} has "
                f"{len(shape)} dimensions {shape}."
            )
        out[name] = value
    return out


def _numeric(path: Path, source: str, value: np.ndarray, kind: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{path}: {kind} {source!r} is not numeric (dtype {value.dtype}).") from None
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        index = tuple(int(i) for i in bad[0])
        row = f", row {index[0] + 1}" if array.ndim else ""
        raise DataError(
            f"{path}: {kind} {source!r}{row}: {array[index]} at index {list(index)} (0-based); "
            f"{len(bad)} values are NaN or infinite."
        )
    return array
