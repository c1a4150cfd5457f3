"""The ``nvc`` engine: MAP-II training of an analytic-bound model (nested variational compression) and its analytic
Gaussian predictive.

The model's program carries its bound as a factor (zoo/nvc.py: log p(theta) + L_NVC), so training is NumPyro SVI with
a point-mass guide on the hyperparameter sites (``PointGuide``, AutoDelta's guide and start; the program's own
``numpyro.param``s -- inducing inputs and q(u) -- are optimised alongside): the loss is exactly -(log prior + bound),
deterministic, maximised by Adam with a cosine-decayed learning rate (as the ``svi`` engine). The engine never imports
a model: the model's ``nvc`` view supplies ``bound(values, inputs, y, num_layers)`` and ``predict(values, inputs_new,
num_layers, propagation)``, with ``inputs(arrays)`` picking the inputs (X, or X with output indices) from the data and
``depth`` a fixed depth.

Output: point_estimates = every learnt value (constrained), ``nvc_bound``, and the analytic predictive mean/variance
of f at the test inputs (``dataset.test``'s, else the training inputs) as ``f_mean`` and ``f_var``; posterior
= ``num_samples`` independent draws of f per input from that Gaussian (marginal bands only); traces = the MAP
objective per step.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer.initialization import init_to_median

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import observed_args
from inference.optimisation import optimise
from zoo import sites
from zoo.errors import OptionError
from zoo.options import Option

PROPAGATIONS = ("nvc", "moment")


class PointGuide:
    """A point mass on every latent sample site of ``model``, each a param ``<site>_auto_loc`` started where NumPyro's
    ``AutoDelta`` starts: the model traced once with ``init_to_median`` (the median of 15 prior draws per site) under
    the second half of the guide's key, each value taken through its support's bijection and back as AutoDelta's
    ``postprocess_fn`` does, so a fit equals AutoDelta's bit for bit.

    What it leaves out: AutoDelta finds its start by ``find_valid_initial_params``, which under ``jit`` is a
    ``while_loop`` around the model's potential *and its gradient*, i.e. a second copy of the model's gradient in the
    compiled program, only to check that the start is finite (AMO-GP: ~10 s of ~25 s of compilation, one core,
    paper_figures/kaiser_amogp_full_runs.md). Here a non-finite start is not retried; it shows as a non-finite
    objective trace. Latent sites inside plates are refused (no ``nvc`` model has one).
    """

    def __init__(self, model):
        self.model = model
        self.sites = None  # name -> (support, event_dim, start)

    def _setup(self, *args, **kwargs) -> dict:
        key = jax.random.split(numpyro.prng_key())[1]  # the key find_valid_initial_params' first try uses
        with handlers.block():
            seeded = handlers.seed(self.model, key)
            tr = handlers.trace(handlers.substitute(seeded, substitute_fn=init_to_median)).get_trace(*args, **kwargs)
        sites = {}
        for name, site in tr.items():
            if site["type"] != "sample" or site["is_observed"]:
                continue
            if site["cond_indep_stack"]:
                raise NotImplementedError(f"nvc: latent site {name!r} is inside a plate; PointGuide has no plates.")
            support = site["fn"].support
            bijection = biject_to(support)
            sites[name] = (support, site["fn"].event_dim, bijection(bijection.inv(site["value"])))
        return sites

    def __call__(self, *args, **kwargs) -> dict:
        if self.sites is None:
            self.sites = self._setup(*args, **kwargs)
        result = {}
        for name, (support, event_dim, start) in self.sites.items():
            loc = numpyro.param(f"{name}_auto_loc", start, constraint=support, event_dim=event_dim)
            result[name] = numpyro.sample(name, dist.Delta(loc).to_event(event_dim))
        return result

    def median(self, params: dict) -> dict:
        """The learnt value of every latent site (constrained), by site name."""
        return {name: params[f"{name}_auto_loc"] for name in self.sites}


@program_cache
def nvc_runner(spec, num_layers: int, num_steps: int, num_samples: int, lr: float, final: float, propagation: str):
    """Jitted ``(key, observed, X_new, init) -> (values, objective trace, bound, mean, var, draws)``; ``init``:
    starting values of param sites by name (constrained), {} for the program's and the guide's own."""
    view = spec.views["nvc"]

    def model(**observed):
        return spec.program(**observed, num_layers=num_layers)

    def run(key, observed, X_new, init):
        guide = PointGuide(model)
        svi = optimise.make_svi(model, guide, lr, num_steps, final, num_particles=1)
        k_init, k_draw = jax.random.split(key)
        params, losses = optimise.fit(svi, k_init, num_steps, init_params=init or None, **observed)
        values = {k: v for k, v in params.items() if not k.endswith("_auto_loc")} | guide.median(params)
        bound = view.bound(values, view.inputs(observed), observed["y"], num_layers)
        mean, var = view.predict(values, X_new, num_layers, propagation)
        draws = mean + jnp.sqrt(var) * jax.random.normal(k_draw, (num_samples, mean.shape[0]))
        return values, -losses, bound, mean, var, draws

    return jax.jit(run)


def param_shapes(spec, num_layers: int, observed: dict) -> dict[str, tuple[int, ...]]:
    """Shapes of the param sites of the program and its PointGuide (traced abstractly: nothing runs or compiles)."""
    model = partial(spec.program, num_layers=num_layers)
    return sites.param_shapes((PointGuide(model), model), **observed)


def starting_values(spec, num_layers: int, observed: dict, init_params) -> dict:
    """``init_params`` as float arrays, or OptionError for names that are not param sites, wrong shapes, NaN."""
    if not init_params:
        return {}
    shapes = param_shapes(spec, num_layers, observed)
    starts = {}
    for name, value in dict(init_params).items():
        if name not in shapes:
            raise OptionError(f"init_params: {name!r} is not a param site (known: {', '.join(sorted(shapes))}).")
        array = jnp.asarray(value, dtype=float)
        if array.shape != shapes[name]:
            raise OptionError(f"init_params[{name!r}] has shape {array.shape}; the site has shape {shapes[name]}.")
        if not bool(jnp.all(jnp.isfinite(array))):
            raise OptionError(f"init_params[{name!r}] has NaN or infinite values.")
        starts[name] = array
    return starts


@register_engine(
    "nvc",
    requires={"nvc"},
    options={
        "num_layers": Option("int", 2, "layers of the deep GP", minimum=1),
        "num_steps": opt.num_steps(3000),
        "num_samples": opt.num_samples(200, doc="ancestral draws through the fitted layers"),
        "learning_rate": opt.learning_rate(0.01),
        "final_lr_fraction": opt.fraction(0.02, "cosine decay of the learning rate to this fraction"),
        "init_params": Option(
            "mapping", {}, "starting values (constrained) of param sites; a hyperparameter site's is <site>_auto_loc"
        ),
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
    init = starting_values(spec, int(layers), observed, options["init_params"])
    values, objective, bound, mean, var, draws = timer.call(run, key, observed, X_new, init)
    point = {k: v[None] for k, v in values.items()}
    point |= {"nvc_bound": bound[None], "f_mean": mean[None], "f_var": var[None]}
    return EngineOutput(
        posterior={"f": draws[None]},
        point_estimates=point,
        traces={"objective": objective[None]},
        num_grad_evals=options["num_steps"],
    )
