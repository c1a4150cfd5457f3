"""Wet-Chicken policy search (Kaiser 2021, eqs. 5.10-5.13): iterations per second of the pathwise policy search in
a trained DAGP transition model, a GP (K = 1) and the true simulator, and NFQ's time per run.

Usage: ``python -m benchmarks.wetchicken_policy_search [--n 250] [--fit-steps 200] [--iterations 500]
[--repeats 3]``; pin it (``/tmp/oncore`` or ``taskset -c 0``). Times are CPU seconds of the calling process
(``time.process_time``, best of ``--repeats`` after a compiling call): robust on a shared core, where wall time is
not. The speed of an iteration does not depend on how well the model is trained, so a short fit is enough.

Setting: the model of paper_figures/kaiser_wetchicken.py (two outputs, SE flows, heteroscedastic noise GPs for
K >= 2, SE assignment GPs, M = 50 inducing inputs per GP), the 2 x 20 ReLU policy, T = 5, P = 20 roll-outs
per iteration (one iteration: P roll-outs of T sampled transitions, their gradient, one Adam step). NFQ: 20
iterations of 300 Adam steps on the N transitions. Kaiser reports no timings.
"""

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import inference
import zoo
from inference.applications import nfq, policy_search
from zoo import dagp
from zoo.dagp import transition
from zoo.data import wetchicken as wc

STATE_SCALE = jnp.array([wc.LENGTH, wc.WIDTH])
POLICY_SIZES = (2, 20, 20, 2)


def best_cpu_time(fn, repeats: int) -> float:
    jax.block_until_ready(fn())  # compile
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        jax.block_until_ready(fn())
        best = min(best, time.process_time() - start)
    return best


def trained_step(observed: dict, num_modes: int, fit_steps: int):
    """A short fit of the figure's dynamics model; returns step(s, a, key) -> s' (eq. 5.9)."""
    spec = zoo.get("dagp", num_modes=num_modes, outputs=2, heteroscedastic=num_modes > 1, noise_floor=1e-4,
                   mode_init="levels", init_spread=0.0, temperature=0.5)  # fmt: skip
    idata = inference.run(spec, observed, engine="svi", guide="model", num_steps=fit_steps, learning_rate=0.01,
                          num_samples=1, seed=0)  # fmt: skip
    fit = dagp.fit_from(idata, dagp.config_of(spec))
    return lambda s, a, key: transition.sample_next(fit, jnp.concatenate([s, a], -1), key)


def search_rate(step, pool, iterations: int, repeats: int) -> float:
    """Policy-search iterations per CPU second."""
    settings = policy_search.PolicySettings(iterations=iterations)
    search = jax.jit(partial(policy_search.policy_search, step=step, reward=wc.reward, settings=settings,
                             sizes=POLICY_SIZES, state_scale=STATE_SCALE))  # fmt: skip
    return iterations / best_cpu_time(lambda: search(jax.random.PRNGKey(1), initial_pool=pool), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=250)
    parser.add_argument("--fit-steps", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    observed = dict(dagp.simulate_wet_chicken(jax.random.PRNGKey(0), args.n, 50).observed)
    X, s_next = jnp.asarray(observed["X"]), jnp.asarray(observed["y"])
    pool = X[:, :2]
    print(f"| transition model | policy-search iterations / CPU s (N = {args.n}, T = 5, P = 20) |\n|---|---|")
    print(f"| true simulator (eqs. 5.1-5.2) | {search_rate(wc.step, pool, args.iterations, args.repeats):.0f} |")
    for k, name in ((1, "GP (K = 1)"), (2, "DAGP (K = 2)")):
        step = trained_step(observed, k, args.fit_steps)
        print(f"| {name}, M = 50 | {search_rate(step, pool, args.iterations, args.repeats):.0f} |")

    settings = nfq.NfqSettings()
    run = jax.jit(partial(nfq.fitted_q_iteration, settings=settings, state_scale=STATE_SCALE))
    seconds = best_cpu_time(lambda: run(jax.random.PRNGKey(0), X[:, :2], X[:, 2:], s_next, wc.reward(X[:, :2])),
                            args.repeats)  # fmt: skip
    print(f"NFQ ({settings.iterations} x {settings.fit_steps} Adam steps, N = {args.n}): {seconds:.2f} s CPU per run")


if __name__ == "__main__":
    main()
