"""Test configuration, before jax loads: quiet XLA logging, float64, a project-local compile cache, XLA at -O1."""

import os
from pathlib import Path

os.environ.setdefault("ZOO_JAX_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".jax_cache"))
# A cold suite is mostly compilation (three quarters of a slow test's time on a fresh cache), and XLA's LLVM
# backend at -O1 compiles the suite's programs in less time than at its default -O2 (pytest -q on 2 cores, fresh
# cache: 680 s -> 577-617 s, docs/performance.md#compiler-effort). The programs are the same up to rounding (every check
# passes under both levels, none widened for it); set XLA_FLAGS yourself to run the suite at another level.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_backend_optimization_level=1".strip()

import zoo  # noqa: E402,F401  (configures jax)
from inference.core import cache  # noqa: E402

# Tests that call an engine twice assert that the second call compiles nothing; a release of every kept program
# (inference.core.cache) between the two calls would make them recompile. The suite's workers ran within the
# mapping limit before releases existed, so here they release only past the limit itself, that is never;
# tests/test_program_cache.py checks the release with a faked limit.
cache.MAPPING_SHARE = 1.0
