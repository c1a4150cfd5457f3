"""Series of the ABCD extrapolation benchmark shipped with the package (``zoo/data/tsdl_9010/``, MIT licence beside
the files): each a chronological 90 / 10 split of (time in decimal years, value)."""

from pathlib import Path
from typing import NamedTuple

import numpy as np

from zoo.errors import DataError

FOLDER = Path(__file__).resolve().parent / "tsdl_9010"


class Series(NamedTuple):
    x_train: np.ndarray  # (n,) decimal years, increasing
    y_train: np.ndarray  # (n,)
    x_test: np.ndarray  # (m,) after every training input
    y_test: np.ndarray  # (m,)


def names() -> list[str]:
    return sorted(p.name[: -len("-train.csv")] for p in FOLDER.glob("*-train.csv"))


def load(name: str) -> Series:
    """The train and test parts of series ``name`` (e.g. "01-airline")."""
    if name not in names():
        raise DataError(f"no series {name!r} in {FOLDER}; shipped: {names()}.")
    train, test = (np.loadtxt(FOLDER / f"{name}-{part}.csv", delimiter=",", ndmin=2) for part in ("train", "test"))
    return Series(train[:, 0], train[:, 1], test[:, 0], test[:, 1])
