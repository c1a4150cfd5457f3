"""Structured Gaussian-process models as NumPyro programs.

Importing ``zoo`` enables float64 and the persistent compilation cache (see ``zoo.config``) and registers
every model family. ``zoo.get(name)`` returns a ``ModelSpec``; ``zoo.names()`` lists them.
"""

from zoo.config import configure_jax

configure_jax()

from zoo import (  # noqa: E402,F401  (registers the models)
    additive,
    amogp,
    dagp,
    deep_gp,
    deep_linear,
    gpssm,
    heteroscedastic,
    iwmm,
    latent_input,
    lgssm,
    multioutput,
    nigp,
    nigp_multi,
    nonconjugate,
    nvc,
    rbf_network,
    regression,
    sparse,
    sparse_nonconjugate,
    variational_input,
)
from zoo.programs import model  # noqa: E402
from zoo.registry import Dataset, ModelSpec, get, names, register  # noqa: E402
from zoo.structure import model as _structure_model  # noqa: E402,F401  (gp/structure)

__all__ = ["Dataset", "ModelSpec", "get", "model", "names", "register"]
