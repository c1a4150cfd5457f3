"""The ``nvc`` engine: MAP-II training of an analytic-bound model (nested variational compression) and its analytic
Gaussian predictive.

The model's program carries its bound as a factor (zoo/nvc.py: log p(theta) + L_NVC), so training is NumPyro SVI with
an ``AutoDelta`` guide on the hyperparameter sites (the program's own ``numpyro.param``s -- inducing inputs and q(u)
-- are optimised alongside): the loss is exactly -(log prior + bound), deterministic, maximised by Adam with a
cosine-decayed learning rate (as the ``svi`` engine). The engine never imports a model: the model's ``nvc`` view
supplies ``bound(values, inputs, y, num_layers)`` and ``predict(values, inputs_new, num_layers, propagation)``, with
``inputs(arrays)`` picking the inputs (X, or X with output indices) from the data and ``depth`` a fixed depth.

Output: point_estimates = every learnt value (constrained), ``nvc_bound``, and the analytic predictive mean/variance
of f at the test inputs (``dataset.test``'s, else the training inputs) as ``f_mean`` and ``f_var``; posterior
= ``num_samples`` independent draws of f per input from that Gaussian (marginal bands only); traces = the MAP
objective per step.
"""

from functools import cache

import jax
import jax.numpy as jnp
from numpyro.infer.autoguide import AutoDelta

from inference import optimise
from inference import options as opt
from inference.api import EngineOutput, register_engine
from inference.program import observed_args
from zoo.options import Option

PROPAGATIONS = ("nvc", "moment")


@cache
def nvc_runner(spec, num_layers: int, num_steps: int, num_samples: int, lr: float, final: float, propagation: str):
    """Jitted ``(key, observed, X_new) -> (values, objective trace, bound, mean, var, draws)``."""
    view = spec.views["nvc"]

    def model(**observed):
        return spec.program(**observed, num_layers=num_layers)

    def run(key, observed, X_new):
        guide = AutoDelta(model)
        svi = optimise.make_svi(model, guide, lr, num_steps, final, num_particles=1)
        k_init, k_draw = jax.random.split(key)
        params, losses = optimise.fit(svi, k_init, num_steps, **observed)
        values = {k: v for k, v in params.items() if not k.endswith("_auto_loc")} | guide.median(params)
        bound = view.bound(values, view.inputs(observed), observed["y"], num_layers)
        mean, var = view.predict(values, X_new, num_layers, propagation)
        draws = mean + jnp.sqrt(var) * jax.random.normal(k_draw, (num_samples, mean.shape[0]))
        return values, -losses, bound, mean, var, draws

    return jax.jit(run)


@register_engine(
    "nvc",
    requires={"nvc"},
    options={
        "num_layers": Option("int", 2, "layers of the deep GP", minimum=1),
        "num_steps": opt.num_steps(3000),
        "num_samples": opt.num_samples(200, doc="ancestral draws through the fitted layers"),
        "learning_rate": opt.learning_rate(0.01),
        "final_lr_fraction": opt.fraction(0.02, "cosine decay of the learning rate to this fraction"),
        "propagation": opt.choice("nvc", PROPAGATIONS, "nvc: eq. 2.85's band; moment: the full moment match"),
    },
    summary="Nested variational compression: MAP-II on the analytic Psi-statistics bound; analytic predictive",
)
def nvc(spec, dataset, key, timer, **options) -> EngineOutput:
    view = spec.views["nvc"]
    layers = view.depth or options["num_layers"]  # a model of fixed depth (AMO-GP) sets its own
    run = nvc_runner(
        spec,
        int(layers),
        options["num_steps"],
        options["num_samples"],
        float(options["learning_rate"]),
        float(options["final_lr_fraction"]),
        options["propagation"],
    )
    observed = observed_args(dataset)
    has_test = all(name in dataset.test for name in view.input_names)
    X_new = view.inputs({k: jnp.asarray(v) for k, v in dataset.test.items()}) if has_test else view.inputs(observed)
    values, objective, bound, mean, var, draws = timer.call(run, key, observed, X_new)
    point = {k: v[None] for k, v in values.items()}
    point |= {"nvc_bound": bound[None], "f_mean": mean[None], "f_var": var[None]}
    return EngineOutput(
        posterior={"f": draws[None]},
        point_estimates=point,
        traces={"objective": objective[None]},
        num_grad_evals=options["num_steps"],
    )
