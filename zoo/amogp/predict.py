"""What a figure reads from an AMO-GP fit: the model from point estimates, per-output predictives, and the learnt
alignments, latent functions and warpings with their uncertainty (Kaiser 2021, Figs 4.2-4.3).

Each function of one layer evaluates it at deterministic inputs, so its band is the layer's own posterior
(k~ + |R^T a|^2, ``sampling``'s marginal), not a propagated one.

Every function here is one compiled program per model structure and input shape (the model is a pytree): run op by
op, the predictions of a figure cost more compilation than the fit (paper_figures/kaiser_amogp_full_runs.md).
"""

from typing import Any

import jax
import jax.numpy as jnp

from zoo.amogp import bound, sampling
from zoo.amogp.layers import AMOGP
from zoo.amogp.program import Q_SCALE_FLOOR, Structure, model_from_values

Array = Any


def model_from(point_estimates, structure: Structure, dsvi: bool = False) -> AMOGP:
    """The AMOGP of one chain of a result's ``point_estimates`` (``nvc``, or ``svi`` with the DSVI guide)."""
    values = {k: jnp.asarray(v.values[0]) for k, v in point_estimates.items()}
    return model_from_values(values, structure, q_floor=Q_SCALE_FLOOR if dsvi else 0.0)


# the latent y_d's analytic predictive (noise-free): (model, X (n, K), out (n,) int, propagation) -> mean, var (n,)
latent_predictive = jax.jit(bound.predict, static_argnames="propagation")
# the latent y_d's ancestral mixture (eq. 2.90): (model, X, out, key, num_samples) -> means, variances (S, n)
sampled_latent = jax.jit(sampling.sample_predict, static_argnames="num_samples")
_se_marginal = jax.jit(sampling.se_marginal)
_cp_marginal = jax.jit(sampling.cp_marginal)


def alignment(model: AMOGP, d: int, x: Array) -> tuple[Array, Array]:
    """a_d at inputs x (n,): mean, var (n,); the identity (var 0) for a fixed alignment."""
    layer = model.alignments[d]
    if layer is None:
        return x, jnp.zeros_like(x)
    mean, var = _se_marginal(layer, x[:, None])
    return mean[:, 0], var[:, 0]


def warping(model: AMOGP, d: int, f: Array) -> tuple[Array, Array]:
    """g_d at latent values f (n,): mean, var (n,); the identity for a fixed warping."""
    layer = model.warpings[d]
    if layer is None:
        return f, jnp.zeros_like(f)
    mean, var = _se_marginal(layer, f[:, None])
    return mean[:, 0], var[:, 0]


def latent(model: AMOGP, d: int, a: Array) -> tuple[Array, Array]:
    """The shared layer's output d at aligned inputs a (n,): mean, var (n,)."""
    return _cp_marginal(model.shared, a[:, None], jnp.full(a.shape, d))


def predictive(model: AMOGP, X: Array, out: Array, propagation: str = "nvc") -> tuple[Array, Array]:
    """Analytic predictive of the noisy y: mean, var (n,) (the latent's plus the output's likelihood noise)."""
    out = jnp.asarray(out).astype(int)
    mean, var = latent_predictive(model, jnp.asarray(X), out, propagation)
    return mean, var + model.noise[out]


def sampled_predictive(model: AMOGP, X: Array, out: Array, key: Array, num_samples: int) -> tuple[Array, Array]:
    """Ancestral mixture (eq. 2.90) for the noisy y: component means, variances (S, n), likelihood noise added."""
    out = jnp.asarray(out).astype(int)
    means, variances = sampled_latent(model, jnp.asarray(X), out, key, num_samples)
    return means, variances + model.noise[out]
