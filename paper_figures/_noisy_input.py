"""What McHutchon's chapter-2 figures share: the variational input-noise GP fitted as Table 2.1's rows fit it
(docs/sources/mchutchon.md#variational-input)."""

import jax.numpy as jnp

import inference
from zoo import variational_input

__all__ = ["VAR_INDUCING", "VAR_STEPS", "variational"]

VAR_INDUCING, VAR_STEPS = 20, 3000


def variational(X, y, steps: int = VAR_STEPS):
    """The variational input-noise GP fitted by svi (delta guide), 20 inducing inputs fixed evenly on the inputs'
    range: a ``zoo.variational_input.VariationalInputFit``."""
    Z = jnp.linspace(X.min(), X.max(), VAR_INDUCING)[:, None]
    run = inference.run(
        "gp/variational-input",
        {"X": X, "Z": Z, "y": y},
        engine="svi",
        guide="delta",
        num_steps=steps,
        learning_rate=0.02,
        num_samples=1,
        # Away from the "data are noise" optimum q(u) = p(u) (the thesis re-initialises when it lands there): the
        # output noise starts at 1 % of var(y), the input noise at (range / 20)^2; not the truth's values.
        init_params={
            "noise_auto_loc": 0.01 * float(jnp.var(y)),
            "input_noise_auto_loc": jnp.full(X.shape[1], (float(jnp.ptp(X)) / 20.0) ** 2),
        },
    )
    return variational_input.fit_from(run.point_estimates.isel(chain=0), X, Z, y)
