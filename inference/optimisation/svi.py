"""Stochastic variational inference (NumPyro SVI + optax Adam) with a guide chosen by option.

Guides: ``normal`` (mean-field AutoNormal), ``mvn`` (full-rank AutoMultivariateNormal), ``delta`` (MAP,
AutoDelta), ``model`` (the guide the model provides as its ``guide`` view), or the name of any other guide the
model offers in its ``guides`` view. Minibatching is the model's: a program whose data plate has a
``subsample_size`` (a model option such as ``batch_size``) is scaled by NumPyro, so the minibatch ELBO and its
gradient are unbiased (docs/architecture.md#svi).

``num_chains`` independent fits are vmapped in one program; each gives a chain of posterior draws from its guide,
so R-hat across chains flags optima that disagree. ``restarts = R`` fits R times per chain and keeps the fit
with the highest final objective: a ``score_particles``-sample estimate of the ELBO at the final params, with
common random numbers for all fits (the single-sample training trace is too noisy to rank fits). The estimate is
reported as the point estimate ``final_elbo`` whenever it is computed (``score_particles > 0`` or restarts > 1).

``init_params``: starting values (constrained) of param sites, by name; an array with one extra leading axis of
size num_chains x restarts gives every fit its own start (e.g. the point estimates of an earlier run's chains).

Output: posterior draws (chain, draw, ...); point_estimates: the guide's median and the model's own params
(autoguides; e.g. the inducing inputs of ``gp/fitc`` under ``delta``) or every param of the model and guide
(``model``/named guides), plus ``final_elbo``; traces: ``elbo`` per step of the kept fits (elbo[i]: the
single-sample estimate at the params after i updates, the point step i + 1 starts from).

``record_path_every = k > 0`` also records the parameter path (``inference.core.parameter_path``): every param of the
guide and model (constrained, as ``point_estimates`` of a ``model`` guide) after 0, k, 2k, ... (< num_steps) updates
and after the last, ``path_<param>`` (chain, S, *shape), S = ceil(num_steps / k) + 1. Snapshot j at iteration
``thinned_iterations(num_steps, k)[j]`` is the point elbo[j k] was estimated at, for every j but the last, which is
the returned fit (no trace entry). Off by default: a snapshot per step of a large guide would hold num_steps copies.
"""

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer import Predictive
from numpyro.infer.autoguide import AutoDelta, AutoMultivariateNormal, AutoNormal

from inference.core import options as opt
from inference.core import parameter_path
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from inference.optimisation import optimise
from inference.optimisation.elbo import OrderedTraceELBO
from zoo import sites
from zoo.errors import IncompatibleEngineError, OptionError
from zoo.options import Option

AUTOGUIDES = {"normal": AutoNormal, "mvn": AutoMultivariateNormal, "delta": AutoDelta}
DEFAULT_SCORE_PARTICLES = 256  # ranking restarts when score_particles is not set


def model_guides(spec) -> dict:
    """The guides a model offers: its ``guide`` view as "model", and its ``guides`` view by name."""
    offered = dict(spec.views.get("guides", {}))
    if "guide" in spec.views:
        offered["model"] = spec.views["guide"]
    return offered


def make_guide(spec, model, kind: str):
    if kind in AUTOGUIDES:
        return AUTOGUIDES[kind](model)
    model_guide = model_guides(spec)[kind]  # presence checked by the engine before anything is traced

    def guide(params, **observed):
        return model_guide(**observed)

    return guide


def autoguide_median(guide, params) -> dict:
    """The autoguide's median of every latent site, constrained: the unconstrained median (the loc) pushed through
    ``biject_to`` of the site's support (as NumPyro's ``guide.median``).

    Written out because ``guide.median`` runs the model once more under a seed handler it keeps between calls,
    and a model with a ``scan`` (every state-space model) leaks a key tracer from the scan's body into that handler:
    an UnexpectedTracerError, or an ahead-of-time executable short of an input. A support that depends on another
    latent value would need that run; no model of the zoo has one.
    """
    if isinstance(guide, AutoDelta):
        return guide.median(params)  # a delta guide's locs are its constrained values; no model run
    if isinstance(guide, AutoMultivariateNormal):
        unconstrained = guide._unpack_latent(params[f"{guide.prefix}_loc"])
    else:
        unconstrained = {name: params[f"{name}_{guide.prefix}_loc"] for name in guide._init_locs}
    sites = guide.prototype_trace
    return {name: biject_to(sites[name]["fn"].support)(value) for name, value in unconstrained.items()}


