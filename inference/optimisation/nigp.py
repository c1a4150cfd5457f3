"""The ``nigp`` engine: ML-II training of a noisy-input GP by NIGP's pseudo-likelihood (McHutchon 2014, procedure 2.3).

The model's ``noisy_input`` view supplies the maths (``zoo/nigp.py``: the data-scaled start, the approximate log
marginal likelihood of eq. 2.78 and the corrective variance Sigma~ of eqs. 2.75-2.77 from the slope GP of
eqs. 2.85-2.86); this module is the training loop. Pass 1 maximises eq. 2.78 with the slope GP K + sigma_out^2 I;
each later pass recomputes Sigma~ at the previous optimum, holds it fixed in the slope GP
(K + diag(Sigma~_prev) + sigma_out^2 I) and re-trains from there. mode "gp" is one pass of a plain GP (eq. 2.78 with
Sigma~ = 0; the input noise gets no gradient and stays at its start).

Optimiser: scipy L-BFGS-B on the log of every learned site value (all sites but those fixed by ``params``), with a
jitted value-and-gradient of the per-point negative log likelihood (the thesis used Rasmussen's ``minimize``; the
optimiser is unspecified), at most ``num_steps`` iterations per pass.

Output: point_estimates = the sites (lengthscale (1, D), variance (1,), noise (1,), input_noise (1, D)) and the final
training ``correction`` Sigma~(Y_in) (1, N) (``zoo.nigp.params_from`` turns them back into ``NIGPParams``);
posterior = the same sites as a single draw (chain 1, draw 1); traces = ``objective`` (the pass's eq. 2.78, total over
points, after each L-BFGS-B iteration) and ``pass`` (its pass index), passes concatenated.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import observed_args, resolve_params
from zoo.errors import OptionError, ZooError
from zoo.options import Option

Array = Any
MODES = ("gp", "nigpm", "nigpu")
NON_FINITE_LOSS = 1e30
MAX_RELATIVE_LENGTHSCALE = 1e4
GRADIENT_TOLERANCE = 1e-7


@program_cache
def objective(view, mode: str, shapes: tuple[tuple[str, tuple[int, ...]], ...]):
    """Jitted ``(flat, fixed, X, y, slope_extra) -> (loss, gradient)``: the per-point negative log likelihood of
    eq. 2.78 and its gradient w.r.t. the flat log values of the learned sites (in the order of ``shapes``); ``fixed``
    holds the other sites' values. The gradient flows through the slope GP, with ``slope_extra`` held fixed."""

    def loss(flat, fixed, X, y, slope_extra):
        values = {**fixed, **unflatten(flat, shapes)}
        return -view.log_likelihood(values, X, y, mode, slope_extra) / y.shape[0]

    return jax.jit(jax.value_and_grad(loss))


def unflatten(flat: Array, shapes: tuple[tuple[str, tuple[int, ...]], ...]) -> dict[str, Array]:
    """Site values from the flat log-parameters: exp, then cut in the order of ``shapes``."""
    values, out, start = jnp.exp(flat), {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        out[name] = values[start : start + size].reshape(shape)
        start += size
    return out


def flatten(values: dict[str, Array]) -> np.ndarray:
    return np.log(np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values.values()]))


def check_disjoint(options: dict) -> None:
    """A site is either fixed (params) or started from (init), not both (kinds and ranges are checked by ``run``)."""
    both = sorted(set(options["init"] or {}) & set(options["params"]))
    if both:
        raise OptionError(f"sites {both} are both fixed (params) and started from (init); give each in one of them")


def log_bounds(X: Array, shapes: tuple[tuple[str, tuple[int, ...]], ...]) -> list[tuple[None, float | None]]:
    """L-BFGS-B bounds of the flat log values: only the lengthscale (D,) or (E, D) has one.

    ARD switches an irrelevant input off by a lengthscale -> infinity; capped at MAX_RELATIVE_LENGTHSCALE input sds
    (already a constant function of that input) so that exp(log l) and moment matching stay finite."""
    cap = np.log(MAX_RELATIVE_LENGTHSCALE * np.maximum(np.std(np.asarray(X), 0), 1e-12))
    bounds = []
    for name, shape in shapes:
        if name == "lengthscale":  # (D,), or (E, D) for a multi-output model
            bounds += [(None, b) for b in np.broadcast_to(cap, shape).ravel()]
        else:
            bounds += [(None, None)] * int(np.prod(shape))
    return bounds


