"""PILCO policy evaluation: moment matching against particles at equal accuracy, and one policy optimisation.

Usage: ``python -m benchmarks.pilco_evaluation [--particles 100 1000 10000] [--reference 20000] [--repeats 3]``;
pin it (``taskset -c 0 ...``). Times are CPU seconds of the calling process (``time.process_time``, best of
``--repeats`` after a compiling call): robust on a shared core, where wall time is not.

Setting: the cart-pole swing-up (Table 4.1: 50 steps), the AR-GP learned from 4 random roll-outs
(``inference.applications.pilco.learn_dynamics``), PILCO's random RBF policy (50 basis functions). For each evaluation:
the
value and gradient of the predicted total cost. Accuracy: the particle estimate's standard error is
sd(per-particle total cost) / sqrt(N); moment matching's error is its distance from a ``--reference``-particle
estimate (its Gaussian approximation; the reference's own SE is printed). "Equal accuracy" is the N at which the
particle SE equals that distance; its time is interpolated linearly in N between the measured counts.
McHutchon reports no timings.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import zoo  # noqa: F401  (float64)
from inference.applications import pilco
from inference.applications.pilco import cost as costs
from inference.applications.pilco import plant, policies
from inference.applications.pilco import trajectory as tr


def cpu_time(fn, *args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))  # compile
    best = np.inf
    for _ in range(repeats):
        t = time.process_time()
        jax.block_until_ready(fn(*args))
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--reference", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    task = plant.SwingUp()
    trials = []
    for k in jax.random.split(jax.random.PRNGKey(0), 4):
        trials.append(pilco.rollout(task, None, k, len(trials), trials))
    dyn = pilco.learn_dynamics("ar-gp", plant.trials_as_data(trials))
    m0, S0 = jnp.asarray(task.m0), jnp.asarray(task.S0)
    policy = policies.init_rbf(jax.random.PRNGKey(1), m0, S0)
    flat, unravel = jax.flatten_util.ravel_pytree(policy)

    mm = jax.jit(
        jax.value_and_grad(lambda f: tr.expected_total_cost(dyn, unravel(f), task.u_max, task.cost, m0, S0, 50))
    )
    mm_value = float(mm(flat)[0])
    mm_time = cpu_time(mm, flat, repeats=args.repeats)

    def per_particle_totals(noise):
        xs, _ = tr.particle_trajectory(dyn, policy, task.u_max, task.cost, m0, S0, noise)
        return jnp.sum(jax.vmap(jax.vmap(costs.cost_at, in_axes=(None, 0)), in_axes=(None, 0))(task.cost, xs), 0)

    ref = np.asarray(jax.jit(per_particle_totals)(tr.particle_noise(jax.random.PRNGKey(2), args.reference, 50, 4)))
    ref_mean, ref_se, sd = ref.mean(), ref.std() / np.sqrt(len(ref)), ref.std()
    mm_error = abs(mm_value - ref_mean)
    rows = []
    for n in args.particles:
        noise = tr.particle_noise(jax.random.PRNGKey(3), n, 50, 4)
        pc = jax.jit(
            jax.value_and_grad(
                lambda f, noise=noise: tr.particle_total_cost(dyn, unravel(f), task.u_max, task.cost, m0, S0, noise)
            )
        )
        rows.append((n, float(pc(flat)[0]), sd / np.sqrt(n), cpu_time(pc, flat, repeats=args.repeats)))
    n_equal = (sd / max(mm_error, 1e-12)) ** 2
    ns, times = np.array([r[0] for r in rows]), np.array([r[3] for r in rows])
    t_equal = float(np.interp(n_equal, ns, times)) if ns[0] <= n_equal <= ns[-1] else float("nan")

    print(f"reference: {args.reference} particles, total cost {ref_mean:.3f} +- {ref_se:.3f} (SE)")
    print(f"moment matching: total cost {mm_value:.3f}, error {mm_error:.3f}, value+grad {mm_time * 1e3:.1f} ms CPU")
    print("| particles | total cost | SE | value+grad CPU ms |\n|---|---|---|---|")
    for n, v, se, t in rows:
        print(f"| {n} | {v:.3f} | {se:.3f} | {t * 1e3:.1f} |")
    print(f"equal accuracy (SE = MM error): N = {n_equal:.0f} particles, {t_equal * 1e3:.1f} ms CPU (interpolated)")

    t = time.process_time()
    fit = pilco.optimise_policy(dyn, policy, task, max_steps=50)
    print(
        f"one policy optimisation (50 L-BFGS iterations max, {fit.steps} run, compile included): "
        f"{time.process_time() - t:.1f} s CPU; predicted total cost {fit.loss:.2f}"
    )


if __name__ == "__main__":
    main()
