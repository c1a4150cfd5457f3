"""Multi-path Pathfinder (Zhang, Carpenter, Gelman & Vehtari 2022) with importance resampling via BlackJAX
(docs/gym.md#pathfinder).

Each of ``num_paths`` paths runs L-BFGS from its own start (``blackjax.vi.pathfinder.approximate``: Pathfinder's
Algorithm 1, the Gaussian approximation along the optimisation path with the L-BFGS inverse Hessian, keeping the
iterate of highest ELBO, estimated with ``num_elbo_draws`` draws) and draws ``draws_per_path`` from its
approximation; the pooled draws are resampled with Pareto-smoothed importance weights (PSIS, BlackJAX's
``multipathfinder`` ``sample``: Algorithm 2), ``num_samples`` with replacement, reported as one chain. The PSIS
shape k-hat is recorded (``pareto_k``; above 0.7 the resampled draws are not to be trusted).

The same paths (``pooled_positions``) start the chains of ``nuts``, ``mams`` and ``chees`` under ``init="pathfinder"``
(``chain_starts``, docs/gym.md#pathfinder-init), with this engine's default options and one draw per chain.

Workaround (BlackJAX's ``multi_approximate`` is not called): it vmaps the paths, and under ``vmap`` the L-BFGS loop's
``lax.cond`` (iterate or stop once converged) becomes a select that computes every path's gradient until the slowest
path stops, and its zoom line search a loop that runs until the longest search ends. The paths here run one after
another (``lax.map``) through the same per-path functions (``approximate``, ``sample``), and the pooled state is
BlackJAX's ``MultipathfinderState``, resampled by BlackJAX's own PSIS resampling.

Gradient evaluations: L-BFGS's line search evaluates the gradient a data-dependent number of times that BlackJAX does
not report, so they are counted as they happen: the log density is wrapped in a ``custom_vjp`` whose forward pass
(run once per gradient evaluation, never for a value alone: the ELBO and importance weights need values only) tells a
host counter through ``jax.debug.callback``.
"""

import threading
from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.vi.multipathfinder import MultipathfinderState, psis_weights

from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.program import conditioned_program, observed_args
from inference.mcmc import gym_common as common
from zoo.options import Option

RUNNER_OPTIONS = {"num_paths", "num_samples", "params", "init_radius"}


