"""Kaiser 2021 Fig 6.6: the Bayesian belief about the optimal mountain-car policy after 1, 10 and 25 iterations of
policy search as inference (eqs. 6.3-6.9).

System (``zoo.data.mountaincar``; the thesis gives no constants, docs/sources/kaiser.md#policy-inference): Sutton &
Barto's mountain car with a continuous action in [-1, 1], reward -max(0.5 - x, 0) (maximum 0, as eq. 6.4 assumes),
starts x_0 ~ U(-0.6, -0.4), v_0 = 0. Dynamics model ("trained on random observations"): ``gp/regression`` (SE-ARD)
by ML-II (``ml2``, through ``inference.run``) on 200 random transitions, inputs ((x + 0.3) / 0.9, v / 0.07, a), target
the velocity change in units of 0.001; a model step draws the change from the GP's predictive (mean and variance)
and integrates it as the true system does (speed limit, walls). Policy: a GP prior on the latent pi(s) (SE, variance
1, lengthscale 0.3 on the scaled state), action tanh(pi(s)); q(pi) a whitened sparse GP on a 7 x 7 grid of inducing
states (``inference.applications.policy_inference``): the bound lambda E[J] - T KL(q || p) with lambda = 1 (6.9),
T = 150, 10 roll-outs per Adam step (lr 0.05). An "iteration" of the figure is 20 Adam steps (the thesis does not say;
quick: 4).

Claims: the search starts from an uninformed policy (every action plausible everywhere); it finds a successful
policy that swings back and forth in the valley to gain momentum; the critical regions become certain while other
regions stay uncertain. Measured in the true system with the posterior-mean policy from 200 start states, and by
the policy's posterior sd on the states its roll-outs visit against the states 0.3 (scaled units) or further from
all of them.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve, solve_triangular

import inference
from inference.applications import policy_inference as pinf
from paper_figures._claims import pyplot, write_results
from zoo import gp, regression
from zoo import sparse as sp
from zoo.data import mountaincar as mc
from zoo.kernels import SquaredExponential

DESCRIPTION = "Kaiser 2021 Fig 6.6: belief about the optimal mountain-car policy, policy search as inference"
SNAPSHOTS = (1, 10, 25)
CENTRE, HALF = jnp.array([-0.3, 0.0]), jnp.array([0.9, mc.V_MAX])
RATE = 1.0  # lambda of (6.8)
FAR = 0.3  # scaled-state distance from every visited state beyond which a state counts as unvisited


def settings(quick: bool) -> dict:
    return {"steps_per_iteration": 4 if quick else 20, "transitions": 200, "rate": RATE}


def scale(s):
    """States (..., 2) to the scaled box [-1, 1]^2."""
    return (s - CENTRE) / HALF


def dynamics_model(key, n: int):
    """ML-II GP on n random transitions; returns model_step(s, a, key) drawing from the GP's predictive."""
    s, a, dv = mc.random_transitions(key, n)
    X = jnp.concatenate([scale(s), a[:, None]], -1)
    y = dv / mc.POWER
    run = inference.run("gp/regression", {"X": np.asarray(X), "y": np.asarray(y)}, engine="ml2", num_chains=2, seed=0)
    est = run.point_estimates
    kernel, noise = regression.kernel_and_noise(est.isel(chain=int(np.nanargmax(np.asarray(est["log_likelihood"])))))
    L, _ = gp.cholesky_with_jitter(kernel(X) + noise * jnp.eye(n))
    alpha = cho_solve((L, True), y)

    def model_step(states, actions, k):
        inputs = jnp.concatenate([scale(states), actions[:, None]], -1)
        Ks = kernel(X, inputs)
        var = jnp.maximum(kernel.diag(inputs) - jnp.sum(solve_triangular(L, Ks, lower=True) ** 2, 0), 0.0)
        change = Ks.T @ alpha + jnp.sqrt(var) * jax.random.normal(k, var.shape)
        return mc.integrate(states, mc.POWER * change)

    return model_step, {"lengthscale": np.asarray(kernel.lengthscale).tolist(), "noise": float(noise)}


def prior() -> pinf.PolicyPrior:
    g = jnp.linspace(-1.0, 1.0, 7)
    Z = jnp.stack(jnp.meshgrid(g, g), -1).reshape(-1, 2)
    return pinf.PolicyPrior(SquaredExponential(1.0, jnp.array([0.3, 0.3])), Z)


