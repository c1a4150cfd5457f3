"""Starting values of the hyperparameters a grammar operator introduces, drawn on the data's scales
(Duvenaud 2014, sec. 3.3: "newly introduced parameters are initialised randomly"; the distributions are our
default, docs/sources/duvenaud.md#search-choices).

On standardised data (every input column and y with mean 0, sd 1), with R the input range and dx the median
spacing of the sorted distinct inputs of a column:

- SE, RQ, Matern lengthscales: log-uniform on [2 dx, R];
- Per, ZPer, Cos periods: log-uniform on [3 dx, R / 2], the admissible range of ``bounds.py`` on a regular grid;
  their (unitless) lengthscales LogNormal(0, 0.5);
- variances (every base kernel's output scale, C, WN): LogNormal(0, 1) x Var(y) = LogNormal(0, 1);
- RQ alpha LogNormal(0, 1); Lin: variance LogNormal(0, 1) (Var(y) / Var(x)), location Normal(0, 1) (the inputs'
  mean and sd), offset 0.1 x LogNormal(0, 1) (offset 0 would be outside its LogNormal prior's support);
- CP: location uniform on the middle 80 % of the inputs, width R / 20 x LogNormal(0, 0.5);
- CW: duration log-uniform on [R / 20, R / 3], start uniform on [min x, max x - duration], width R / 50.
"""

import dataclasses
from typing import Any

import numpy as np

from zoo.kernels.base import Constant, Kernel
from zoo.kernels.nonstationary import Changepoint, ChangeWindow
from zoo.structure.grammar import Factory

__all__ = ["DataScaledFactory", "Scales"]


@dataclasses.dataclass(frozen=True)
class Scales:
    """Per input column of the standardised inputs: range (D,), median spacing (D,), min (D,), max (D,)."""

    range: np.ndarray
    spacing: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray) -> "Scales":
        """From standardised inputs X (n, D)."""
        spacing = []
        for column in X.T:
            steps = np.diff(np.unique(column))
            spacing.append(np.median(steps) if steps.size else 1.0)
        return cls(np.ptp(X, 0), np.asarray(spacing), X.min(0), X.max(0))


@dataclasses.dataclass(frozen=True)
class DataScaledFactory(Factory):
    """A ``zoo.structure.grammar.Factory`` whose new kernels start from random data-scaled values (module docstring).
    ``rng`` is a NumPy Generator (its state advances with every kernel made)."""

    scales: Scales = None
    rng: Any = None

    def _column(self, dim: int | None) -> int:
        return 0 if dim is None else dim

    def _log_uniform(self, low: float, high: float) -> float:
        low, high = max(low, 1e-6), max(high, low * 1.0001)
        return float(np.exp(self.rng.uniform(np.log(low), np.log(high))))

    def _lognormal(self, scale: float, sd: float = 1.0) -> float:
        return float(scale * np.exp(sd * self.rng.normal()))

    def base(self, cls: type, dim: int | None) -> Kernel:
        d = self._column(dim)
        R, dx = float(self.scales.range[d]), float(self.scales.spacing[d])
        values = {}
        for name in cls.PARAMS:
            if name == "variance":
                values[name] = self._lognormal(1.0)
            elif name == "lengthscale" and cls.SYMBOL in ("Per", "ZPer"):
                values[name] = self._lognormal(1.0, 0.5)
            elif name == "lengthscale":
                values[name] = self._log_uniform(2 * dx, R)
            elif name == "period":
                values[name] = self._log_uniform(3 * dx, R / 2)  # docs/sources/duvenaud.md#period-bounds
            elif name == "alpha":
                values[name] = self._lognormal(1.0)
            elif name == "location":
                values[name] = float(self.rng.normal())
            elif name == "offset":
                values[name] = self._lognormal(0.1)
        kernel = cls(**values)
        return kernel if dim is None else kernel.on(dim)

    def constant(self) -> Kernel:
        return Constant(self._lognormal(1.0))

    def changepoint(self, first: Kernel, second: Kernel) -> Kernel:
        low, high, R = float(self.scales.low[0]), float(self.scales.high[0]), float(self.scales.range[0])
        location = float(self.rng.uniform(low + 0.1 * R, high - 0.1 * R))
        return Changepoint(first, second, location=location, width=self._lognormal(R / 20, 0.5))

    def window(self, inside: Kernel, outside: Kernel) -> Kernel:
        low, high, R = float(self.scales.low[0]), float(self.scales.high[0]), float(self.scales.range[0])
        duration = self._log_uniform(R / 20, R / 3)
        start = float(self.rng.uniform(low, max(low, high - duration)))
        return ChangeWindow(inside, outside, start=start, duration=duration, width=R / 50)
