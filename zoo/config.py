"""Process-wide JAX settings the zoo relies on, applied once on import of `zoo`.

* float64: GP algebra (Cholesky of kernel matrices) is not trustworthy in float32.
* the BLAS threads behind JAX's CPU linear algebra (``ZOO_CPU_THREADS``, default ``auto``: ``zoo.cpu_threads``).
* XLA's C++ log level, also when jax was imported before ``zoo`` (``zoo.quiet``).
* a persistent compilation cache: on CPU compile time dominates short runs; NumPyro compiles many small
  functions, so the minimum compile time for caching is 0. Directory: ``$ZOO_JAX_CACHE_DIR`` or the user
  cache (``~/.cache/structured-gp-zoo/jax``); set ``ZOO_JAX_CACHE_DIR=off`` to disable.
"""

import os
from pathlib import Path

# XLA logs an error each time it loads a CPU executable from the persistent cache, about machine features
# it records but the host does not name (seen with jaxlib 0.9.2 on the machine that compiled it). Quiet
# C++ logging below errors that matter, unless the user asked otherwise; must precede jaxlib's import.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # noqa: E402

from zoo.cpu_threads import limit_blas_threads  # noqa: E402
from zoo.quiet import quiet_xla_logging  # noqa: E402

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "structured-gp-zoo" / "jax"


def configure_jax() -> None:
    jax.config.update("jax_enable_x64", True)
    limit_blas_threads()
    quiet_xla_logging()
    cache_dir = os.environ.get("ZOO_JAX_CACHE_DIR", str(DEFAULT_CACHE_DIR))
    if cache_dir.lower() in {"", "off", "none", "0"}:
        return
    jax.config.update("jax_compilation_cache_dir", cache_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
