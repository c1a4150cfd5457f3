"""The driver every engine and application stands on: ``run`` and the engine registry (``api``), shared engine
options (``options``), a model's program as engines see it (``program``), chains (``chains``), bounded caches of
compiled runners and their release when memory mappings run short (``cache``), the Dask client (``cluster``), which
parameters a run holds fixed (``fixed``) and the time a run is expected to take (``progress``), and the parameter
path a learning engine records (``parameter_path``). It imports no engine and no application."""

from inference.core import cache, fixed, options, parameter_path, progress
from inference.core.api import (
    EngineOutput,
    Timer,
    engine_names,
    engines_for,
    fits,
    get_engine,
    package_versions,
    register_engine,
    run,
    validate_options,
)
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.cluster import dask_client
from inference.core.program import conditioned_program, latent_sites, observed_args, resolve_params

__all__ = [
    "EngineOutput",
    "Timer",
    "cache",
    "conditioned_program",
    "dask_client",
    "engine_names",
    "engines_for",
    "fits",
    "fixed",
    "get_engine",
    "latent_sites",
    "observed_args",
    "options",
    "package_versions",
    "parameter_path",
    "progress",
    "program_cache",
    "register_engine",
    "resolve_params",
    "run",
    "validate_options",
    "vmapped_chains",
]
