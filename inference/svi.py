"""Stochastic variational inference (NumPyro SVI + optax) with a guide chosen by option.

Guides: ``normal`` (mean-field AutoNormal), ``mvn`` (full-rank AutoMultivariateNormal), ``delta`` (MAP,
AutoDelta), or ``model`` (the guide the model provides as its ``guide`` view). Adam with a cosine-decayed
learning rate, so the final iterates settle at the optimum instead of jittering around it. ``num_chains``
runs independent restarts (vmapped in one jit); each gives a chain of posterior draws from its guide, so
R-hat across restarts flags optima that disagree.
"""

from functools import cache

import jax
import optax
from numpyro import handlers
from numpyro.infer import SVI, Predictive, Trace_ELBO
from numpyro.infer.autoguide import AutoDelta, AutoMultivariateNormal, AutoNormal

from inference.api import EngineOutput, register_engine
from inference.program import conditioned_program, observed_args
from zoo.errors import IncompatibleEngineError, OptionError

AUTOGUIDES = {"normal": AutoNormal, "mvn": AutoMultivariateNormal, "delta": AutoDelta}
GUIDES = (*AUTOGUIDES, "model")


def make_guide(spec, model, kind: str):
    if kind in AUTOGUIDES:
        return AUTOGUIDES[kind](model)
    model_guide = spec.views["guide"]  # presence checked by the engine before anything is traced

    def guide(params, **observed):
        return model_guide(**observed)

    return guide


def latent_and_deterministic(model, params, observed) -> list[str]:
    """Names of the sites a posterior reports: unobserved samples and deterministic values."""
    trace = handlers.trace(handlers.seed(model, 0)).get_trace(params, **observed)
    return [
        name
        for name, site in trace.items()
        if site["type"] == "deterministic" or (site["type"] == "sample" and not site["is_observed"])
    ]


@cache
def svi_runner(spec, kind: str, num_steps: int, num_samples: int, num_particles: int, lr: float, final: float):
    """Jitted ``(keys, params, observed) -> (draws, losses, point)`` for all restarts."""
    model = conditioned_program(spec)
    schedule = optax.cosine_decay_schedule(lr, num_steps, alpha=final)

    def one_chain(key, params, observed):
        # Autoguides keep the prototype trace of their first use: a guide shared across traces (other data
        # shapes) would hand stale tracers to the new trace, so each trace builds its own.
        guide = make_guide(spec, model, kind)
        svi = SVI(model, guide, optax.adam(schedule), Trace_ELBO(num_particles=num_particles))
        k_init, k_draw = jax.random.split(key)
        state = svi.init(k_init, params, **observed)

        def step(state, _):
            return svi.update(state, params, **observed)

        state, losses = jax.lax.scan(step, state, None, length=num_steps)
        guide_params = svi.get_params(state)
        predictive = Predictive(
            model,
            guide=guide,
            params=guide_params,
            num_samples=num_samples,
            return_sites=latent_and_deterministic(model, params, observed),
        )
        draws = predictive(k_draw, params, **observed)
        point = guide.median(guide_params) if kind in AUTOGUIDES else guide_params
        return draws, losses, point

    return jax.jit(jax.vmap(one_chain, in_axes=(0, None, None)))


@register_engine(
    "svi",
    requires={"continuous"},
    defaults={
        "guide": "normal",
        "num_chains": 1,
        "num_steps": 3000,
        "num_samples": 1000,
        "num_particles": 1,
        "learning_rate": 0.02,
        "final_lr_fraction": 0.02,
        "params": {},
    },
    summary="Stochastic variational inference (NumPyro + optax Adam); guide normal | mvn | delta | model",
)
def svi(spec, dataset, key, timer, **options) -> EngineOutput:
    if options["guide"] not in GUIDES:
        raise OptionError(f"guide must be one of {', '.join(GUIDES)}, got {options['guide']!r}")
    if options["guide"] == "model" and "guide" not in spec.views:
        raise IncompatibleEngineError(f"model {spec.name!r} provides no guide; use guide='normal', 'mvn' or 'delta'.")
    if not 0.0 <= float(options["final_lr_fraction"]) <= 1.0:
        raise OptionError("final_lr_fraction must lie in [0, 1]")
    run_all = svi_runner(
        spec,
        options["guide"],
        options["num_steps"],
        options["num_samples"],
        options["num_particles"],
        float(options["learning_rate"]),
        float(options["final_lr_fraction"]),
    )
    keys = jax.random.split(key, options["num_chains"])
    draws, losses, point = timer.call(run_all, keys, options["params"], observed_args(dataset))
    return EngineOutput(
        posterior=draws,
        point_estimates=point,
        traces={"elbo": -losses},
        num_grad_evals=options["num_chains"] * options["num_steps"] * options["num_particles"],
    )