def train(view, X: Array, y: Array, start: dict, fixed: dict, mode: str, passes: int, num_steps: int, timer):
    """Procedure 2.3 over the sites in ``start`` (their starting values), the sites in ``fixed`` held at theirs.
    Returns the learned values, the final Sigma~(Y_in) (N,), the objective trace, the pass index per trace entry
    and the number of value-and-gradient evaluations."""
    shapes = tuple((name, tuple(np.shape(value))) for name, value in start.items())
    N = y.shape[0]
    bounds = log_bounds(X, shapes)
    flat = np.minimum(flatten(start), [np.inf if upper is None else upper for _, upper in bounds])
    fn = objective(view, mode, shapes)
    slope_extra = jnp.zeros(y.shape)  # (N,), or (N, E) for a multi-output model
    trace, pass_of, evaluations = [], [], 0
    for index in range(1 if mode == "gp" else passes):

        def value_and_grad(v, extra=slope_extra):
            value, grad = timer.call(fn, jnp.asarray(v), fixed, X, y, extra)
            if not (np.isfinite(value) and np.all(np.isfinite(grad))):
                # a step into a region where K_n is not numerically positive definite: report a huge loss so that
                # the line search backs off (as GPML's minimize halves such steps) instead of ending on NaN
                return NON_FINITE_LOSS, np.zeros_like(v)
            return float(value), np.asarray(grad, dtype=float)

        def record(intermediate_result):  # scipy passes the iterate's OptimizeResult to a parameter of this name
            trace.append(-N * intermediate_result.fun)

        result = scipy.optimize.minimize(
            value_and_grad,
            flat,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            callback=record,
            options={"maxiter": num_steps, "gtol": GRADIENT_TOLERANCE},
        )
        if not np.isfinite(result.fun) or result.fun >= NON_FINITE_LOSS:
            raise ZooError(f"NIGP {mode} training diverged (objective {result.fun}).")
        evaluations += int(result.nfev)
        pass_of += [index] * (len(trace) - len(pass_of))
        flat = result.x
        # Sigma~ at this pass's optimum: the next pass's slope GP holds it fixed (eq. 2.86, later passes)
        values = {**fixed, **unflatten(jnp.asarray(flat), shapes)}
        slope_extra = view.training_correction(values, X, y, mode, slope_extra)
    return unflatten(jnp.asarray(flat), shapes), slope_extra, np.asarray(trace), np.asarray(pass_of), evaluations


@register_engine(
    "nigp",
    requires={"noisy_input"},
    options={
        "mode": opt.choice("nigpm", MODES, "nigpm: posterior-mean slopes; nigpu: slope uncertainty too; gp: plain GP"),
        "passes": Option("int", 2, "slope passes (procedure 2.3)", minimum=1),
        "num_steps": opt.num_steps(500, doc="at most this many L-BFGS-B iterations per pass"),
        "init": Option("mapping", None, "starting site values (None: the view's data-scaled start)", optional=True),
        "params": opt.params({}),
    },
    summary="NIGP (McHutchon 2014): ML-II by L-BFGS-B on the slope-corrected likelihood, slopes re-fixed per pass",
)
def nigp(spec, dataset, key, timer, **options) -> EngineOutput:
    """mode: "nigpm" (posterior-mean slopes), "nigpu" (slope uncertainty too) or "gp" (plain GP, one pass).
    passes: slope passes (procedure 2.3); num_steps: at most this many L-BFGS-B iterations per pass; init: site
    values to start from instead of the view's data-scaled start (any subset of the sites); params: sites held fixed
    at the given values (e.g. a known input noise), the others learned. Deterministic: ``key`` is not used."""
    check_disjoint(options)
    mode, passes = options["mode"], options["passes"]
    view = spec.views["noisy_input"]
    observed = observed_args(dataset)
    X, y = observed["X"], observed["y"]
    fixed = dict(options["params"])
    init = view.initial(X, y)
    if options["init"] is not None:
        init |= resolve_params(spec, dataset, options["init"])
    start = {name: value for name, value in init.items() if name not in fixed}
    if not start:
        raise OptionError("params fixes every site: nothing is left to train")
    learned, correction, trace, pass_of, evaluations = train(
        view, X, y, start, fixed, mode, passes, options["num_steps"], timer
    )
    merged = {**fixed, **learned}
    values = {name: merged[name] for name in init}  # the view's site order
    return EngineOutput(
        posterior={name: value[None, None] for name, value in values.items()},
        point_estimates={**{name: value[None] for name, value in values.items()}, "correction": correction[None]},
        traces={"objective": trace[None], "pass": pass_of[None]},
        num_grad_evals=evaluations,
    )
