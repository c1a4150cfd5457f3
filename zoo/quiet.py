"""Keep XLA's C++ log lines off the terminal whatever the import order (docs/architecture.md#performance).

jaxlib 0.9 logs two C++ errors each time it loads a CPU executable from the persistent compilation cache, about
tuning flags (``+prefer-no-gather``, ``+prefer-no-scatter``) it recorded as machine features that the host does not
name; the executables are fine. ``zoo/config.py`` sets ``TF_CPP_MIN_LOG_LEVEL=3`` (unless the user set it), which C++
logging reads only when jaxlib loads: a script that imports ``jax`` before ``zoo`` got the lines anyway (84 in one
short script, issue 39). ``quiet_xla_logging`` applies the same level to the already loaded library through jaxlib's
own setter (what ``jax.config.update("jax_logging_level", ...)`` calls), so the order no longer matters.

``import jax`` itself sets ``TF_CPP_MIN_LOG_LEVEL=1`` when it is unset, so a 1 found here is taken for jax's default,
not a choice: to see XLA's warnings and errors, set ``TF_CPP_MIN_LOG_LEVEL=0`` before starting Python.
"""

import os

JAX_DEFAULT = "1"  # what jax/__init__.py sets when the variable is unset


def quiet_xla_logging() -> bool:
    """Set absl's C++ minimum log level to ``$TF_CPP_MIN_LOG_LEVEL`` in the loaded jaxlib; False when it cannot."""
    try:
        chosen = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")
        level = 3 if chosen.strip() in {"", JAX_DEFAULT} else int(chosen)
        from jax._src.lib import utils
    except (ValueError, ImportError):
        return False
    setter = getattr(utils, "absl_set_min_log_level", None)  # private: absent in some jaxlib, then nothing changes
    if setter is None:
        return False
    setter(level)
    return True
