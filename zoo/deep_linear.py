"""A deep GP of linear layers: the identity as a composition of linear functions (Kaiser 2021, sec. 6.1, Fig 6.2;
docs/sources/kaiser.md#layer-collapse).

Each layer is a zero-mean GP with the linear kernel k(h, h') = h h' on a scalar input. Such a GP's draws are exactly
the lines through the origin f_l(h) = w_l h with w_l ~ N(0, 1), so the L-layer composition is
    y_n = w_L ... w_2 w_1 x_n + eps_n,   w_l ~ N(0, 1),   eps_n ~ N(0, s2),   s2 ~ LogNormal(-4, 1),
and the posterior over each layer's function is the posterior over its slope ``slope_l``. The posterior is invariant
under flipping the signs of any two layers (prior and likelihood depend on the slopes only through their squares and
their product), so for data from the identity it has 2^(L-1) sign patterns of equal mass: which sign layer L takes
depends on the others. A posterior that is independent across layers (DSVI's, or a mean-field guide) cannot represent
that dependence; the thesis: "an independent approximation collapses to a single solution".
"""

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family
from zoo.symmetry import even_sign_flips

SOURCE = "Kaiser 2021, sec. 6.1 (Fig 6.2): the identity as a composition of three linear functions"


def deep_linear(X, y=None, num_layers: int = 3):
    """Sites ``slope_1`` ... ``slope_L`` ~ N(0, 1), ``noise`` (variance) ~ LogNormal(-4, 1); y (N,) given X (N,)."""
    h = X
    for layer in range(1, num_layers + 1):
        h = numpyro.sample(f"slope_{layer}", dist.Normal(0.0, 1.0)) * h
    noise = numpyro.sample("noise", dist.LogNormal(-4.0, 1.0))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("y", dist.Normal(h, noise**0.5), obs=y)


def simulate_identity(key, n: int = 20, noise_std: float = 0.05) -> Dataset:
    """y = x + N(0, noise_std^2) at n even points of [-1, 1] (the thesis gives no data for Fig 6.2)."""
    n = positive_int("n", n)
    X = np.linspace(-1.0, 1.0, n)
    y = X + noise_std * np.asarray(jax.random.normal(key, (n,)))
    return Dataset(observed={"X": X, "y": y}, truth={"noise": noise_std**2})


@register_family(
    "deep_gp/linear",
    {"num_layers": Option("int", 3, "number of linear-kernel GP layers L", minimum=1)},
    "Deep GP of linear-kernel layers: y = w_L ... w_1 x + noise (the identity as a composition, Fig 6.2)",
    SOURCE,
)
def _deep_linear(num_layers: int) -> ModelSpec:
    def program(X, y=None):
        deep_linear(X, y, num_layers)

    return ModelSpec(
        name="deep_gp/linear",
        summary=f"Deep GP of {num_layers} linear-kernel layers on a scalar input (slopes w_l ~ N(0, 1))",
        source=SOURCE,
        program=program,
        simulate=simulate_identity,
        data_shapes=frozen({"X": ("N",), "y": ("N",)}),
        default_params=frozen({"noise": 0.0025}),
        # the 2^(L-1) sign patterns of equal mass (docs/gym.md#symmetry); one layer has none
        symmetry=even_sign_flips(tuple(f"slope_{layer}" for layer in range(1, num_layers + 1)))
        if num_layers > 1
        else None,
    )
