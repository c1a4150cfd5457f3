"""Helpers the Duvenaud figure scripts share. Their ML-II fits of ``gp/regression`` with a kernel expression are
``inference.applications.structure_search.fit.fit_ml2`` (the structure search's own fit of one candidate)."""

import numpy as np

from inference.applications.structure_search.fit import FitOutcome
from zoo.kernels.priors import parametrised_nodes


def hyperparameters(fit: FitOutcome) -> dict[str, float]:
    """The fitted hyperparameters, named ``<symbol><node>_<name>`` in reading order as the sample sites are (ARD
    lengthscales one entry per input column), plus the noise variance."""
    values = {}
    for index, node in enumerate(parametrised_nodes(fit.kernel)):
        for param in node.PARAMS:
            value = np.atleast_1d(np.asarray(getattr(node, param), float))
            for d, v in enumerate(value):
                values[f"{node.SYMBOL.lower()}{index}_{param}" + (f"[{d}]" if value.size > 1 else "")] = float(v)
    values["noise"] = fit.noise
    return values
