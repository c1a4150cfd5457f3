"""Test configuration: quiet XLA logging, float64 and a project-local compilation cache before jax loads."""

import os
from pathlib import Path

os.environ.setdefault("ZOO_JAX_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".jax_cache"))

import zoo  # noqa: E402,F401  (configures jax)
