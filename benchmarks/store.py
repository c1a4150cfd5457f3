"""The results store of one benchmark run: a folder written only by the client, one file at a time, atomically.

Layout::

    DIR/suite.toml            the suite as run (its TOML text); DIR/suite.json its name
    DIR/cells/<cell>.nc       InferenceData of a finished cell (netCDF)
    DIR/cells/<cell>.json     its row of the results table: cell spec, status, error, metrics, timings, host
    DIR/report.md, report.html, figures/*.png   written by the report

Every file is written under a temporary name in the same folder and renamed into place
(``inference.files.atomic``), so a reader (or a resumed run) sees a file whole or not at all. A cell counts as
finished when its JSON row exists; the row is written after the netCDF, so a finished cell always has both.
Temporary files left by a killed process are removed when the store is opened.
"""

import json
from pathlib import Path
from typing import Any

import pandas as pd

from inference.files.atomic import TEMP_MARK, atomic_write_bytes, atomic_write_text


class ResultsStore:
    """Finished cells of one run under ``root`` (see the module docstring for the layout)."""

    def __init__(self, root: "str | Path") -> None:
        self.root = Path(root)
        self.cells_dir = self.root / "cells"

    def open(self) -> "ResultsStore":
        """Create the folders and remove temporary files a killed writer left behind."""
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        for leftover in self.temp_files():
            leftover.unlink(missing_ok=True)
        return self

    def temp_files(self) -> list[Path]:
        """Files under the store that are half written (a temporary name)."""
        return [path for path in self.root.rglob("*") if TEMP_MARK in path.name]

    def is_empty(self) -> bool:
        return not any(self.cells_dir.glob("*.json")) if self.cells_dir.is_dir() else True

    # -- the suite -------------------------------------------------------------------------------------
    def write_suite(self, name: str, toml_text: str) -> None:
        """Keep the suite as run: its TOML text and its name (``suite.json``)."""
        atomic_write_text(self.root / "suite.toml", toml_text)
        atomic_write_text(self.root / "suite.json", json.dumps({"name": name}))

    def suite_name(self) -> str:
        path = self.root / "suite.json"
        return json.loads(path.read_text())["name"] if path.is_file() else self.root.name

    def suite_text(self) -> str:
        return (self.root / "suite.toml").read_text()

    # -- cells ---------------------------------------------------------------------------------------------
    def idata_path(self, cell_id: str) -> Path:
        return self.cells_dir / f"{cell_id}.nc"

    def row_path(self, cell_id: str) -> Path:
        return self.cells_dir / f"{cell_id}.json"

    def write_idata(self, cell_id: str, idata: Any) -> Path:
        from inference.results import diagnostics

        path = self.idata_path(cell_id)
        diagnostics.to_netcdf(idata, str(path))
        return path

    def read_idata(self, cell_id: str) -> Any:
        from inference.results import diagnostics

        return diagnostics.from_netcdf(str(self.idata_path(cell_id)))

    def has_idata(self, cell_id: str) -> bool:
        return self.idata_path(cell_id).is_file()

    def write_row(self, row: dict[str, Any]) -> None:
        """Write the JSON row of cell ``row["cell"]`` (NaN is written as null: JSON has no NaN)."""
        atomic_write_text(self.row_path(row["cell"]), json.dumps(_json_safe(row), indent=1, sort_keys=True))

    def rows(self) -> dict[str, dict[str, Any]]:
        """Every finished cell's row, by cell id."""
        if not self.cells_dir.is_dir():
            return {}
        found = {}
        for path in sorted(self.cells_dir.glob("*.json")):
            row = json.loads(path.read_text())
            found[row["cell"]] = row
        return found

    def table(self) -> pd.DataFrame:
        """The results table: one row per finished cell, nested fields (options, versions) as JSON text."""
        rows = [
            {k: json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for k, v in row.items()}
            for row in self.rows().values()
        ]
        return pd.DataFrame(rows).set_index("cell") if rows else pd.DataFrame()

    # -- reports -------------------------------------------------------------------------------------------
    def write_file(self, relative: str, payload: "bytes | str") -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, payload.encode("utf-8") if isinstance(payload, str) else payload)
        return path


def _json_safe(value: Any) -> Any:
    """Plain JSON data: NaN/inf floats become None, numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not (value == value and abs(value) != float("inf")):
        return None
    return value
