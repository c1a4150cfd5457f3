"""The latent-input GP (LGP; Bodin, Campbell & Ek 2017) as a Bayesian-optimisation surrogate (Kaiser 2021, sec. 6.2,
Fig 6.3; docs/sources/kaiser.md#lgp-surrogate).

The objective is read as f(x) = g(x, h) with a nuisance h that varies between observations. The LGP puts a GP prior
on g over the augmented input (x, h) and gives every observation its own latent
    h_n ~ N(0, I_Q),   g ~ GP(0, SE-ARD on (x, h)),   y_n ~ N(g(x_n, h_n), s2),
so the SE lengthscales on h set how much of y the latents explain; predictions for optimisation use g(x, 0). With
an additive g(x) + h the model is GP regression with Gaussian noise (the thesis's remark). Hyperparameters have
``gp/regression``'s LogNormal priors (lengthscales and variance LogNormal(0, 1), noise LogNormal(-2, 1)).
"""

from typing import Any

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from zoo import gp, regression
from zoo.options import Option
from zoo.registry import ModelSpec, frozen, register_family

Array = Any
__all__ = ["latent_input_gp", "predict_at_zero"]
SOURCE = "Kaiser 2021, sec. 6.2 (Fig 6.3); Bodin, Campbell & Ek 2017 (latent Gaussian process regression)"


def latent_input_gp(X, y=None, latent_dims: int = 1):
    """Sites ``latent`` (N, Q) ~ N(0, 1), then gp/regression's ``lengthscale`` (D + Q,), ``variance``, ``noise`` on
    the inputs [X, latent]; X (N, D), y (N,)."""
    h = numpyro.sample("latent", dist.Normal(0.0, 1.0).expand([X.shape[0], latent_dims]).to_event(2))
    regression.gp_regression(jnp.concatenate([X, h], -1), y)


def predict_at_zero(draw: dict, X: Array, y: Array, X_new: Array) -> tuple[Array, Array]:
    """Mean and variance (m,) of g(x, 0) at X_new (m, D) given one draw of the sites (``latent`` (N, Q),
    ``lengthscale``, ``variance``, ``noise``): the GP posterior conditioned on the augmented inputs."""
    kernel, noise = regression.kernel_and_noise(draw)
    h = jnp.asarray(draw["latent"])
    inputs = jnp.concatenate([X, h], -1)
    new = jnp.concatenate([X_new, jnp.zeros((X_new.shape[0], h.shape[1]))], -1)
    post = gp.predict(kernel, inputs, jnp.asarray(y), noise, new, full_cov=False)
    return post.mean, post.cov


@register_family(
    "gp/latent-input",
    {"latent_dims": Option("int", 1, "latent input dimensions Q per observation", minimum=1)},
    "Latent-input GP (LGP): a GP on (x, h) with a latent h_n ~ N(0, I) per observation; predictions at h = 0",
    SOURCE,
)
def _latent_input(latent_dims: int) -> ModelSpec:
    def program(X, y=None):
        latent_input_gp(X, y, latent_dims)

    return ModelSpec(
        name="gp/latent-input",
        summary=f"Latent-input GP with Q = {latent_dims} latent dimensions per observation, SE-ARD on (x, h)",
        source=SOURCE,
        program=program,
        simulate=regression.simulate_regression,
        data_shapes=frozen({"X": ("N", "D"), "y": ("N",)}),
        default_params=frozen({"noise": 0.1, "variance": 1.0}),
    )
