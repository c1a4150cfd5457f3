"""The parameter path of a learning engine: its learned parameters at every iteration, kept beside the objective
traces (``EngineOutput.traces``, the result's ``optimization`` group) as ``path_<site>``, each (chain, step,
*site_shape) and constrained. A figure or application evaluates whatever score it needs along the run from these
snapshots (e.g. a test log probability per iteration, McHutchon Figs 3.13, 3.27, 3.29, 3.36), so no engine takes a
callback or knows about test data. Which iteration a snapshot belongs to (before or after the step whose objective is
recorded at the same index) is stated by each engine's docstring. An engine that keeps only every k-th iterate
(``svi``'s ``record_path_every``, so that a long run of a large model stays small) records ``thinned_iterations``; its
path then has its own length, and the result's ``optimization`` group its own step dimension for it."""

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["PREFIX", "as_traces", "from_result", "num_steps", "snapshot", "thinned_iterations"]

PREFIX = "path_"


def as_traces(path: Mapping[str, Any]) -> dict[str, Any]:
    """{site: (chain, step, ...)} -> the trace entries {``path_<site>``: the same arrays}."""
    return {PREFIX + name: value for name, value in path.items()}


def from_result(idata, chain: int = 0) -> dict[str, np.ndarray]:
    """The recorded path of one chain: {site: (step, ...)}; empty when the engine records none."""
    if "optimization" not in idata.groups():
        return {}
    traces = idata.optimization
    return {
        str(name)[len(PREFIX) :]: np.asarray(traces[name].values[chain])
        for name in traces.data_vars
        if str(name).startswith(PREFIX)
    }


def num_steps(path: Mapping[str, np.ndarray]) -> int:
    """The number of snapshots in a path of ``from_result``."""
    return len(next(iter(path.values())))


def snapshot(path: Mapping[str, np.ndarray], step: int) -> dict[str, np.ndarray]:
    """The parameters at one step of a path of ``from_result``."""
    return {name: values[step] for name, values in path.items()}


def thinned_iterations(total: int, every: int) -> np.ndarray:
    """The iterations a path thinned to every ``every``-th iterate holds: 0, every, 2 every, ... (below ``total``),
    then ``total`` (the last iterate, the run's result). (S,) with S = ceil(total / every) + 1."""
    return np.append(np.arange(0, total, every), total)
