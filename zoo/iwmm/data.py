"""The data sets of Duvenaud 2014, sec. 7.4 (Table 7.1): four synthetic sets recreated from their descriptions and
iris and wine from scikit-learn (offline). Constants the thesis does not state are this project's choices,
docs/sources/duvenaud.md#iwmm-data.

Every loader returns (Y (N, D) float64, labels (N,) int) in the generator's units; ``standardise`` maps columns to
zero mean and unit variance with a training set's statistics (docs/sources/duvenaud.md#iwmm-defaults).
"""

import numpy as np

from zoo.errors import DataError

SYNTHETIC = ("2-curve", "3-semi", "2-circle", "pinwheel")
REAL = ("iris", "wine")
NAMES = SYNTHETIC + REAL


def two_curve(rng: np.random.Generator, per_curve: int = 50, noise: float = 0.03):
    """Two nested parabolic arcs y = 1.5 t^2 and y = 1.5 t^2 + 0.6, t ~ U(-1, 1), 50 points each (100 in all,
    Table 7.1; the text's "100 in each": docs/sources/duvenaud.md#iwmm-errata)."""
    t = rng.uniform(-1.0, 1.0, (2, per_curve))
    arcs = [np.stack([t[c], 1.5 * t[c] ** 2 + 0.6 * c], axis=1) for c in range(2)]
    return _labelled(rng, arcs, noise)


# Centre-to-centre x spacing of neighbouring 3-semi arcs. make_moons' spacing 1 makes the two upper arcs of a chain of
# three share the end point (1, 0); 1.2 leaves every pair of noiseless arcs >= 0.40 apart (8 noise sds), close to
# make_moons' own 0.5 between its two arcs (docs/sources/duvenaud.md#iwmm-data).
SEMI_SPACING = 1.2


def three_semi(rng: np.random.Generator, per_semi: int = 100, noise: float = 0.05, spacing: float = SEMI_SPACING):
    """Three interleaved unit half-circles, make_moons extended to three: upper centred at (0, 0), lower at
    (spacing, 0.5), upper at (2 spacing, 0); 100 points each, uniform in angle. The thesis says only "three
    non-linearly-separable clusters" (sec. 7.5.1; N = 300, C = 3 in Table 7.1): docs/sources/duvenaud.md#iwmm-data."""
    theta = rng.uniform(0.0, np.pi, (3, per_semi))
    semis = [
        np.stack([np.cos(theta[0]), np.sin(theta[0])], axis=1),
        np.stack([spacing - np.cos(theta[1]), 0.5 - np.sin(theta[1])], axis=1),
        np.stack([2.0 * spacing + np.cos(theta[2]), np.sin(theta[2])], axis=1),
    ]
    return _labelled(rng, semis, noise)


def two_circle(rng: np.random.Generator, per_circle: int = 50, noise: float = 0.05):
    """Two concentric circles of radii 1 and 0.3, 50 points each, uniform in angle."""
    theta = rng.uniform(0.0, 2.0 * np.pi, (2, per_circle))
    circles = [radius * np.stack([np.cos(a), np.sin(a)], axis=1) for radius, a in zip((1.0, 0.3), theta, strict=True)]
    return _labelled(rng, circles, noise)


def pinwheel(
    rng: np.random.Generator,
    radial_std: float = 0.3,
    tangential_std: float = 0.05,
    num_classes: int = 5,
    per_class: int = 50,
    rate: float = 0.25,
):
    """Adams & Ghahramani's pinwheel (docs/sources/duvenaud.md#iwmm-data): Gaussian features with radial and
    tangential scales, the radial one shifted by 1, each class rotated by
    2 pi c / C + rate exp(radial feature). 5 arms x 50 = 250 points."""
    features = rng.normal(size=(num_classes * per_class, 2)) * np.array([radial_std, tangential_std])
    features[:, 0] += 1.0
    labels = np.repeat(np.arange(num_classes), per_class)
    angles = 2.0 * np.pi * labels / num_classes + rate * np.exp(features[:, 0])
    cos, sin = np.cos(angles), np.sin(angles)
    rotations = np.stack([np.stack([cos, -sin], -1), np.stack([sin, cos], -1)], -2)  # (N, 2, 2)
    return np.einsum("nij,nj->ni", rotations, features), labels


def _labelled(rng, groups, noise):
    Y = np.concatenate(groups) + noise * rng.normal(size=(sum(len(g) for g in groups), 2))
    labels = np.concatenate([np.full(len(g), c) for c, g in enumerate(groups)])
    return Y, labels


def load(name: str, seed: int = 0):
    """(Y, labels) of a Table 7.1 data set; synthetic sets are drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    if name == "2-curve":
        return two_curve(rng)
    if name == "3-semi":
        return three_semi(rng)
    if name == "2-circle":
        return two_circle(rng)
    if name == "pinwheel":
        return pinwheel(rng)
    if name in REAL:
        from sklearn import datasets  # ships iris and wine inside the wheel

        bunch = datasets.load_iris() if name == "iris" else datasets.load_wine()
        return np.asarray(bunch.data, dtype=float), np.asarray(bunch.target)
    raise DataError(f"unknown iWMM data set {name!r}; known: {', '.join(NAMES)}")


def standardise(Y_train, *others):
    """Columns of Y_train (N, D) to zero mean and unit variance; ``others`` mapped by the same affine map.

    Raises DataError for a constant column (its scale is zero: the latent mixture and the GP would see no data)."""
    Y_train = np.asarray(Y_train, dtype=float)
    scale = Y_train.std(axis=0)
    constant = np.flatnonzero(scale <= 1e-12 * np.maximum(1.0, np.abs(Y_train).max(axis=0)))
    if constant.size:
        raise DataError(f"iWMM data: column(s) {constant.tolist()} of Y are constant; drop them before fitting")
    mean = Y_train.mean(axis=0)
    return tuple((np.asarray(Y, dtype=float) - mean) / scale for Y in (Y_train, *others))


def folds(num_points: int, num_folds: int, seed: int = 0) -> list[np.ndarray]:
    """Test indices of ``num_folds``-fold cross-validation (sec. 7.4: ten folds), a random permutation split."""
    return np.array_split(np.random.default_rng(seed).permutation(num_points), num_folds)
