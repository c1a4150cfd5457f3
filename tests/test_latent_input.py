"""The latent-input GP of Kaiser 2021 Fig 6.3 (``gp/latent-input``): with an infinite lengthscale on the latent its
prediction of g(x, 0) is plain GP regression's on x; with a finite one the latents change it."""

import jax
import jax.numpy as jnp
import numpy as np

from zoo import gp, latent_input
from zoo.kernels import SquaredExponential


def test_prediction_at_zero_reduces_to_gp_regression():
    X = jnp.linspace(0.0, 1.0, 8)[:, None]
    y = jnp.sin(6.0 * X[:, 0])
    X_new = jnp.linspace(-0.2, 1.2, 5)[:, None]
    latent = jax.random.normal(jax.random.PRNGKey(0), (8, 1))
    draw = {"latent": latent, "lengthscale": jnp.array([0.3, 1e8]), "variance": 1.3, "noise": 0.01}

    @jax.jit
    def predictions(draw):
        plain = gp.predict(SquaredExponential(1.3, jnp.array([0.3])), X, y, 0.01, X_new, full_cov=False)
        used = latent_input.predict_at_zero(draw | {"lengthscale": jnp.array([0.3, 0.5])}, X, y, X_new)[0]
        return latent_input.predict_at_zero(draw, X, y, X_new), (plain.mean, plain.cov), used

    (mean, var), (plain_mean, plain_var), used = predictions(draw)
    np.testing.assert_allclose(mean, plain_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, plain_var, rtol=1e-8, atol=1e-10)
    assert np.max(np.abs(used - plain_mean)) > 1e-3
