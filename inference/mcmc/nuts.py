"""NUTS and HMC via BlackJAX on a NumPyro program (checked against conjugate answers:
docs/architecture.md#exactness).

The program's potential on NumPyro's unconstrained space (log-Jacobian included) is BlackJAX's log density.
Per chain: one ``lax.scan`` whose first steps adapt the step size and mass matrix (BlackJAX's window adaptation,
``stan_adaptation``) and whose later steps sample with the adapted values; the chains run inside one ``jit`` that
is compiled once per (model, options, shapes) and reused across seeds and data of the same shapes (the start search
included). Draws are mapped back to constrained values (deterministic sites included).

Chains (``chain_method``, docs/performance.md#nuts; the default ``auto`` is ``sequential`` on a CPU and
``vectorized`` on an accelerator, docs/performance.md#device-defaults): ``sequential`` runs them one after another
in that program (``lax.map``); ``vectorized`` vmaps them in lockstep. A NUTS tree's length varies from step to step
and chain to chain, and under ``vmap`` every chain's ``while_loop`` runs until the longest tree is done (and a
``lax.cond`` in the model, such as the jitter retry of ``zoo.gp.cholesky_with_jitter``, computes both branches), so
on a CPU the lockstep costs about twice the gradients' time; on a GPU, where the batched gradient is nearly free, it
is the better choice.
"""

from typing import Any

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.metric_recipes import lookup_recipe
from blackjax.adaptation.staged_adaptation import _make_engine, build_schedule
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import constrain_fn, potential_energy

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, observed_args
from inference.mcmc.pathfinder import init_statistics, pathfinder_starts
from inference.mcmc.starts import initial_positions
from zoo.options import Option

__all__ = ["COMMON_OPTIONS", "RUNNER_OPTIONS", "hmc", "nuts", "sampler", "stan_adaptation"]

COMMON_OPTIONS = {
    **opt.adaptive_mcmc(),
    "dense_mass": Option("bool", False, "adapt a dense mass matrix (else diagonal)"),
    "init_radius": Option("float", 2.0, "chains start uniform on (-r, r) in the unconstrained space", above=0.0),
    "chain_method": opt.chain_method(),
}
# init="pathfinder" (docs/gym.md#pathfinder-init) for nuts only: hmc keeps the uniform starts.
NUTS_OPTIONS = {**COMMON_OPTIONS, "init": opt.chain_init()}
# Options of the runner, not of BlackJAX's kernel or its adaptation.
RUNNER_OPTIONS = {"num_chains", "num_warmup", "num_samples", "params", "init_radius", "chain_method", "init"}


def stan_adaptation(dense_mass: bool, target_accept: float):
    """BlackJAX's window adaptation (Stan's schedule: step size by dual averaging, mass matrix by Welford over
    doubling windows) as ``(init, update, final)`` functions rather than as a ``run`` that owns its own scan.

    ``blackjax.window_adaptation(...).run`` scans the warm-up by itself, so warm-up followed by a sampling scan
    compiles the whole NUTS kernel (its tree-building ``while_loop`` and the model's gradient) twice. These are the
    same functions ``window_adaptation`` builds (its recipe, its engine), so one scan can drive both phases
    (``sampler``): one copy of the kernel to compile instead of two, the same draws (``tests/test_nuts.py`` checks
    them against ``window_adaptation`` followed by the tuned kernel; compile times in
    docs/performance.md#nuts-one-scan). ``_make_engine`` is private in BlackJAX 1.7; the test catches a release that
    changes it.
    """
    recipe = "welford_dense" if dense_mass else "welford_diag"
    core = lookup_recipe(recipe).build_core()
    return _make_engine(core, target_acceptance_rate=target_accept)


@program_cache
def sampler(model, algorithm: str, num_warmup: int, num_samples: int, static: tuple):
    """Chains ``((keys (C,), z0 (C, ...)), params, observed) -> (constrained draws (C, S, ...), stats (C, S),
    warmup_steps (C,), start_gradient_finite (C,))`` (``inference.core.chains``): each chain starts from its own key and
    unconstrained point.

    One ``lax.scan`` of num_warmup + num_samples kernel steps: the first num_warmup adapt the step size and mass
    matrix (``stan_adaptation``), the rest use the adapted values. The keys are those of a warm-up scan on one half
    of the chain's key followed by a sampling scan on the other half.
    """
    options = dict(static)
    target_accept = options.pop("target_accept")
    dense_mass = options.pop("dense_mass")
    family = getattr(blackjax, algorithm)
    kernel = family.build_kernel()
    adapt_init, adapt_update, adapt_final = stan_adaptation(dense_mass, target_accept)

    def one_chain(start, params, observed):
        key, z0 = start
        schedule = build_schedule(num_warmup)  # built in the trace: a constant of the program, not an eager op

        def logdensity(z):
            return -potential_energy(model, (params,), observed, z)

        def one_step(carry, xs):
            state, adaptation = carry
            index, k = xs
            warming = index < num_warmup
            tuned_step_size, tuned_imm = adapt_final(adaptation)
            step_size = jnp.where(warming, adaptation.step_size, tuned_step_size)
            imm = jnp.where(warming, adaptation.inverse_mass_matrix, tuned_imm)
            state, info = kernel(k, state, logdensity, step_size, imm, **options)
            stage = schedule[jnp.minimum(index, num_warmup - 1)]
            adaptation = jax.lax.cond(
                warming,
                lambda a: adapt_update(a, stage, state.position, state.logdensity_grad, info.acceptance_rate, index),
                lambda a: a,
                adaptation,
            )
            stats = {
                "diverging": info.is_divergent,
                "n_steps": info.num_integration_steps,
                "acceptance_rate": info.acceptance_rate,
                "energy": info.energy,
                "lp": state.logdensity,
                "step_size": step_size,
            }
            return (state, adaptation), (state.position, stats)

        k_warm, k_sample = jax.random.split(key)
        keys = jnp.concatenate([jax.random.split(k_warm, num_warmup), jax.random.split(k_sample, num_samples)])
        start = (family.init(z0, logdensity), adapt_init(z0, 1.0))
        steps = jnp.arange(num_warmup + num_samples)
        _, (positions, stats) = jax.lax.scan(one_step, start, (steps, keys))
        warmup_steps = jnp.sum(stats["n_steps"][:num_warmup])
        positions, stats = jax.tree.map(lambda x: x[num_warmup:], (positions, stats))
        constrain = jax.vmap(lambda z: constrain_fn(model, (params,), observed, z, True))
        start_gradient_finite = jnp.all(jnp.isfinite(ravel_pytree(start[0].logdensity_grad)[0]))
        return constrain(positions), stats, warmup_steps, start_gradient_finite

    return vmapped_chains(one_chain)


