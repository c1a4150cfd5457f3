"""What a structure search returns: every fitted candidate (``Fitted``), the data's standardisation, and the best
model (``SearchResult``), with the best kernel in the data's units and a JSON form of the whole trace."""

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from inference.files.atomic import atomic_write_text
from zoo.errors import DataError
from zoo.kernels.base import Kernel, KernelError
from zoo.kernels.priors import parametrised_nodes, site_names
from zoo.structure.rescale import rescale_inputs, scale_output


def hyperparameters(kernel: Kernel) -> dict[str, Any]:
    """The kernel's hyperparameters by sample-site name (``zoo.kernels.site_names``): floats, or lists for ARD."""
    values = [np.asarray(getattr(n, p), float) for n in parametrised_nodes(kernel) for p in n.PARAMS]
    return {name: v.tolist() for name, v in zip(site_names(kernel), values, strict=True)}


@dataclasses.dataclass(frozen=True)
class Standardisation:
    """x_s = (x - x_shift) / x_scale per column, y_s = (y - y_shift) / y_scale
    (docs/sources/duvenaud.md#search-choices)."""

    x_shift: np.ndarray  # (D,)
    x_scale: np.ndarray  # (D,)
    y_shift: float
    y_scale: float

    @classmethod
    def of(cls, X: np.ndarray, y: np.ndarray) -> "Standardisation":
        x_scale, y_scale = X.std(0), float(y.std())
        if np.any(x_scale == 0) or y_scale == 0:
            which = "y" if y_scale == 0 else f"input column(s) {np.flatnonzero(x_scale == 0).tolist()}"
            raise DataError(f"{which} is constant: nothing to standardise or to search a structure for.")
        return cls(X.mean(0), x_scale, float(y.mean()), y_scale)

    def inputs(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, float) - self.x_shift) / self.x_scale

    def targets(self, y: np.ndarray) -> np.ndarray:
        return (np.asarray(y, float) - self.y_shift) / self.y_scale

    def kernel_in_data_units(self, kernel: Kernel) -> Kernel:
        """A kernel fitted on the standardised data as a kernel of the data (``zoo.structure.rescale``; one input
        column)."""
        inputs = rescale_inputs(kernel, float(self.x_shift[0]), float(self.x_scale[0]))
        return scale_output(inputs, self.y_scale**2)

    def noise_in_data_units(self, noise: float) -> float:
        return float(noise * self.y_scale**2)


@dataclasses.dataclass
class Fitted:
    """One candidate of the search, fitted by ML-II on the standardised data.

    ``score`` is the search's score (higher is better; BIC by default; ``log_likelihood`` is never below a nested
    parent's by more than ``search.NESTING_TOLERANCE``), ``scores`` every score computed for it,
    ``error`` the reason a candidate failed (its score is then -inf and the search goes on)."""

    depth: int
    expression: str  # canonical text of the structure (zoo.structure.canonical.key)
    operator: str  # the grammar operator that made it ("start" at depth 1)
    parent: str | None
    kernel: Kernel | None = None  # fitted, standardised units
    noise: float = math.nan  # fitted noise variance, standardised units
    log_likelihood: float = math.nan  # max over restarts of log p(y_s | theta)
    num_params: int = 0  # |M| of BIC: kernel parameters (zoo.kernels.num_params) + the noise variance
    bic: float = -math.inf
    score: float = -math.inf
    scores: dict = dataclasses.field(default_factory=dict)
    restart_log_likelihoods: list = dataclasses.field(default_factory=list)
    wall_s: float = 0.0
    compile_s: float = 0.0  # of wall_s: XLA compilation of the candidate's ML-II
    run_s: float = 0.0  # of wall_s: the compiled program's calls
    error: str | None = None
    # Whether the child contains its parent (a nesting operator whose neutral limit reproduced the parent's likelihood
    # within the search's tolerance; search.py), None where not checked (depth 1, or an operator that does not nest)
    nests_parent: bool | None = None
    projected: list = dataclasses.field(default_factory=list)  # restarts projected back into the bounds (bounds.py)
    notes: list = dataclasses.field(default_factory=list)  # what the fitting did beyond its restarts (refits)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "kernel"}
        out["hyperparameters"] = None if self.kernel is None else hyperparameters(self.kernel)
        return _finite(out)


def _finite(value: Any) -> Any:
    """JSON has no inf/nan: they become null."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclasses.dataclass
class SearchResult:
    """The best model over all depths and the whole trace.

    ``X`` (n, D) and ``y`` (n,) are the data in their own units; ``best.kernel`` and ``best.noise`` are fitted on
    the standardised data (``standardisation``); ``kernel``, ``noise`` and ``mean`` give the same model in the
    data's units: y ~ GP(mean, kernel) + N(0, noise)."""

    best: Fitted
    trace: list[Fitted]
    X: np.ndarray
    y: np.ndarray
    standardisation: Standardisation
    score: str
    options: dict
    wall_s: float
    interrupted: bool = False  # stopped by Ctrl-C (SIGINT) after the candidate then running: a partial trace

    @property
    def kernel(self) -> Kernel:
        """The best kernel with its hyperparameters in the data's units (``zoo.structure.rescale``; one input
        column: for D > 1 use ``best.kernel`` on ``standardisation.inputs(X)``)."""
        if self.X.shape[1] != 1:
            raise KernelError(f"data units are defined for one input column; these data have {self.X.shape[1]}.")
        return self.standardisation.kernel_in_data_units(self.best.kernel)

    @property
    def noise(self) -> float:
        return self.standardisation.noise_in_data_units(self.best.noise)

    @property
    def mean(self) -> float:
        return float(self.standardisation.y_shift)

    def best_by_depth(self) -> list[Fitted]:
        """The best fitted candidate of each depth, in order of depth."""
        depths = sorted({f.depth for f in self.trace})
        return [max((f for f in self.trace if f.depth == d), key=lambda f: f.score) for d in depths]

    def to_json(self) -> dict[str, Any]:
        s = self.standardisation
        one_column = self.X.shape[1] == 1
        return _finite(
            {
                "best": self.best.expression,
                "score": self.score,
                "hyperparameters_data_units": hyperparameters(self.kernel) if one_column else None,
                "noise_data_units": self.noise,
                "mean_data_units": self.mean,
                "standardisation": {
                    "x_shift": np.asarray(s.x_shift).tolist(),
                    "x_scale": np.asarray(s.x_scale).tolist(),
                    "y_shift": s.y_shift,
                    "y_scale": s.y_scale,
                },
                "options": self.options,
                "wall_s": self.wall_s,
                "interrupted": self.interrupted,
                "trace": [f.to_json() for f in self.trace],
            }
        )

    def write_json(self, path: "str | Path") -> Path:
        """The result as JSON, written atomically (nothing half-written on failure)."""
        path = Path(path)
        atomic_write_text(path, json.dumps(self.to_json(), indent=1))
        return path
