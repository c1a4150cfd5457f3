"""McHutchon (2014) E3.4 / E3.7, Figs 3.22 and 3.34: E-steps on random GP systems of D = 1..10 dimensions.

Score: log density per data point (per state dimension) of the true latents under each smoothing posterior; shown as
pairwise differences per system (mean over its test trajectories), one box per D. Methods: ADS (GP-ADF + RTS-like
smoother), MC-EP and IS-EP (``inference.gaussian.sampling_ep``: self-normalised weights, damping 0.5, ESS skip at 1 %,
4 EP iterations), MCMC-EP (full runs only: ``inference.gaussian.mcmc_ep``'s random-walk Metropolis estimator in the
same EP, as many chain states as EP samples, c = 2.38^2 / D; docs/sources/mchutchon.md#mcmc-ep) and PGAS (fully
adapted CSMC with ancestor sampling, ``inference.particles.pgas.pgas_chain``; its draws summarised per step by a
Gaussian fit -- the 3-component mixture of the kink script is 1-D only).

The model is EXACTLY the random system (no learning): each random system is a GP posterior on 10 random pairs with
kernel noise (``zoo.data.ssm_systems.random_gp_transition``), so the GP-SSM's transition predictor is
``zoo.moments.exact_gp_predictor`` on those 10 pairs with that kernel noise (zero mean function) -- the same mean and
variance as ``random_gp_predict`` up to the relative jitter of ``zoo.gp.cholesky`` (checked at run time: max
|difference| ~ 5e-5, reported as "predictor mismatch"). The ``gpssm/sparse-random`` pseudo-point model cannot
reproduce it: its pseudo-point GP is noise-free, so its variance differs. The state-space view of the sparse GP-SSM
is used with this predictor plugged into theta (what PGAS needs).

Sizes (reduced for 2 shared CPU cores): full: D = 1..10, 3 systems per D (thesis 10), 5 test trajectories of 20
steps per system, EP with 1,000 samples (thesis: 10,000), PGAS 100 particles x 100 samples after 20 warm-up sweeps
(thesis Fig 3.34: up to 10,000 x 1,000); quick (a smoke test, compile-bound): D = 2, 1 system, 2 trajectories,
EP 500 samples x 2 iterations, PGAS 50 x 50. Systems of one D are vmapped, so each method compiles once per D.
"""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from inference.files.tables import read_published, write_comparison, write_csv
from inference.gaussian import kalman, mcmc_ep
from inference.gaussian import sampling_ep as sep
from inference.gaussian.moment_matching import adf_forward
from inference.particles import pgas
from zoo import gpssm, moments
from zoo.data import ssm_systems
from zoo.gp import mvn_logpdf_chol
from zoo.gp_ssm_view import GPSSMParams

DESCRIPTION = "McHutchon 2014 Figs 3.22/3.34 (E3.4, E3.7): E-steps ADS, MC-, IS-, MCMC-EP, PGAS on random GP systems"
PAIRS = [("MC-EP", "ADS"), ("IS-EP", "ADS"), ("IS-EP", "MC-EP"), ("PGAS", "ADS"), ("PGAS", "IS-EP")]
MCMC_PAIR = ("IS-EP", "MCMC-EP")  # plotted when MCMC-EP ran


def settings(quick: bool) -> dict:
    if quick:
        return {
            "dims": (2,),
            "systems": 1,
            "K": 2,
            "ep_samples": 500,
            "ep_iters": 2,
            "P": 50,
            "S": 50,
            "warmup": 10,
            "mcmc_ep": False,  # its compile (~30-50 s) alone would exceed the quick budget
        }
    return {
        "dims": tuple(range(1, 11)),
        "systems": 3,
        "K": 5,
        "ep_samples": 1000,
        "ep_iters": 4,
        "P": 100,
        "S": 100,
        "warmup": 20,
        "mcmc_ep": True,
    }


