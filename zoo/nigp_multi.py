"""Multi-output NIGP with a shared input noise (McHutchon 2014, sec. 2.4, E2.4; docs/sources/mchutchon.md#nigp-multi).

E outputs, each its own GP on the same noisy inputs X (N, D), with its own signal variance and lengthscales, and
one input-noise covariance Sigma_in = diag(input_noise) (D,) shared by all of them: the outputs jointly inform the
input noise. The NIGP covariance of output e is that of ``zoo.nigp`` (eqs. 2.75-2.78) with Sigma_in shared, and the
approximate log marginal likelihood is the sum over outputs. Option ``tie``: for a time series whose inputs are
(y_t, u_t) and whose targets are y_{t+1} (the first E inputs are the previous values of the E outputs), "each state
dimension's input and output noise are the same", sigma_out,e^2 = sigma_in,e^2, so there is no ``noise`` site.

Registered as ``gp/nigp-multi`` (data X (N, D), y (N, E)) with the ``noisy_input`` view the ``nigp`` engine trains;
``params_from`` turns the engine's point estimates into one ``zoo.nigp.NIGPParams`` and training Sigma~ (N,) per
output, ready for ``zoo.nigp.predict``.
"""

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from zoo import gp, nigp
from zoo.errors import OptionError
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, positive_int, register_family

__all__ = ["output_params", "params_from"]

Array = Any
SOURCE = "McHutchon 2014, sec. 2.4 (eqs. 2.75-2.78, multi-output with shared input noise), E2.4"


def output_params(values: dict, tie: bool) -> nigp.NIGPParams:
    """Per-output NIGPParams stacked along a leading axis E from the site values (lengthscale (E, D), variance (E,),
    input_noise (D,), noise (E,) unless tied: then noise_e = input_noise[e])."""
    E = values["variance"].shape[0]
    noise = values["input_noise"][:E] if tie else values["noise"]
    return nigp.NIGPParams(
        values["lengthscale"],
        values["variance"],
        noise,
        jnp.broadcast_to(values["input_noise"], values["lengthscale"].shape),
    )


def _per_output(fn, values, X, y, mode, extra, tie):
    """fn(params_e, X, y_e, mode, extra_e) mapped over the E outputs (y, extra (N, E))."""
    params = output_params(values, tie)
    extra = jnp.zeros_like(y) if extra is None else extra
    return jax.vmap(lambda p, y_e, x_e: fn(nigp.NIGPParams(*p), X, y_e, mode, x_e), in_axes=(0, 1, 1))(
        tuple(params), y, extra
    )


def log_likelihood(values, X, y, mode, extra=None, tie=False) -> Array:
    """Sum over outputs of eq. 2.78 with the shared input noise."""
    return jnp.sum(_per_output(nigp.log_likelihood, values, X, y, mode, extra, tie))


def training_correction(values, X, y, mode, extra=None, tie=False) -> Array:
    """Sigma~(Y_in) per output, (N, E)."""
    return _per_output(nigp.training_correction, values, X, y, mode, extra, tie).T


def initial(X, y, tie: bool) -> dict:
    """Each output's ``zoo.nigp.initial_params``; the shared input noise (std(X) / 20)^2."""
    starts = [nigp.initial_params(X, y[:, e]) for e in range(y.shape[1])]
    values = {
        "lengthscale": jnp.stack([s.lengthscale for s in starts]),
        "variance": jnp.stack([s.variance for s in starts]),
        "input_noise": starts[0].input_noise,
    }
    return values if tie else values | {"noise": jnp.stack([s.noise for s in starts])}


