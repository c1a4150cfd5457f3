"""Exact moments of sines of a Gaussian vector (PILCO's ``gSin`` and ``gTrig``; docs/sources/mchutchon.md#pilco-trig).

For z ~ N(m, S) (D,) and v = P z + o (K,) (so cos(a) = sin(a + pi/2) is a row with offset pi/2), with
s_k = Var[v_k] and S_v = P S P^T:

    E[sin v_k]              = exp(-s_k / 2) sin(E v_k)
    E[sin v_k sin v_l]      = 1/2 [exp(-(s_k + s_l - 2 S_v,kl) / 2) cos(E v_k - E v_l)
                                   - exp(-(s_k + s_l + 2 S_v,kl) / 2) cos(E v_k + E v_l)]
    Cov[z, sin v_k]         = S p_k exp(-s_k / 2) cos(E v_k)       (Stein's lemma: Cov[z, g(z)] = S E[grad g])

The last is returned as the gain G (D, K) with Cov[z, sin v] = S G, so a chain z = h(y) needs no inverse of S:
Cov[y, sin v] = Cov[y, z] G when (y, z) is jointly Gaussian (PILCO's chain rule).
"""

from typing import Any

import jax.numpy as jnp

__all__ = ["sin_moments"]

Array = Any


def sin_moments(m: Array, S: Array, P: Array, offset: Array) -> tuple[Array, Array, Array]:
    """Mean (K,), covariance (K, K) and Stein gain G (D, K) of sin(P z + offset), z ~ N(m, S) (m (D,), S (D, D),
    P (K, D), offset (K,)). Exact."""
    mv = P @ m + offset
    Sv = P @ S @ P.T
    s = jnp.diagonal(Sv)
    mean = jnp.exp(-0.5 * s) * jnp.sin(mv)
    ss = s[:, None] + s[None, :]
    second = 0.5 * (
        jnp.exp(-0.5 * (ss - 2.0 * Sv)) * jnp.cos(mv[:, None] - mv[None, :])
        - jnp.exp(-0.5 * (ss + 2.0 * Sv)) * jnp.cos(mv[:, None] + mv[None, :])
    )
    cov = second - jnp.outer(mean, mean)
    gain = P.T * (jnp.exp(-0.5 * s) * jnp.cos(mv))[None, :]
    return mean, 0.5 * (cov + cov.T), gain