def system_theta(system: dict, D: int) -> dict:
    """theta of the sparse GP-SSM's state-space view with the random system's exact GP predictor plugged in."""
    X, Y = jnp.asarray(system["train_inputs"]), jnp.asarray(system["train_targets"])
    predictor = moments.exact_gp_predictor(
        X, Y, system["signal_var"], system["lengthscale"], system["kernel_noise_var"]
    )
    g = GPSSMParams(
        pseudo_inputs=X,
        pseudo_targets=Y.T,
        lengthscale=jnp.asarray(system["lengthscale"]),
        signal_var=jnp.asarray(system["signal_var"]),
        process_var=jnp.asarray(system["process_var"]),
        mean_A=jnp.zeros((D, D)),
        mean_b=jnp.zeros(D),
        C=jnp.eye(D),
        obs_var=jnp.asarray(system["obs_var"]),
        m0=jnp.zeros(D),
        P0=jnp.eye(D),
    )
    return {"gpssm": g, "predictor": predictor, "mean_fn": moments.LinearMean(jnp.zeros((D, D)), jnp.zeros(D))}


def check_predictor(system: dict, theta: dict, D: int) -> float:
    """Max |difference| of (mean, var) between the plugged predictor and ``random_gp_predict`` at 5 points."""
    xs = jax.random.normal(jax.random.key(0), (5, D))
    ours = jax.vmap(lambda x: moments.predict_point(theta["predictor"], x, theta["mean_fn"]))(xs)
    ref = jax.vmap(lambda x: ssm_systems.random_gp_predict(system, x))(xs)
    return float(max(jnp.max(jnp.abs(a - b)) for a, b in zip(ours, ref, strict=True)))


def gaussian_score(truth, mean, cov) -> jax.Array:
    """Mean over steps of log N(x*_t; m_t, P_t) / D for one trajectory: truth, mean (T, D), cov (T, D, D)."""
    logp = jax.vmap(lambda x, m, P: mvn_logpdf_chol(x, m, jnp.linalg.cholesky(P)))(truth, mean, cov)
    return jnp.mean(logp) / truth.shape[-1]


def make_runner(view, cfg: dict):
    """Jitted (thetas, keys, y, truth) -> scores {method: (systems, K)} for one D (systems vmapped)."""

    def one_system(theta, key, y, truth):
        g, predictor, mean_fn = theta["gpssm"], theta["predictor"], theta["mean_fn"]
        K, T, D = y.shape
        mask, u = jnp.ones((K, T), bool), jnp.zeros((K, T, 0))
        forward = jax.vmap(adf_forward, in_axes=(None, None, None, 0, 0, 0))(g, predictor, mean_fn, y, mask, u)
        smoothed = jax.vmap(kalman.rts_smoother)(forward)
        scores = {"ADS": jax.vmap(gaussian_score)(truth, smoothed.mean, smoothed.cov)}
        k_mc, k_is, k_pg = jax.random.split(key, 3)
        methods = [("MC-EP", False, k_mc, None), ("IS-EP", True, k_is, None)]
        if cfg["mcmc_ep"]:
            k_mc, k_mcmc = jax.random.split(k_mc)

            def estimator(transition):
                return mcmc_ep.mcmc_two_slice(transition, cfg["ep_samples"], 0.0)

            methods.append(("MCMC-EP", False, k_mcmc, estimator))
        for name, use_is, k, estimator in methods:

            def ep(kk, yk, mk, uk, use_is=use_is, estimator=estimator):
                return sep.ep_one_trajectory(
                    g,
                    predictor,
                    mean_fn,
                    use_is,
                    cfg["ep_samples"],
                    cfg["ep_iters"],
                    kk,
                    yk,
                    mk,
                    uk,
                    0.5,
                    0.01 * cfg["ep_samples"],
                    estimator,
                )

            _, res = jax.vmap(ep)(jax.random.split(k, K), y, mask, u)
            scores[name] = jax.vmap(gaussian_score)(truth, res.mean, res.cov)
            scores[name + " skipped"] = jnp.sum(res.skipped, 1)
        draws = pgas.pgas_chain(view, theta, k_pg, y, mask, u, cfg["P"], cfg["warmup"], cfg["S"])  # (S, K, T, D)
        mean = draws.mean(0)
        centred = draws - mean
        cov = jnp.einsum("sktd,skte->ktde", centred, centred) / (draws.shape[0] - 1) + 1e-9 * jnp.eye(D)
        scores["PGAS"] = jax.vmap(gaussian_score)(truth, mean, cov)
        return scores

    return jax.jit(jax.vmap(one_system))