def latent_and_deterministic(model, params, observed) -> list[str]:
    """Names of the sites a posterior reports: unobserved samples and deterministic values."""
    trace = handlers.trace(handlers.seed(model, 0)).get_trace(params, **observed)
    return [
        name
        for name, site in trace.items()
        if site["type"] == "deterministic" or (site["type"] == "sample" and not site["is_observed"])
    ]


def param_shapes(spec, kind: str, params, observed) -> dict[str, tuple[int, ...]]:
    """Shapes of the param sites of the model and guide (traced abstractly: nothing runs or compiles)."""
    model = conditioned_program(spec)
    return sites.param_shapes((make_guide(spec, model, kind), model), params, **observed)


@program_cache
def fit_runner(spec, kind: str, num_steps: int, num_particles: int, lr: float, final: float, every: int = 0):
    """Every fit's ``((key, init), params, observed) -> (guide params, losses, path)`` (leading axis: fits; path:
    the params at ``parameter_path.thinned_iterations(num_steps, every)``, or {} when ``every`` is 0)."""
    model = conditioned_program(spec)

    def one_fit(own, params, observed):
        key, init = own
        # Autoguides keep the prototype trace of their first use: a guide shared across traces (other data
        # shapes) would hand stale tracers to the new trace, so each trace builds its own.
        guide = make_guide(spec, model, kind)
        svi = optimise.make_svi(model, guide, lr, num_steps, final, num_particles)
        k_init, _ = jax.random.split(key)
        if every:
            return optimise.fit_recording(svi, k_init, num_steps, every, params, init_params=init, **observed)
        return (*optimise.fit(svi, k_init, num_steps, params, init_params=init, **observed), {})

    return vmapped_chains(one_fit)


@program_cache
def score_runner(spec, kind: str, num_particles: int):
    """Every fit's ``(guide params, key, params, observed) -> ELBO``, one shared key (common random numbers across
    fits)."""
    model = conditioned_program(spec)

    def one_score(guide_params, key, params, observed):
        guide = make_guide(spec, model, kind)
        loss = OrderedTraceELBO(num_particles=num_particles, vectorize_particles=True)
        return -loss.loss(key, guide_params, model, guide, params, **observed)

    return vmapped_chains(one_score)


@program_cache
def draw_runner(spec, kind: str, num_samples: int):
    """The kept fits' ``((key, guide params), params, observed) -> (draws, point)`` (leading axis: chains)."""
    model = conditioned_program(spec)

    def one_chain(own, params, observed):
        key, guide_params = own
        guide = make_guide(spec, model, kind)
        _, k_draw = jax.random.split(key)
        predictive = Predictive(
            model,
            guide=guide,
            params=guide_params,
            num_samples=num_samples,
            return_sites=latent_and_deterministic(model, params, observed),
        )
        draws = predictive(k_draw, params, **observed)  # also sets up an autoguide's prototype for median()
        point = guide_params
        if kind in AUTOGUIDES:  # the median of the latent sites, and the model's own params (e.g. inducing inputs)
            own = {name: v for name, v in guide_params.items() if f"{guide.prefix}_" not in name}
            point = {**autoguide_median(guide, guide_params), **own}
        return draws, point

    return vmapped_chains(one_chain)


def starting_values(init_params, shapes: dict, num_fits: int) -> dict:
    """``init_params`` broadcast to (num_fits, *site shape) per param site; OptionError for unknown names or
    shapes that are neither the site's nor (num_fits, *site shape)."""
    starts = {}
    for name, value in dict(init_params).items():
        if name not in shapes:
            known = ", ".join(sorted(shapes)) or "none"
            raise OptionError(f"init_params: {name!r} is not a param site of this model and guide (known: {known}).")
        array = jnp.asarray(value, dtype=float)
        shape = tuple(shapes[name])
        if array.shape == shape:
            array = jnp.broadcast_to(array, (num_fits, *shape))
        elif array.shape != (num_fits, *shape):
            raise OptionError(
                f"init_params[{name!r}] has shape {array.shape}; the site has shape {shape} (or {(num_fits, *shape)} "
                "for one start per fit)."
            )
        if not bool(jnp.all(jnp.isfinite(array))):
            raise OptionError(f"init_params[{name!r}] has NaN or infinite values.")
        starts[name] = array
    return starts


