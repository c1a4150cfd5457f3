"""The data a structure search accepts (greedy or SMC): one clear error before anything compiles."""

import numpy as np

from zoo.errors import DataError

__all__ = ["check_data"]


def check_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, D), y (n,)) as float arrays, or a ``DataError``: NaNs or infinities, mismatched lengths, and for a
    single input column (a time series) inputs that are not strictly increasing."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    X = X[:, None] if X.ndim == 1 else X
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise DataError(f"structure search needs X (n, D) and y (n,); got X {X.shape} and y {y.shape}.")
    for name, a in (("X", X), ("y", y)):
        bad = ~np.isfinite(a)
        if bad.any():
            rows = np.flatnonzero(bad.reshape(a.shape[0], -1).any(1))
            raise DataError(f"{name} has NaN or infinite values in rows {rows[:10].tolist()} (counted from 0).")
    if X.shape[1] == 1:
        steps = np.diff(X[:, 0])
        if np.any(steps <= 0):
            i = int(np.flatnonzero(steps <= 0)[0])
            kind = "duplicate" if steps[i] == 0 else "decreasing"
            raise DataError(
                f"the inputs of a series must be strictly increasing; rows {i} and {i + 1} are {kind} "
                f"({X[i, 0]!r}, {X[i + 1, 0]!r}). Sort the series and merge repeated inputs."
            )
    return X, y