class GradientCounter:
    """Host-side count of gradient evaluations made by a running program (``counted``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self, _z) -> None:
        with self._lock:
            self.count += 1


def counted(logdensity, counter: GradientCounter):
    """``logdensity`` whose every gradient evaluation calls ``counter.add`` once (values alone are not counted)."""

    @jax.custom_vjp
    def fn(z):
        return logdensity(z)

    def forward(z):
        value, pullback = jax.vjp(logdensity, z)
        # z is passed so that under a vmap the callback runs once per batch element, not once per batch.
        jax.debug.callback(counter.add, jax.tree.leaves(z)[0])
        return value, pullback

    def backward(pullback, g):
        return pullback(g)

    fn.defvjp(forward, backward)
    return fn


def pooled_positions(key, logdensity, z0, num_samples: int, options: dict):
    """Multi-path Pathfinder on ``logdensity`` from the path starts ``z0`` (each leaf (P, ...)): ``num_samples``
    unconstrained positions (each leaf (num_samples, ...)) resampled by PSIS from the pooled paths, and k-hat."""
    num_paths = jax.tree.leaves(z0)[0].shape[0]
    k_paths, k_draws, k_resample = jax.random.split(key, 3)

    def one_path(args):
        k_path, k_draw, start = args
        state, _ = blackjax.vi.pathfinder.approximate(
            k_path,
            logdensity,
            start,
            options["num_elbo_draws"],
            maxiter=options["maxiter"],
            maxcor=options["maxcor"],
            ftol=options["ftol"],
            gtol=options["gtol"],
        )
        draws, logq = blackjax.vi.pathfinder.sample(k_draw, state, options["draws_per_path"])
        logp = jax.vmap(logdensity)(draws)
        return state, draws, logp, logq

    keys = (jax.random.split(k_paths, num_paths), jax.random.split(k_draws, num_paths))
    states, pool, logp, logq = jax.lax.map(one_path, (*keys, z0))
    pooled = MultipathfinderState(path_states=states, samples=pool, logp=logp, logq=logq)
    positions = blackjax.multipathfinder(logdensity).sample(k_resample, pooled, num_samples)
    _, pareto_k = psis_weights(pooled)
    return positions, pareto_k


@program_cache
def sampler(model, num_samples: int, static: tuple):
    """``(counter, jitted (key, z0 (P, ...), params, observed) -> (draws (1, S, ...), stats (1, S)))``."""
    options = dict(static)
    counter = GradientCounter()

    def run(key, z0, params, observed):
        logdensity = counted(common.logdensity(model, params, observed), counter)
        positions, pareto_k = pooled_positions(key, logdensity, z0, num_samples, options)
        draws = common.constrained(model, params, observed, positions)
        stats = {"lp": jax.vmap(logdensity)(positions), "pareto_k": jnp.full((num_samples,), pareto_k)}
        return jax.tree.map(lambda x: x[None], (draws, stats))

    return counter, jax.jit(run)


def run_counted(counter: GradientCounter, program, timer, *args):
    """``timer.call(program, *args)`` and the gradient evaluations it made (every callback waited for)."""
    with counter._lock:
        counter.count = 0
    out = timer.call(program, *args)
    jax.block_until_ready(out)
    jax.effects_barrier()  # every callback of this run has reached the counter
    return out, counter.count


@program_cache
def _initialiser(model, num_chains: int, static: tuple):
    """``(counter, jitted (key, z0 (P, ...), params, observed) -> (starts (C, ...), k-hat))``."""
    options = dict(static)
    counter = GradientCounter()

    def run(key, z0, params, observed):
        logdensity = counted(common.logdensity(model, params, observed), counter)
        return pooled_positions(key, logdensity, z0, num_chains, options)

    return counter, jax.jit(run)


def pathfinder_starts(model, key, num_chains: int, params, observed, radius: float, timer):
    """``init="pathfinder"`` (docs/gym.md#pathfinder-init): one unconstrained start per chain (each leaf (C, ...)),
    drawn by PSIS resampling from multi-path Pathfinder run with this engine's default options, its paths starting
    uniform on (-radius, radius); also the gradient evaluations it made and its k-hat. The draws are resampled
    with replacement, so two chains may share a start (likely when k-hat is large)."""
    defaults = {name: option.default for name, option in PATH_OPTIONS.items()}
    k_paths, k_run = jax.random.split(key)
    z0 = common.starts(model, k_paths, defaults["num_paths"], params, observed, radius, timer)
    static = tuple(sorted((k, v) for k, v in defaults.items() if k != "num_paths"))
    counter, program = _initialiser(model, num_chains, static)
    (starts, pareto_k), grads = run_counted(counter, program, timer, k_run, z0, params, observed)
    return starts, grads, float(pareto_k)


def chain_starts(init: str, model, key, num_chains: int, params, observed, radius: float, timer):
    """The chains' starts for the ``init`` option (``inference.core.options.chain_init``): each leaf (C, ...), the
    gradient evaluations spent finding them (counted in the run's ``num_grad_evals``; none for the uniform search,
    as before) and the per-draw statistics that record them (``init_statistics``)."""
    if init == "pathfinder":
        z0, grads, pareto_k = pathfinder_starts(model, key, num_chains, params, observed, radius, timer)
        return z0, grads, init_statistics(grads, pareto_k)
    return common.starts(model, key, num_chains, params, observed, radius, timer), 0, {}


def init_statistics(grads: int, pareto_k: float) -> dict[str, float]:
    """What ``init="pathfinder"`` records per draw: Pathfinder's gradients (all chains' starts together) and k-hat."""
    return {"init_grad_evals": grads, "init_pareto_k": pareto_k}


# The options of the paths (shared by the engine and by init="pathfinder", which uses their defaults).
PATH_OPTIONS = {
    "num_paths": Option("int", 4, "independent L-BFGS paths, each from its own start", minimum=1),
    "draws_per_path": Option("int", 1000, "draws from each path's Gaussian approximation, pooled", minimum=2),
    "num_elbo_draws": Option("int", 50, "draws per iterate to estimate the ELBO along a path", minimum=1),
    "maxiter": Option("int", 1000, "L-BFGS iterations per path, at most (Stan's default)", minimum=1),
    "maxcor": Option("int", 10, "L-BFGS history length (rank of the inverse-Hessian update)", minimum=1),
    # Stan's Pathfinder stops at a relative decrease of 1e4 x machine epsilon; BlackJAX's 1e-5 stops a GP latent's
    # path after a handful of iterations, before the inverse Hessian has its curvature (PSIS k-hat 0.87 there).
    "ftol": Option("float", 1e-12, "L-BFGS stops when the relative decrease of -log p falls below this", above=0.0),
    "gtol": Option("float", 1e-8, "L-BFGS stops when the gradient's norm falls below this", above=0.0),
}


@register_engine(
    "pathfinder",
    requires={"continuous"},
    options={
        **PATH_OPTIONS,
        "num_samples": Option("int", 1000, "draws resampled (with replacement) from the pooled paths", minimum=1),
        "params": common.common_options(1, 1)["params"],
        "init_radius": common.common_options(1, 1)["init_radius"],
    },
    summary="Multi-path Pathfinder (BlackJAX) with PSIS importance resampling of the pooled draws",
)
def pathfinder(spec, dataset, key, timer, **options: Any) -> EngineOutput:
    model = conditioned_program(spec)
    params, observed = options["params"], observed_args(dataset)
    k_init, k_run = jax.random.split(key)
    z0 = common.starts(model, k_init, options["num_paths"], params, observed, options["init_radius"], timer)
    counter, program = sampler(model, options["num_samples"], common.static_options(options, RUNNER_OPTIONS))
    (posterior, stats), grads = run_counted(counter, program, timer, k_run, z0, params, observed)
    # Every gradient is spent before the first draw (the draws are resampled from the finished paths).
    stats = {**stats, "grad_evals": jnp.full(stats["lp"].shape, grads)}
    return EngineOutput(posterior=posterior, sample_stats=stats, num_grad_evals=grads)
