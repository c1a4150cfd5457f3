"""Test configuration: quiet XLA logging, float64 and a project-local compilation cache before jax loads."""

import os
from pathlib import Path

os.environ.setdefault("ZOO_JAX_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".jax_cache"))

import zoo  # noqa: E402,F401  (configures jax)
from inference.core import cache  # noqa: E402

# Tests that call an engine twice assert that the second call compiles nothing; a release of every kept program
# (inference.core.cache) between the two calls would make them recompile. The suite's workers ran within the
# mapping limit before releases existed, so here they release only past the limit itself, that is never;
# tests/test_program_cache.py checks the release with a faked limit.
cache.MAPPING_SHARE = 1.0
