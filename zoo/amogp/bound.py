"""AMO-GP's nested variational compression bound and its analytic predictive (Kaiser 2021, eqs. 4.6-4.9).

The bound (eq. 4.6, with the corrections of zoo/nvc.py: tr(Phi K^{-1}) and the last layer's S-trace, and the
identity-mean terms of ``layers``; docs/sources/kaiser.md#amogp-bound) is the NVC bound of D deep GPs that share the
CP layer, summed over the points (each point belongs to exactly one output):
    L = sum_n [ log N(y_n | mean_n, s2_y,d_n) - c_n / (2 s2_y,d_n) ]        (the last layer of point n's output)
        - sum_{n: a_d free} t_a,n / (2 s2_a,d_n) - sum_{n: g_d free} t_f,n / (2 s2_f)      (hidden layers)
        - sum_d KL(q(u_a,d)) - KL(q(u_f)) - sum_d KL(q(u_g,d))
with messages N(mean, s2 + s) between layers (the marginal of the variational distribution, eq. 2.80). The last
layer is g_d, or the CP layer for an output with the identity warping. With every alignment and warping the identity
the bound is the SVGP bound of the CP multi-output GP (tests/test_amogp.py).

``predict`` (eq. 2.85): per point of output d the latent y_d's analytic Gaussian, with propagation "nvc" (the
printed variance p^T S p, the variational marginal) or "moment" (the full moment match t + s at every layer).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp

from zoo.amogp.layers import AMOGP, cp_moments, kl_total, se_moments

Array = Any
LOG_2PI = jnp.log(2.0 * jnp.pi)


class Pass(NamedTuple):
    """One pass through the layers: per point the last layer's mean, spread (s or c) and full variance c (N,), and
    the hidden layers' penalty (scalar) and messages (alignment mean/var (N, K), CP mean/var (N,))."""

    mean: Array
    spread: Array
    c: Array
    penalty: Array
    align_mean: Array
    align_var: Array
    shared_mean: Array
    shared_var: Array


def forward(model: AMOGP, X: Array, out: Array, propagation: str = "nvc") -> Pass:
    """Messages through alignment -> CP -> warping for points X (N, K) of outputs ``out`` (N,) int."""
    masks = [out == d for d in range(len(model.alignments))]
    mu, var, penalty = X, jnp.zeros_like(X), jnp.zeros(())
    for d, layer in enumerate(model.alignments):
        if layer is None:
            continue
        mom = se_moments(layer, X, jnp.zeros_like(X))
        spread = mom.s if propagation == "nvc" else mom.c
        mask = masks[d][:, None]
        penalty = penalty - jnp.sum(jnp.where(mask, mom.t, 0.0)) / (2.0 * layer.noise)
        mu = jnp.where(mask, mom.mean, mu)
        var = jnp.where(mask, layer.noise + jnp.maximum(spread, 0.0), var)
    shared = cp_moments(model.shared, mu, var, out)
    warped = jnp.zeros(out.shape, dtype=bool)
    for d, layer in enumerate(model.warpings):
        if layer is not None:
            warped = warped | masks[d]
    penalty = penalty - jnp.sum(jnp.where(warped, shared.t, 0.0)) / (2.0 * model.shared.noise)
    f_spread = jnp.maximum(shared.s if propagation == "nvc" else shared.c, 0.0)
    f_mean, f_var = shared.mean, model.shared.noise + f_spread
    mean, spread, c = shared.mean, f_spread, shared.c
    for d, layer in enumerate(model.warpings):
        if layer is None:
            continue
        mom = se_moments(layer, f_mean[:, None], f_var[:, None])
        g_spread = jnp.maximum(mom.s if propagation == "nvc" else mom.c, 0.0)
        mean = jnp.where(masks[d], mom.mean[:, 0], mean)
        spread = jnp.where(masks[d], g_spread[:, 0], spread)
        c = jnp.where(masks[d], mom.c[:, 0], c)
    return Pass(mean, spread, c, penalty, mu, var, f_mean, f_var)


def nvc_bound(model: AMOGP, X: Array, out: Array, y: Array) -> Array:
    """The AMO-GP NVC bound (module docstring): scalar. X (N, K), out (N,) int, y (N,)."""
    parts = forward(model, X, out)
    noise = model.noise[out]
    fit = -0.5 * (LOG_2PI + jnp.log(noise) + (y - parts.mean) ** 2 / noise) - 0.5 * parts.c / noise
    return jnp.sum(fit) + parts.penalty - kl_total(model)


def bound_pieces(model: AMOGP, X: Array, out: Array) -> tuple[Array, Array, Array]:
    """(penalty - KL, mean (N,), c (N,)): L = sum_n log N(y_n | mean_n, s2) - sum c / (2 s2) + penalty."""
    parts = forward(model, X, out)
    return parts.penalty - kl_total(model), parts.mean, parts.c


def predict(model: AMOGP, X_new: Array, out_new: Array, propagation: str = "nvc") -> tuple[Array, Array]:
    """Analytic predictive of the latent y_d (noise-free) at X_new (n, K) for outputs out_new (n,): mean, var (n,)."""
    parts = forward(model, X_new, out_new, propagation)
    return parts.mean, parts.spread