def _check_guide(spec, options) -> None:
    """The guide's name, against what this model offers (the declared option cannot know the model's guides)."""
    kind = options["guide"]
    known = (*AUTOGUIDES, *model_guides(spec))
    if kind == "model" and kind not in known:
        raise IncompatibleEngineError(f"model {spec.name!r} provides no guide; use one of {', '.join(known)}.")
    if kind not in known:
        raise OptionError(f"guide must be one of {', '.join(known)}, got {kind!r}")


@register_engine(
    "svi",
    requires={"continuous"},
    options={
        "guide": Option("str", "normal", "normal | mvn | delta (autoguides), model, or a guide the model names"),
        "num_chains": opt.num_chains(1),
        "restarts": Option("int", 1, "fits per chain; the best final ELBO is kept", minimum=1),
        "num_steps": opt.num_steps(3000),
        "num_samples": opt.num_samples(1000, doc="draws from the fitted guide"),
        "num_particles": opt.num_particles(1, minimum=1, doc="Monte Carlo samples per ELBO gradient"),
        "learning_rate": opt.learning_rate(0.02),
        "final_lr_fraction": opt.fraction(0.02, "cosine decay of the learning rate to this fraction"),
        "score_particles": Option("int", 0, "samples scoring each restart's final ELBO (0: the default)", minimum=0),
        "init_params": Option("mapping", {}, "starting values of the guide's params, shared or one per fit"),
        "record_path_every": Option(
            "int", 0, "record the params after every k-th update and the last (path_<param>); 0: none", minimum=0
        ),
        "params": opt.params({}),
    },
    summary="Stochastic variational inference (NumPyro + optax Adam); guide normal | mvn | delta | model; restarts",
)
def svi(spec, dataset, key, timer, **options) -> EngineOutput:
    _check_guide(spec, options)
    kind, chains, restarts = options["guide"], options["num_chains"], int(options["restarts"])
    observed, params = observed_args(dataset), options["params"]
    fits = chains * restarts
    init = options["init_params"]
    if init:
        init = starting_values(init, param_shapes(spec, kind, params, observed), fits)
    run_fits = fit_runner(
        spec,
        kind,
        options["num_steps"],
        options["num_particles"],
        float(options["learning_rate"]),
        float(options["final_lr_fraction"]),
        int(options["record_path_every"]),
    )
    key, score_key = jax.random.split(key) if restarts > 1 or options["score_particles"] else (key, None)
    keys = jax.random.split(key, fits)
    guide_params, losses, path = run_fits.run(timer, (keys, init), params, observed)
    kept = np.arange(chains)
    point_extra = {}
    if score_key is not None:
        particles = int(options["score_particles"]) or DEFAULT_SCORE_PARTICLES
        scores = score_runner(spec, kind, particles).run(timer, guide_params, score_key, params, observed)
        # fits are laid out chain-major: fit c * restarts + r is restart r of chain c
        kept = kept * restarts + np.argmax(np.asarray(scores).reshape(chains, restarts), 1)
        point_extra["final_elbo"] = np.asarray(scores)[kept]
    if restarts > 1:  # with one fit per chain every fit is kept; indexing would compile a gather per array
        guide_params, path = jax.tree.map(lambda x: x[kept], (guide_params, path))
        keys = keys[kept]
    draws, point = draw_runner(spec, kind, options["num_samples"]).run(timer, (keys, guide_params), params, observed)
    return EngineOutput(
        posterior=draws,
        point_estimates={**point, **point_extra},
        traces={"elbo": -np.asarray(losses)[kept], **parameter_path.as_traces(path)},
        num_grad_evals=fits * options["num_steps"] * options["num_particles"],
    )
