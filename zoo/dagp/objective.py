"""Pure pieces of DAGP's bound (Kaiser 2021, eqs. 3.1-3.7): per-point expected log-likelihoods, sampled assignment
logits, the Concrete relaxation and the relaxed per-point terms."""

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from zoo import sparse as sp

Array = Any
LOG_2PI = math.log(2.0 * math.pi)


class ModeTerms(NamedTuple):
    """Per point and mode: expected log-likelihood given v (B, K) and sampled logits alpha (B, K)."""

    expected_log_lik: Array
    alpha: Array


def expected_log_lik(kind: str, kernel, Z, v, X, y, noise) -> Array:
    """E_{p(f_n | v)} log N(y_n | f_n, noise): the SVGP per-point term for "se", log N(y_n | 0, noise) for "white"."""
    if kind == "white":
        return -0.5 * (LOG_2PI + jnp.log(noise) + y**2 / noise)
    _, A = sp.whitened_projection(kernel, Z, X)
    k_tilde = kernel.diag(X) - jnp.sum(A**2, 0)
    return -0.5 * (LOG_2PI + jnp.log(noise) + (y - A.T @ v) ** 2 / noise) - 0.5 * k_tilde / noise


def sampled_logits(kernel, Z, v, X, eps) -> Array:
    """alpha_n = a_n^T v + sqrt(k~_nn) eps_n, a draw from p(alpha_n | v) (B,) (the DSVI per-point conditional)."""
    _, A = sp.whitened_projection(kernel, Z, X)
    k_tilde = jnp.maximum(kernel.diag(X) - jnp.sum(A**2, 0), 0.0)
    return A.T @ v + jnp.sqrt(k_tilde) * eps


def concrete_sample(logits: Array, gumbel: Array, temperature: float) -> Array:
    """a^ = softmax((log_softmax(logits) + g) / lambda): a relaxed one-hot sample on the simplex (..., K)."""
    return jax.nn.softmax((jax.nn.log_softmax(logits, -1) + gumbel) / temperature, -1)


def relaxed_objective(
    log_lik: Array, alpha: Array, assignment: Array, logits: Array, entropy: bool
) -> tuple[Array, Array]:
    """Per-point likelihood term sum_k a^_k E log N(y | f_k, s_k^2) and assignment term (B,) each (eq. 3.7).

    The assignment term is sum_k a^_k log softmax(alpha)_k, plus H(q(a_n)) when ``entropy``.
    """
    assign = jnp.sum(assignment * jax.nn.log_softmax(alpha, -1), -1)
    if entropy:
        q = jax.nn.softmax(logits, -1)
        assign = assign - jnp.sum(q * jax.nn.log_softmax(logits, -1), -1)
    return jnp.sum(assignment * log_lik, -1), assign