def nigp_multi(X, y=None, E: int = 1, tie: bool = False):
    """The multi-output NIGP (module docstring). X (N, D), y (N, E). With y observed, the first-pass NIGPm
    pseudo-likelihood as a factor (as ``gp/nigp``); with y None, each output drawn from the linearised prior."""
    N, D = X.shape
    E = E if y is None else y.shape[1]
    if tie and E > D:
        raise OptionError(f"gp/nigp-multi: tie needs the first E = {E} inputs to be the outputs' previous values")
    values = {
        "lengthscale": numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([E, D]).to_event(2)),
        "variance": numpyro.sample("variance", dist.LogNormal(0.0, 1.0).expand([E]).to_event(1)),
        "input_noise": numpyro.sample("input_noise", dist.LogNormal(-2.0, 1.5).expand([D]).to_event(1)),
    }
    if not tie:
        values["noise"] = numpyro.sample("noise", dist.LogNormal(-2.0, 1.5).expand([E]).to_event(1))
    if y is not None:
        numpyro.factor("nigp_log_lik", log_likelihood(values, X, y, "nigpm", None, tie))
        return
    params = output_params(values, tie)
    prior_slope_var = params.variance[:, None] / params.lengthscale**2  # (E, D): no data, slope ~ N(0, sf2 / l^2)
    correction = jnp.sum(prior_slope_var * params.input_noise, -1)  # (E,)
    kernels = [nigp.NIGPParams(*(a[e] for a in params)).kernel for e in range(E)]
    cols = [
        numpyro.sample(
            f"y_{e}",
            gp.GaussianEvidence(kernels[e](X) + (params.noise[e] + correction[e]) * jnp.eye(N)),
        )
        for e in range(E)
    ]
    numpyro.deterministic("y", jnp.stack(cols, -1))


def params_from(point_estimates, tie: bool) -> list[tuple[nigp.NIGPParams, Array]]:
    """Per output (NIGPParams, training Sigma~ (N,)) from a ``nigp`` engine run's point estimates (chain 0)."""
    values = {name: jnp.asarray(point_estimates[name].values[0]) for name in point_estimates.data_vars}
    params = output_params(values, tie)
    E = params.variance.shape[0]
    return [(nigp.NIGPParams(*(a[e] for a in params)), values["correction"][:, e]) for e in range(E)]


def simulate(key, n: int = 100, E: int = 2, tie: bool = False) -> Dataset:
    """E sines of the first inputs observed with input noise sd 0.1 (and output noise sd 0.1 unless tied: then the
    output noise is the matching input's)."""
    n = positive_int("n", n)
    k_x, k_in, k_out = jax.random.split(key, 3)
    D = E + 1
    x = jax.random.uniform(k_x, (n, D), minval=-3.0, maxval=3.0)
    f = jnp.sin(x[:, :E] + 0.5 * x[:, E:])
    X = x + 0.1 * jax.random.normal(k_in, x.shape)
    y = f + 0.1 * jax.random.normal(k_out, f.shape)
    return Dataset(observed={"X": X, "y": y}, truth={"input_noise": jnp.full(D, 0.01), "noise": jnp.full(E, 0.01)})


class MultiView:
    """The ``noisy_input`` view (``zoo.nigp.NoisyInputView``'s fields) for a given ``tie``."""

    def __init__(self, tie: bool):
        self.tie = tie

    def initial(self, X, y):
        return initial(X, y, self.tie)

    def log_likelihood(self, values, X, y, mode, extra):
        return log_likelihood(values, X, y, mode, extra, self.tie)

    def training_correction(self, values, X, y, mode, extra):
        return training_correction(values, X, y, mode, extra, self.tie)


@register_family(
    "gp/nigp-multi",
    {
        "outputs": Option("int", 2, "number of outputs E (y's columns)", minimum=1),
        "tie": Option("bool", False, "time series: output e's noise is input e's noise (no noise site)"),
    },
    "Multi-output NIGP: one GP per output, input noise shared across outputs; ML-II by the nigp engine",
    SOURCE,
)
def _nigp_multi(outputs: int = 2, tie: bool = False) -> ModelSpec:
    return ModelSpec(
        name="gp/nigp-multi",
        summary=f"NIGP with {outputs} outputs sharing the input noise" + (", output noise tied to it" if tie else ""),
        source=SOURCE,
        program=partial(nigp_multi, E=outputs, tie=tie),
        simulate=partial(simulate, E=outputs, tie=tie),
        data_shapes=frozen({"X": ("N", "D"), "y": ("N", "E")}),
        default_params=frozen(
            {"variance": 1.0, "lengthscale": 1.0, "input_noise": 0.01} | ({} if tie else {"noise": 0.01})
        ),
        capabilities=frozenset({"noisy_input"}),
        views=frozen({"noisy_input": MultiView(tie)}),
    )
