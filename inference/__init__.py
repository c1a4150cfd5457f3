"""Inference engines for the zoo's models; every result is ArviZ InferenceData.

``inference.run(model, data, engine="nuts", seed=0, **options)``; ``engine_names()`` lists engines.
"""

import zoo  # noqa: F401  (float64 and the compilation cache before any engine traces)
from inference import (  # noqa: F401  (register the engines)
    diagnostics,  # noqa: F401  (imports ArviZ quietly, before anything else does)
    exact,
    iwmm,
    kalman,
    ml2,
    moment_matching,
    nigp,
    numpyro_nuts,
    nuts,
    nvc,
    particle_em,
    pf,
    pgas,
    pmcmc,
    sampling_ep,
    smc,
    svi,
)
from inference.api import EngineOutput, engine_names, engines_for, get_engine, register_engine, run

__all__ = ["EngineOutput", "engine_names", "engines_for", "get_engine", "register_engine", "run"]
