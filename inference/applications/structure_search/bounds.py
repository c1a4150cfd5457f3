"""Which fitted hyperparameters a search accepts: bounds on the periodic kernels tied to the data's sampling interval
(docs/sources/duvenaud.md#period-bounds).

On gridded inputs the marginal likelihood of a periodic kernel has aliasing optima: a period shorter than a few
sampling intervals, or a within-period lengthscale far below the sampling interval, gives a kernel that is ~0 except
at lags that happen to be near whole multiples of the period, i.e. a lattice of correlations the data cannot resolve
(airline, depth 2: Per with period 0.40 years and lengthscale 7e-6 on a monthly grid). gpss-research, the code behind
the thesis's experiments, discarded every fitted model whose period lay outside [3 x the smallest input spacing,
the input range / 5] ("a 0-1 prior"); we keep its lower bound, take range / 2 as the upper one (two whole periods
observed, the upper end of our period draws), and add the aliasing bound on the lengthscale:

- Per, ZPer, Cos: 3 dx_min <= period <= R / 2, dx_min the smallest spacing of the sorted distinct inputs of the
  kernel's column and R its range;
- Per, ZPer: lengthscale x period >= 2 dx_min. The spectrum of exp(-2 sin^2(pi tau / p) / l^2) (and of ZPer, a
  function of cos(2 pi tau / p) / l^2) puts weight I_k(1 / l^2) on the harmonic k / p, a bell in k of width ~1 / l
  for small l; the bound keeps that width, 1 / (l p) in frequency, within the Nyquist frequency 1 / (2 dx_min).
  A weekly profile on daily data (p = 7 dx) stays expressible: at l p = 2 dx adjacent days correlate 0.01.

gpss-research discarded a model whose fit broke a bound. We keep every restart: one whose optimum breaks a bound
is projected back onto the admissible region (``PeriodBounds.project``: the period clipped into its interval, then
the lengthscale raised to 2 dx_min / period) and its log likelihood is evaluated again there (``fit.py``), so a
candidate is never lost because its optimiser wandered off; the candidate keeps its best restart, projected or not,
and fails (recorded with the reason, score -inf) only when no restart has a finite likelihood.
"""

import dataclasses

import numpy as np

from zoo.kernels.base import ActiveDims, Kernel

__all__ = [
    "MAX_PERIOD_FRACTION",
    "MIN_LENGTHSCALE_PERIOD_SPACINGS",
    "MIN_PERIOD_SPACINGS",
    "PERIODIC",
    "PeriodBounds",
    "WITH_LENGTHSCALE",
    "best_admissible",
]

PERIODIC = ("Per", "ZPer", "Cos")
WITH_LENGTHSCALE = ("Per", "ZPer")
MIN_PERIOD_SPACINGS = 3.0  # gpss-research's period_heuristic = 3 (type "min") in its extrapolation experiments
MAX_PERIOD_FRACTION = 0.5  # of the input range: two whole periods observed
MIN_LENGTHSCALE_PERIOD_SPACINGS = 2.0  # l x p >= 2 dx_min: the harmonics' spread within Nyquist


@dataclasses.dataclass(frozen=True)
class PeriodBounds:
    """Per input column (D,): the smallest spacing of the distinct inputs and the range."""

    spacing: np.ndarray
    range: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray) -> "PeriodBounds":
        """From inputs X (n, D) (in the units the kernels will be fitted in)."""
        X = np.asarray(X, float)
        X = X[:, None] if X.ndim == 1 else X
        spacing = []
        for column in X.T:
            steps = np.diff(np.unique(column))
            spacing.append(steps.min() if steps.size else np.inf)
        return cls(np.asarray(spacing), np.ptp(X, 0))

    def violations(self, kernel: Kernel) -> list[str]:
        """What in ``kernel`` breaks a bound (module docstring), one line each; empty when it is admissible."""
        found: list[str] = []
        self._walk(kernel, tuple(range(len(self.spacing))), found)
        return found

    def admissible(self, kernel: Kernel) -> bool:
        return not self.violations(kernel)

    def project(self, kernel: Kernel) -> Kernel:
        """The nearest admissible kernel in each periodic node's own coordinates (module docstring); other nodes
        and admissible values unchanged."""
        return self._project(kernel, tuple(range(len(self.spacing))))

    def _project(self, kernel: Kernel, columns: tuple[int, ...]) -> Kernel:
        if isinstance(kernel, ActiveDims):
            columns = tuple(columns[d] for d in kernel.dims if d < len(columns))
        updates = {name: self._project(getattr(kernel, name), columns) for name in kernel.CHILDREN}
        if kernel.SYMBOL in PERIODIC and columns:
            dx, R = float(np.min(self.spacing[list(columns)])), float(np.max(self.range[list(columns)]))
            period = float(np.clip(np.asarray(kernel.period), MIN_PERIOD_SPACINGS * dx, MAX_PERIOD_FRACTION * R))
            updates["period"] = period
            if kernel.SYMBOL in WITH_LENGTHSCALE:
                floor = MIN_LENGTHSCALE_PERIOD_SPACINGS * dx / period * (1 + 1e-9)  # on the admissible side
                updates["lengthscale"] = np.maximum(np.asarray(kernel.lengthscale, float), floor)
        return dataclasses.replace(kernel, **updates) if updates else kernel

    def _walk(self, kernel: Kernel, columns: tuple[int, ...], found: list[str]) -> None:
        if isinstance(kernel, ActiveDims):
            columns = tuple(columns[d] for d in kernel.dims if d < len(columns))
        if kernel.SYMBOL in PERIODIC and columns:
            # A kernel over several columns is held to the most permissive of them (the grammar puts one per column).
            dx, R = float(np.min(self.spacing[list(columns)])), float(np.max(self.range[list(columns)]))
            period = float(np.asarray(kernel.period))
            low, high = MIN_PERIOD_SPACINGS * dx, MAX_PERIOD_FRACTION * R
            if not low <= period <= high:
                found.append(f"{kernel.SYMBOL} period {period:.3g} outside [{low:.3g}, {high:.3g}]")
            if kernel.SYMBOL in WITH_LENGTHSCALE:
                lengthscale = float(np.min(np.asarray(kernel.lengthscale)))
                if lengthscale * period < MIN_LENGTHSCALE_PERIOD_SPACINGS * dx:
                    found.append(
                        f"{kernel.SYMBOL} lengthscale {lengthscale:.3g} x period {period:.3g} below "
                        f"{MIN_LENGTHSCALE_PERIOD_SPACINGS:g} x spacing {dx:.3g} (aliasing)"
                    )
        for child in kernel.CHILDREN:
            self._walk(getattr(kernel, child), columns, found)


def best_admissible(log_likelihoods, kernels: list[Kernel], bounds: PeriodBounds | None) -> tuple[int | None, list]:
    """(index of the restart with the highest finite log likelihood among the admissible ones or None, the
    violations of each restart (a list of lines each)). log_likelihoods (restarts,); kernels one per restart."""
    logliks = np.asarray(log_likelihoods, float)
    violations = [[] if bounds is None else bounds.violations(k) for k in kernels]
    ok = np.isfinite(logliks) & np.array([not v for v in violations])
    if not ok.any():
        return None, violations
    return int(np.argmax(np.where(ok, logliks, -np.inf))), violations
