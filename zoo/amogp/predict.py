"""What a figure reads from an AMO-GP fit: the model from point estimates, per-output predictives, and the learnt
alignments, latent functions and warpings with their uncertainty (Kaiser 2021, Figs 4.2-4.3).

Each function of one layer evaluates it at deterministic inputs, so its band is the layer's own posterior
(k~ + |R^T a|^2, ``sampling``'s marginal), not a propagated one.
"""

from typing import Any

import jax.numpy as jnp

from zoo.amogp import bound, sampling
from zoo.amogp.layers import AMOGP
from zoo.amogp.program import Q_SCALE_FLOOR, Structure, model_from_values

Array = Any


def model_from(point_estimates, structure: Structure, dsvi: bool = False) -> AMOGP:
    """The AMOGP of one chain of a result's ``point_estimates`` (``nvc``, or ``svi`` with the DSVI guide)."""
    values = {k: jnp.asarray(v.values[0]) for k, v in point_estimates.items()}
    return model_from_values(values, structure, q_floor=Q_SCALE_FLOOR if dsvi else 0.0)


def alignment(model: AMOGP, d: int, x: Array) -> tuple[Array, Array]:
    """a_d at inputs x (n,): mean, var (n,); the identity (var 0) for a fixed alignment."""
    layer = model.alignments[d]
    if layer is None:
        return x, jnp.zeros_like(x)
    mean, var = sampling.se_marginal(layer, x[:, None])
    return mean[:, 0], var[:, 0]


def warping(model: AMOGP, d: int, f: Array) -> tuple[Array, Array]:
    """g_d at latent values f (n,): mean, var (n,); the identity for a fixed warping."""
    layer = model.warpings[d]
    if layer is None:
        return f, jnp.zeros_like(f)
    mean, var = sampling.se_marginal(layer, f[:, None])
    return mean[:, 0], var[:, 0]


def latent(model: AMOGP, d: int, a: Array) -> tuple[Array, Array]:
    """The shared layer's output d at aligned inputs a (n,): mean, var (n,)."""
    return sampling.cp_marginal(model.shared, a[:, None], jnp.full(a.shape, d))


def predictive(model: AMOGP, X: Array, out: Array, propagation: str = "nvc") -> tuple[Array, Array]:
    """Analytic predictive of the noisy y: mean, var (n,) (the latent's plus the output's likelihood noise)."""
    out = jnp.asarray(out).astype(int)
    mean, var = bound.predict(model, jnp.asarray(X), out, propagation)
    return mean, var + model.noise[out]


def sampled_predictive(model: AMOGP, X: Array, out: Array, key: Array, num_samples: int) -> tuple[Array, Array]:
    """Ancestral mixture (eq. 2.90) for the noisy y: component means, variances (S, n), likelihood noise added."""
    out = jnp.asarray(out).astype(int)
    means, variances = sampling.sample_predict(model, jnp.asarray(X), out, key, num_samples)
    return means, variances + model.noise[out]
