"""Parameter sites shared by the GP-SSMs (docs/sources/mchutchon.md#gpssm, docs/sources/mchutchon.md#priors).

D states, U controls. The transition of every GP-SSM here is D independent GPs on x^ = [x_{t-1}; u_{t-1}] (D+U,)
with SE-ARD kernels (``lengthscale`` (D, D+U), ``signal_var`` (D,)) and a zero, identity or learnable linear mean
m(x^) = A x^ + b (McHutchon eqs. 3.1-3.5); process noise ``process_var`` (D,), observation noise ``obs_var`` (D,).
"""

from typing import Any

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from zoo import moments

Array = Any

MEANS = ("zero", "identity", "linear")


def mean_parameters(mean: str, D: int, U: int) -> tuple[Array, Array]:
    """The transition mean (A (D, D+U), b (D,)): sample sites ``mean_A``, ``mean_b`` (N(0, 1) each) for "linear",
    fixed [I 0] and 0 for "identity", zeros for "zero" (docs/sources/mchutchon.md#linear-mean)."""
    if mean == "linear":
        A = numpyro.sample("mean_A", dist.Normal(0.0, 1.0).expand([D, D + U]).to_event(2))
        b = numpyro.sample("mean_b", dist.Normal(0.0, 1.0).expand([D]).to_event(1))
        return A, b
    if mean == "identity":
        return moments.identity_mean(D, U).A, jnp.zeros(D)
    return jnp.zeros((D, D + U)), jnp.zeros(D)


def hyper_parameters(D: int, U: int) -> dict[str, Array]:
    """Weak LogNormal priors on lengthscale (D, D+U), signal_var (D,), process_var (D,), obs_var (D,): the thesis
    has none (docs/sources/mchutchon.md#priors)."""
    return {
        "lengthscale": numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([D, D + U]).to_event(2)),
        "signal_var": numpyro.sample("signal_var", dist.LogNormal(0.0, 1.0).expand([D]).to_event(1)),
        "process_var": numpyro.sample("process_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([D]).to_event(1)),
        "obs_var": numpyro.sample("obs_var", dist.LogNormal(jnp.log(0.1), 1.0).expand([D]).to_event(1)),
    }
