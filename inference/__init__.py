"""Inference engines for the zoo's models; every result is ArviZ InferenceData.

``inference.run(model, data, engine="nuts", seed=0, **options)``; ``engine_names()`` lists engines. ``run`` is the
driver (``inference.core.api.run``) after the preparation steps a model declares
(``inference.applications.preparation``).
"""

import zoo  # noqa: F401  (float64 and the compilation cache before any engine traces)

# isort: split
from inference.results import diagnostics  # noqa: F401  (imports ArviZ quietly, before anything else does)

# isort: split
from inference import gaussian, mcmc, optimisation, particles  # noqa: F401  (register the engines)
from inference.applications.preparation import run
from inference.core.api import EngineOutput, engine_names, engines_for, get_engine, register_engine

__all__ = ["EngineOutput", "engine_names", "engines_for", "get_engine", "register_engine", "run"]