def compute(quick: bool):
    s = settings(quick)
    model_step, model_fit = dynamics_model(jax.random.PRNGKey(0), s["transitions"])
    ps = pinf.InferenceSettings(steps=SNAPSHOTS[-1] * s["steps_per_iteration"] + 1, rate=s["rate"])
    p = prior()
    search = jax.jit(lambda key: pinf.policy_inference(key, p, model_step, mc.reward, scale, mc.start_states, ps))
    qs, values = search(jax.random.PRNGKey(1))
    beliefs = {i: sp.WhitenedQ(qs.mean[i * s["steps_per_iteration"]], qs.scale_tril[i * s["steps_per_iteration"]])
               for i in (0, *SNAPSHOTS)}  # fmt: skip
    final = beliefs[SNAPSHOTS[-1]]

    def mean_policy(q):
        return lambda states: jnp.tanh(pinf.policy_belief(q, p, scale(states))[0])

    starts = mc.start_states(jax.random.PRNGKey(2), 200)
    paths = np.asarray(mc.rollout(mean_policy(final), starts, ps.horizon))  # (T, E, 2)
    reached = (paths[..., 0] >= mc.GOAL).any(0)
    backwards = (paths[..., 0].min(0) < np.asarray(starts[:, 0]) - 0.1).mean()
    gx, gv = np.meshgrid(np.linspace(-1.0, 1.0, 41), np.linspace(-1.0, 1.0, 41))
    grid = jnp.asarray(np.stack([gx.ravel(), gv.ravel()], -1))
    visited = np.asarray(scale(jnp.asarray(paths.reshape(-1, 2))))
    distance = np.min(np.linalg.norm(np.asarray(grid)[:, None, :] - visited[None, ::10, :], axis=-1), axis=1)
    sds = {i: np.sqrt(np.asarray(pinf.policy_belief(q, p, grid)[1])) for i, q in beliefs.items()}
    on_path = np.sqrt(np.asarray(pinf.policy_belief(final, p, jnp.asarray(visited))[1]))
    prior_sd = float(np.sqrt(p.kernel.variance))
    first = SNAPSHOTS[0]
    rows = [
        {"figure": "6.6", "claim": "the search starts from an uninformed policy (all actions plausible everywhere)",
         "measured": f"policy sd over the state box after {first} iteration: mean {sds[first].mean():.3f}, min "
                     f"{sds[first].min():.3f} (prior sd {prior_sd:.1f})",
         "verdict": "PASS" if sds[first].min() > 0.8 * prior_sd else "FAIL"},
        {"figure": "6.6", "claim": "a successful policy is found (it reaches the goal)",
         "measured": f"posterior-mean policy after {SNAPSHOTS[-1]} iterations, true system, {ps.horizon} steps: "
                     f"{100 * reached.mean():.0f} % of 200 starts reach x >= 0.5",
         "verdict": "PASS" if reached.mean() >= 0.9 else "FAIL"},
        {"figure": "6.6", "claim": "... that oscillates in the valley to build momentum",
         "measured": f"{100 * backwards:.0f} % of the roll-outs first move over 0.1 away from the goal",
         "verdict": "PASS" if backwards >= 0.9 else "FAIL"},
        {"figure": "6.6", "claim": "critical regions become certain, other regions remain uncertain",
         "measured": f"policy sd after {SNAPSHOTS[-1]} iterations: on the visited states mean {on_path.mean():.3f}; "
                     f"on states {FAR} or further from them mean {sds[SNAPSHOTS[-1]][distance >= FAR].mean():.3f} "
                     f"({int((distance >= FAR).sum())} of {distance.size} grid states)",
         "verdict": "PASS" if on_path.mean() < 0.5 * prior_sd < sds[SNAPSHOTS[-1]][distance >= FAR].mean()
         else "FAIL"},
    ]  # fmt: skip
    numbers = {"bound_first": float(values[0]), "bound_last": float(values[-1]), "reached": float(reached.mean()),
               "dynamics_noise": model_fit["noise"]}  # fmt: skip
    data = {"p": p, "beliefs": beliefs, "grid": (gx, gv), "paths": paths, "values": np.asarray(values)}
    return rows, numbers, data


def plot(out: Path, data: dict) -> None:
    """Rows: iterations 1, 10, 25; columns: the policy's mean action tanh(mean) and its latent's sd over (x, v)."""
    plt = pyplot()
    gx, gv = data["grid"]
    grid = jnp.asarray(np.stack([gx.ravel(), gv.ravel()], -1))
    x = np.asarray(CENTRE[0] + HALF[0] * gx)
    v = np.asarray(CENTRE[1] + HALF[1] * gv)
    fig, axes = plt.subplots(len(SNAPSHOTS), 2, figsize=(10, 3.2 * len(SNAPSHOTS)), sharex=True, sharey=True)
    for row, i in enumerate(SNAPSHOTS):
        mean, var = pinf.policy_belief(data["beliefs"][i], data["p"], grid)
        for col, (values, title, cmap) in enumerate(((np.tanh(np.asarray(mean)), "mean action", "coolwarm"),
                                                    (np.sqrt(np.asarray(var)), "policy sd", "viridis"))):  # fmt: skip
            image = axes[row, col].pcolormesh(x, v, values.reshape(gx.shape), shading="auto", cmap=cmap)
            fig.colorbar(image, ax=axes[row, col])
            axes[row, col].set_title(f"iteration {i}: {title}", fontsize=9)
        for e in range(0, data["paths"].shape[1], 40):
            axes[row, 1].plot(data["paths"][:, e, 0], data["paths"][:, e, 1], color="w", lw=0.6)
    for ax in axes[-1]:
        ax.set_xlabel("position x")
    for ax in axes[:, 0]:
        ax.set_ylabel("velocity v")
    fig.tight_layout()
    fig.savefig(out / "kaiser_policy_inference.png", dpi=100)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows, numbers, data = compute(quick)
    plot(out, data)
    write_results(out, rows, numbers, __doc__, quick)