def run(cfg: dict) -> tuple[list[dict], dict]:
    rows, times = [], {}
    for D in cfg["dims"]:
        start = time.perf_counter()
        systems = [
            ssm_systems.random_gp_system(jax.random.key(1000 * D + s), D, num_train=1, num_test=cfg["K"])
            for s in range(cfg["systems"])
        ]
        thetas = [system_theta(data.truth, D) for data in systems]
        mismatch = max(check_predictor(data.truth, th, D) for data, th in zip(systems, thetas, strict=True))
        stacked = jax.tree.map(lambda *a: jnp.stack(a), *thetas)
        y = jnp.stack([jnp.asarray(d.test["y"]) for d in systems])
        truth = jnp.stack([jnp.asarray(d.truth["test_states"]) for d in systems])
        view = gpssm.sparse_gpssm_spec(f"figure/random-{D}", lambda key: None, D).views["state_space"]
        keys = jax.random.split(jax.random.key(D), cfg["systems"])
        scores = jax.block_until_ready(make_runner(view, cfg)(stacked, keys, y, truth))
        times[f"D={D}"] = time.perf_counter() - start
        times[f"D={D} predictor mismatch"] = mismatch
        for s in range(cfg["systems"]):
            row = {"D": D, "system": s}
            row.update({name: float(np.mean(v[s])) for name, v in scores.items()})
            rows.append(row)
    return rows, times


def plot(out: Path, rows: list[dict], cfg: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = PAIRS + ([MCMC_PAIR] if cfg["mcmc_ep"] else [])
    fig, axes = plt.subplots(1, len(pairs), figsize=(4 * len(pairs), 3.8), sharey=True)
    for ax, (a, b) in zip(axes, pairs, strict=True):
        data = [np.array([r[a] - r[b] for r in rows if r["D"] == D]) for D in cfg["dims"]]
        ax.boxplot(data)
        ax.set_xticks(range(1, len(cfg["dims"]) + 1), [str(D) for D in cfg["dims"]])
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set(title=f"{a} - {b}", xlabel="D")
    axes[0].set_ylabel("difference in log density per point")
    fig.suptitle("Figs 3.22 / 3.34: E-steps on random GP systems (per system, mean over test trajectories)")
    fig.tight_layout()
    fig.savefig(out / "mchutchon_random_estep.png", dpi=110)
    plt.close(fig)


def comparison_rows(rows: list[dict], cfg: dict) -> list[dict]:
    def wins(a, b, dims):
        d = np.array([r[a] - r[b] for r in rows if r["D"] in dims and a in r and b in r])
        return f"{int((d > 0).sum())}/{d.size} systems, mean diff {d.mean():+.3f}" if d.size else "not run"

    low = [D for D in cfg["dims"] if D <= 3]
    high = [D for D in cfg["dims"] if D >= 4]
    ours = {
        "sampling EP beats moment matching mainly in low D": f"IS-EP - ADS: D<=3 {wins('IS-EP', 'ADS', low)}; "
        f"D>=4 {wins('IS-EP', 'ADS', high)}",
        "IS-EP >= MC-EP": wins("IS-EP", "MC-EP", cfg["dims"]),
        "PGAS gains over IS-EP shrink with D; for D >= 4 no significant gain (<= 1000 samples)": f"PGAS - IS-EP: "
        f"D<=3 {wins('PGAS', 'IS-EP', low)}; D>=4 {wins('PGAS', 'IS-EP', high)}",
        "MCMC-EP worse than MC/IS (chain stuck)": f"MC-EP - MCMC-EP: {wins('MC-EP', 'MCMC-EP', cfg['dims'])}; "
        f"IS-EP - MCMC-EP: {wins('IS-EP', 'MCMC-EP', cfg['dims'])}"
        if cfg["mcmc_ep"]
        else "not run (quick: MCMC-EP in full runs only)",
    }
    table = []
    for p in read_published(__file__):
        table.append({"figure": p["figure"], "claim": p["claim"], "ours": ours.get(p["claim"], "not run")})
    return table


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    cfg = settings(quick)
    start = time.perf_counter()
    rows, times = run(cfg)
    write_csv(out / "numbers.csv", rows)
    plot(out, rows, cfg)
    timing = ", ".join(f"{k}: {v:.3g}" for k, v in times.items())
    note = f"\nRun ({'quick' if quick else 'full'}): {cfg}.\nTimes (s; compile included): {timing}. "
    note += f"Wall {time.perf_counter() - start:.0f} s."
    print(write_comparison(out, comparison_rows(rows, cfg), __doc__ + note))
