"""What the dynamics GP sees of the state-control vector: the raw vector, or an angle replaced by its sine and
cosine (PILCO's ``dyni``; docs/sources/mchutchon.md#pilco-angle-inputs).

An ``InputMap`` sends j = [x; u] (n,) to the GP input a = [A j; sin(P j + offset)] (n_a,), the same form as the
cost's augmentation (``inference.applications.pilco.cost``). For j ~ N(m, S) the mean and covariance of a and Cov[j, a]
are exact
(``inference.applications.pilco.trig``); the GP is then evaluated at a Gaussian a with those moments (PILCO's
approximation), and
Cov[j, f(a)] is carried back as Cov[j, a] E[grad_a f] (``expected_gradient``), PILCO's chain rule: exact when a is
jointly Gaussian with j, and exactly Cov[j, f] for the identity map (a = j, Stein's lemma).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve

from inference.applications.pilco.trig import sin_moments
from zoo import moments
from zoo.eager import compiled_when_eager

__all__ = ["InputMap", "angle_map", "apply", "expected_gradient", "input_moments"]

Array = Any


class InputMap(NamedTuple):
    """A (n_lin, n) the linear part, P (n_sin, n) and offset (n_sin,) the sine part."""

    A: Array
    P: Array
    offset: Array


def angle_map(n: int, angle: int) -> InputMap:
    """[j without j_angle; sin j_angle; cos j_angle] for j (n,): e.g. the cart-pole's [x, xdot, thetadot, u, sin
    theta, cos theta] from [x, xdot, thetadot, theta, u] (angle 3)."""
    keep = [i for i in range(n) if i != angle]
    A = jnp.eye(n)[jnp.array(keep)]
    P = jnp.zeros((2, n)).at[:, angle].set(1.0)
    return InputMap(A, P, jnp.array([0.0, jnp.pi / 2]))


def apply(inputs: InputMap, j: Array) -> Array:
    """a (n_a,) at a point j (n,); rows of a batch (N, n) -> (N, n_a) by ``jax.vmap``."""
    return jnp.concatenate([inputs.A @ j, jnp.sin(inputs.P @ j + inputs.offset)])


def input_moments(inputs: InputMap, m: Array, S: Array) -> tuple[Array, Array, Array]:
    """Exact mean (n_a,), covariance (n_a, n_a) of a and Cov[j, a] (n, n_a), for j ~ N(m, S)."""
    s_mean, s_cov, gain = sin_moments(m, S, inputs.P, inputs.offset)
    lin_cov = S @ inputs.A.T
    cross = inputs.A @ S @ gain
    top = jnp.concatenate([inputs.A @ lin_cov, cross], 1)
    bottom = jnp.concatenate([cross.T, s_cov], 1)
    cov = jnp.concatenate([top, bottom], 0)
    return (
        jnp.concatenate([inputs.A @ m, s_mean]),
        0.5 * (cov + cov.T),
        jnp.concatenate([lin_cov, S @ gain], 1),
    )


@compiled_when_eager
def expected_gradient(predictor: moments.SEPredictor, mu: Array, Sigma: Array) -> Array:
    """E[grad_a f(a)] (D_in, E) for a ~ N(mu, Sigma), f the SE-GP predictive mean: sum_i beta_i q_i (Sigma +
    Lambda)^{-1} (a_i - mu), so Cov[a, f] = Sigma E[grad f] (Stein's lemma) without solving against Sigma, which is
    near-singular when a holds sin and cos of one angle (PILCO computes the same through (Sigma + Lambda)^{-1})."""

    def one_output(X, beta, sf2, ell):
        nu = (X - mu) / ell  # (M, D_in), scaled by Lambda^{-1/2}
        L = jnp.linalg.cholesky(Sigma / jnp.outer(ell, ell) + jnp.eye(ell.shape[0]))
        Tinv_nu = cho_solve((L, True), nu.T).T
        q = sf2 * jnp.exp(-jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * jnp.sum(nu * Tinv_nu, -1))
        return (beta * q) @ (Tinv_nu / ell)  # (Sigma + Lambda)^{-1} nu = Lambda^{-1/2} T^{-1} Lambda^{-1/2} nu

    return jax.vmap(one_output)(predictor.inputs, predictor.beta, predictor.variance, predictor.lengthscale).T