def _run(algorithm: str, spec, dataset, key, timer, **options: Any) -> EngineOutput:
    model = conditioned_program(spec)
    params, observed = options["params"], observed_args(dataset)
    static = tuple(sorted((k, v) for k, v in options.items() if k not in RUNNER_OPTIONS))
    chains = sampler(model, algorithm, options["num_warmup"], options["num_samples"], static)
    k_init, k_run = jax.random.split(key)
    radius = float(options["init_radius"])
    keys = jax.random.split(k_run, options["num_chains"])
    sequential = options["chain_method"] == "sequential"
    if options.get("init", "uniform") == "pathfinder":
        return _run_from_pathfinder(chains, key, timer, options, model, params, observed, keys, sequential)
    # The start search checks the potential; the sampler's first state has the gradient too, so its finiteness is
    # checked there, and only a start with an infinite gradient pays for NumPyro's search with the gradient: it
    # draws the same points until then, so both give the same starts (docs/performance.md#nuts-start).
    for check_gradient in (False, True):
        z0 = initial_positions(model, k_init, options["num_chains"], params, observed, radius, timer, check_gradient)
        posterior, stats, warmup_steps, finite = chains.run(timer, (keys, z0), params, observed, sequential=sequential)
        if np.all(np.asarray(finite)):
            break
    # Host-side bookkeeping in NumPy: a jnp call on results compiles a program (docs/performance.md#first-call-eager)
    return EngineOutput(
        posterior=posterior,
        sample_stats=stats,
        num_grad_evals=int(np.sum(np.asarray(stats["n_steps"])) + np.sum(np.asarray(warmup_steps))),
    )


def _run_from_pathfinder(chains, key, timer, options, model, params, observed, keys, sequential) -> EngineOutput:
    """NUTS from starts drawn by multi-path Pathfinder; its gradients are added to the run's count."""
    k_init, _ = jax.random.split(key)
    radius = float(options["init_radius"])
    z0, init_grads, pareto_k = pathfinder_starts(model, k_init, options["num_chains"], params, observed, radius, timer)
    posterior, stats, warmup_steps, finite = chains.run(timer, (keys, z0), params, observed, sequential=sequential)
    if not np.all(
        np.asarray(finite)
    ):  # Pathfinder's draws have a finite density; a gradient need not be (uniform retries)
        raise FloatingPointError("nuts: a start drawn by Pathfinder has a non-finite gradient; use init='uniform'")
    stats = {**stats, **{k: np.full(stats["lp"].shape, v) for k, v in init_statistics(init_grads, pareto_k).items()}}
    return EngineOutput(
        posterior=posterior,
        sample_stats=stats,
        num_grad_evals=init_grads + int(np.sum(np.asarray(stats["n_steps"])) + np.sum(np.asarray(warmup_steps))),
    )


@register_engine(
    "nuts",
    requires={"continuous"},
    options={
        **NUTS_OPTIONS,
        "max_num_doublings": Option("int", 10, "tree depth limit: at most 2^d - 1 leapfrog steps", minimum=1),
    },
    summary="No-U-Turn sampler (BlackJAX) with window adaptation; chains in one jit (sequential or vmapped)",
)
def nuts(spec, dataset, key, timer, **options) -> EngineOutput:
    return _run("nuts", spec, dataset, key, timer, **options)


@register_engine(
    "hmc",
    requires={"continuous"},
    options={**COMMON_OPTIONS, "num_integration_steps": Option("int", 16, "leapfrog steps per move", minimum=1)},
    summary="Static-path Hamiltonian Monte Carlo (BlackJAX) with window adaptation",
)
def hmc(spec, dataset, key, timer, **options) -> EngineOutput:
    return _run("hmc", spec, dataset, key, timer, **options)
