"""Mauna Loa atmospheric CO2 as ``statsmodels`` ships it (``statsmodels.datasets.co2``: weekly flask averages,
1958-03-29 to 2001-12-29, Keeling & Whorf, public domain; inside the wheel, read offline), resampled to monthly
means: the series of Duvenaud 2014 Figs 3.3-3.4 (docs/sources/duvenaud.md#mauna-loa-data).

Months with no weekly value (5 of 526) are left out; x is the month's start in decimal years, year + (month - 1) / 12.
"""

import numpy as np

from zoo.data.tsdl import Series


def monthly() -> tuple[np.ndarray, np.ndarray]:
    """(x (n,) decimal years, strictly increasing; y (n,) ppm), monthly means of the weekly record."""
    from statsmodels.datasets import co2  # heavy import, only when the data are asked for

    weekly = co2.load_pandas().data["co2"]
    means = weekly.resample("MS").mean().dropna()
    x = means.index.year.to_numpy() + (means.index.month.to_numpy() - 1) / 12.0
    return x.astype(float), means.to_numpy(dtype=float)


def chronological_split(train_fraction: float = 0.9) -> Series:
    """The first ``train_fraction`` of the months to train on, the rest to test (the 90 / 10 split of the thesis's
    extrapolation benchmark, sec. 3.8.2)."""
    x, y = monthly()
    cut = int(round(train_fraction * len(x)))
    return Series(x[:cut], y[:cut], x[cut:], y[cut:])
