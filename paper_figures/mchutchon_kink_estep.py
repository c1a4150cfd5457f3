"""McHutchon (2014) E3.3 / E3.7 on the kink: E-steps at fixed parameters -- Tables 3.1 / 3.2, Figs 3.31, 3.32, 3.33.

Score: log density per data point of the TRUE latent states under each smoothing posterior
(docs/sources/mchutchon.md#evaluation). Methods: ADS (``ads``), MC-EP and IS-EP (``is-ep``, variants mc / is;
self-normalised weights, damping 0.5, skip if ESS < 1 % of the samples, 4 EP iterations), MCMC-EP (``mcmc-ep``,
docs/sources/mchutchon.md#mcmc-ep; full runs only, as many chain states as EP samples), PGAS (``pgas``, fully adapted
CSMC with ancestor sampling; its draws summarised per step by a Gaussian fit and by a 3-component 1-D Gaussian mixture
fitted by EM, as the thesis did), and NUTS on the latent states at the same fixed parameters (``nuts``; the gold
standard, Gaussian and mixture fits).

Assumptions (stated, not from the thesis): the kink function and noise split of docs/sources/mchutchon.md#kink
(``zoo.data.ssm_systems.kink``), trajectories of 20 steps; the model is the sparse GP-SSM ``gpssm/sparse`` at the
FIXED parameters of ``zoo/data/kink_fixtures.py`` (15 pseudo-inputs on [-3, 6] with pseudo-targets f(X~),
signal variance 9, lengthscale 1, the true process and observation noise) -- near the truth, so the comparison is
about the posterior approximation, not about learning (the thesis used a learnt model; learning one by ``direct``
would add its errors to every method alike). Every method sees the same model and data.

Two noise regimes, both with the thesis's total noise std 0.56 (Table 3.6): ``zoo-split`` (process var 0.2, obs var
0.1136, the zoo's assumption) and ``low-process-noise`` (0.01, 0.3036; data simulated the same way with
``ssm_systems._scalar_system``). Under the zoo split the smoothing posterior is wide (log density ~0.05 per point) and
nearly Gaussian, so ADS is already close to the exact posterior and no method separates from it; with low process
noise the dynamics pin the latent down (posterior sd ~0.2, as the thesis's 0.3-0.98 per point imply) and the kink's
nonlinearity matters -- the regime where the thesis's claims can show.

Sizes (the full run's PGAS grid was reduced when PGAS was slower; ``--size thesis`` runs the thesis's grid):
* full: 10 trajectories (thesis: 100), EP with 10,000 samples (as the thesis), PGAS grid particles {10, 100, 500}
  x samples {10, 100, 500} (thesis: {100, 500, 1000, 5000, 10000} x {10, 50, 100, 500, 1000}); a run with S samples
  uses the first S sweeps after 50 warm-up sweeps of one chain of the largest S (so the sample axis costs one run per
  particle count). PGAS "reference" for Tables 3.1/3.2 and Fig. 3.32 = the largest cell (500 particles, 500 samples;
  thesis 10,000 / 1,000). NUTS: 2 chains x 500 warm-up x 500 draws on all trajectories jointly.
* thesis (``--size thesis``, full runs in chunks only): the full run with the thesis's PGAS grid, particles
  {100, 500, 1000, 5000, 10000} x samples {10, 50, 100, 500, 1000}, reference 10,000 / 1,000 as Table 3.2 (the
  reduced reference 500 / 500 is one of its cells, so the two compare on the same chains).
* quick: 5 trajectories, EP with 1,000 samples, 20 particles x {10, 50} samples, no NUTS (its compile is ~15 s).
Full runs in resumable chunks, one noise regime, each trajectory a unit cached as it finishes, every engine on that
trajectory alone (at fixed parameters the trajectories' posteriors are independent; same data as ``main``):
``python -m paper_figures.mchutchon_kink_estep OUT --regime low-process-noise --size thesis --trajectories 0 1 2``
runs those units and tabulates every finished one into OUT; without ``--trajectories`` it only tabulates.
Tables 3.1 and 3.2 are single trajectories in the thesis (different ones); we report trajectory 0 and the mean and
median over our trajectories. Fig. 3.31: the genealogy of a 10-particle fully adapted PF on trajectory 0.
Full-run results: mchutchon_kink_estep_full_runs.md.
"""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm

import inference
from inference.core.program import observed_args
from inference.files.resumable import cached, load_cached
from inference.files.tables import read_published, write_comparison, write_csv
from inference.particles import pf
from zoo import gpssm, ssm
from zoo.data import ssm_systems
from zoo.data.kink_fixtures import PARAMS, PSEUDO_INPUTS

DESCRIPTION = "McHutchon 2014 Tables 3.1/3.2, Figs 3.31-3.33 (E3.3, E3.7): kink E-steps ADS, MC-EP, IS-EP, PGAS, NUTS"
SEED = 11
# (process variance, observation variance), total std 0.56 in both (Table 3.6): the zoo's split
# (docs/sources/mchutchon.md#kink) and a low-process-noise split under which the smoothing posterior is narrow enough
# for the kink to matter.
REGIMES = {"zoo-split": (ssm_systems.KINK_PROCESS_VAR, ssm_systems.KINK_OBS_VAR), "low-process-noise": (0.01, 0.3036)}


# The thesis's PGAS grid (Fig 3.33); its largest cell is Table 3.2's reference (docs/sources/mchutchon.md#settings).
THESIS_PGAS = {"particles": (100, 500, 1000, 5000, 10000), "samples": (10, 50, 100, 500, 1000)}
SIZES = ("reduced", "thesis")


def settings(quick: bool, size: str = "reduced") -> dict:
    """The run's sizes: quick, or the full run's -- ``reduced`` (the PGAS grid of the docstring) or ``thesis`` (the
    same with the thesis's PGAS grid; EP already uses the thesis's 10,000 samples)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    if quick:
        return {
            "K": 5,
            "ep_samples": 1000,
            "ep_iters": 4,
            "particles": (20,),  # one particle count: each compiles its own sampler
            "samples": (10, 50),
            "warmup": 10,
            "nuts": None,
            "nuts_K": 0,
            "mcmc_ep": False,  # its compile alone (~50 s on a loaded machine) exceeds a quick run's budget
        }
    full = {
        "K": 10,
        "ep_samples": 10000,
        "ep_iters": 4,
        "particles": (10, 100, 500),
        "samples": (10, 100, 500),
        "warmup": 50,
        "nuts": {"num_chains": 2, "num_warmup": 500, "num_samples": 500},
        "nuts_K": 10,
        "mcmc_ep": True,
    }
    return full | THESIS_PGAS if size == "thesis" else full


# ----------------------------------------------------------------------------------------------------------------
# Scores
# ----------------------------------------------------------------------------------------------------------------


def gaussian_scores(truth: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Per trajectory mean over steps of log N(x*_t; m_t, v_t): truth, mean, var (K, T) -> (K,)."""
    return norm.logpdf(truth, mean, np.sqrt(var)).mean(1)


def fit_gmm_1d(x: np.ndarray, num_components: int = 3, num_iters: int = 200) -> tuple[np.ndarray, ...]:
    """EM for a 1-D Gaussian mixture, vectorised over rows: x (B, S) -> weights, means, variances (B, C).
    Initialised at the 1/(2C), 3/(2C), ... quantiles; variances floored at 1e-3 x the row variance + 1e-6."""
    B, S = x.shape
    q = (np.arange(num_components) + 0.5) / num_components
    means = np.quantile(x, q, axis=1).T
    floor = 1e-3 * x.var(1, keepdims=True) + 1e-6
    var = np.broadcast_to(x.var(1, keepdims=True) + 1e-6, (B, num_components)).copy()
    w = np.full((B, num_components), 1.0 / num_components)
    for _ in range(num_iters):
        logp = np.log(w)[:, None, :] + norm.logpdf(x[:, :, None], means[:, None, :], np.sqrt(var)[:, None, :])
        r = np.exp(logp - logsumexp(logp, axis=2, keepdims=True))  # (B, S, C)
        nk = r.sum(1) + 1e-12
        w = nk / S
        means = np.einsum("bsc,bs->bc", r, x) / nk
        var = np.maximum(np.einsum("bsc,bsc->bc", r, (x[:, :, None] - means[:, None, :]) ** 2) / nk, floor)
    return w, means, var


def gmm_scores(truth: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Per trajectory mean over steps of log p_GMM,t(x*_t) with a 3-component mixture fitted to the draws at each
    step: truth (K, T), draws (S, K, T) -> (K,)."""
    S, K, T = draws.shape
    w, m, v = fit_gmm_1d(draws.reshape(S, K * T).T)
    logp = logsumexp(np.log(w) + norm.logpdf(truth.reshape(K * T, 1), m, np.sqrt(v)), axis=1)
    return logp.reshape(K, T).mean(1)


def draw_scores(truth: np.ndarray, draws: np.ndarray) -> dict[str, np.ndarray]:
    """Gaussian and mixture fits of sample draws (S, K, T)."""
    return {"gauss": gaussian_scores(truth, draws.mean(0), draws.var(0, ddof=1)), "gmm": gmm_scores(truth, draws)}


# ----------------------------------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------------------------------


def problem(K: int, regime: str):
    """The kink trajectories of a noise regime: spec, dataset, truth (K, T), and the fixed parameters."""
    spec = gpssm.sparse_gpssm_spec("figure/kink-sparse", lambda key: None, 1)
    pv, ov = REGIMES[regime]
    if regime == "zoo-split":
        data = ssm_systems.kink(jax.random.key(SEED), num_train=K, num_test=1)
        observed, states = data.observed, data.truth["states"]
    else:
        pvs, ovs = jnp.array([pv]), jnp.array([ov])
        observed = ssm_systems._scalar_system(
            jax.random.key(SEED), ssm_systems.kink_function, pvs, ovs, K, 20, np.full(K, 20.0)
        )
        states = observed.pop("states")
    dataset = spec.validate({**observed, "pseudo_inputs": PSEUDO_INPUTS})
    params = {**PARAMS, "process_var": np.array([pv]), "obs_var": np.array([ov])}
    return spec, dataset, np.asarray(states)[..., 0], params


def subset(dataset, k: int):
    obs = observed_args(dataset)
    return {"y": np.asarray(obs["y"])[:k], "lengths": np.asarray(obs["lengths"])[:k], "pseudo_inputs": PSEUDO_INPUTS}


def run_methods(spec, dataset, truth, cfg, PARAMS) -> tuple[dict, dict, dict]:  # noqa: N803
    """scores {method: (K,)} (NUTS on the first nuts_K only), marginals for Fig 3.32, times {method: run_s}."""
    scores, marginals, times = {}, {}, {}

    def timed(name, **options):
        idata = inference.run(spec, dataset if name != "nuts" else subset(dataset, cfg["nuts_K"]), **options)
        times[name] = idata.posterior.attrs["run_s"]
        times[name + " compile"] = idata.posterior.attrs["compile_s"]
        return idata

    ads = timed("ads", engine="ads", params=PARAMS, num_samples=10)
    pe = ads.point_estimates
    scores["ADS"] = gaussian_scores(truth, pe["states_mean"].values[0, ..., 0], pe["states_cov"].values[0, ..., 0, 0])
    for variant, name in (("mc", "MC-EP"), ("is", "IS-EP")):
        idata = timed(
            name,
            engine="is-ep",
            params=PARAMS,
            variant=variant,
            num_samples=cfg["ep_samples"],
            num_ep_iters=cfg["ep_iters"],
            num_draws=10,
        )
        mean, var = (idata.point_estimates[k].values[0] for k in ("states_mean", "states_cov"))
        scores[name] = gaussian_scores(truth, mean[..., 0], var[..., 0, 0])
        marginals[name] = (mean[..., 0], var[..., 0, 0])
        times[name + " skipped updates"] = int(idata.optimization["skipped_updates"].values.sum())
    if cfg["mcmc_ep"]:  # one chain of ep_samples Metropolis states per two-slice (eqs. 3.180-3.186)
        idata = timed(
            "MCMC-EP",
            engine="mcmc-ep",
            params=PARAMS,
            num_samples=cfg["ep_samples"],
            num_ep_iters=cfg["ep_iters"],
            num_draws=10,
        )
        mean, var = (idata.point_estimates[k].values[0] for k in ("states_mean", "states_cov"))
        scores["MCMC-EP"] = gaussian_scores(truth, mean[..., 0], var[..., 0, 0])
        marginals["MCMC-EP"] = (mean[..., 0], var[..., 0, 0])
        times["MCMC-EP skipped updates"] = int(idata.optimization["skipped_updates"].values.sum())
        times["MCMC-EP min chain ESS"] = float(idata.optimization["min_ess"].values.min())
    if cfg["nuts"] is None:
        return scores, marginals, times
    nuts = timed("nuts", engine="nuts", params=PARAMS, **cfg["nuts"])
    draws = nuts.posterior[ssm.STATES].values[..., 0]  # (chain, draw, k, T)
    draws = draws.reshape(-1, *draws.shape[2:])
    nuts_truth = truth[: cfg["nuts_K"]]
    for kind, value in draw_scores(nuts_truth, draws).items():
        scores[f"NUTS ({kind})"] = value
    times["nuts max r-hat"] = float(
        inference.results.diagnostics.az.rhat(nuts, var_names=[ssm.STATES])[ssm.STATES].max()
    )
    marginals["NUTS"] = draws
    return scores, marginals, times


def run_pgas_grid(spec, dataset, truth, cfg, PARAMS) -> tuple[list[dict], dict, dict]:  # noqa: N803
    """One PGAS chain per particle count with max(samples) draws; S samples = its first S draws after warm-up.
    rows: per (particles, samples, trajectory) Gaussian and mixture scores; ref: the largest cell's draws."""
    rows, times, ref = [], {}, None
    for P in cfg["particles"]:
        idata = inference.run(
            spec,
            dataset,
            engine="pgas",
            params=PARAMS,
            num_chains=1,
            num_warmup=cfg["warmup"],
            num_samples=max(cfg["samples"]),
            num_particles=P,
        )
        times[f"pgas P={P}"] = idata.posterior.attrs["run_s"]
        times[f"pgas P={P} compile"] = idata.posterior.attrs["compile_s"]
        draws = idata.posterior[ssm.STATES].values[0, ..., 0]  # (S, K, T)
        for S in cfg["samples"]:
            sc = draw_scores(truth, draws[:S])
            for k in range(truth.shape[0]):
                rows.append(
                    {"particles": P, "samples": S, "trajectory": k, **{f"pgas_{n}": v[k] for n, v in sc.items()}}
                )
        ref = draws
    return rows, times, ref


def genealogy(spec, dataset, params, num_particles: int = 10):
    """Fig 3.31: particles (T, N) and ancestors (T, N) of a fully adapted PF on trajectory 0."""
    view = spec.views["state_space"]
    obs = observed_args(dataset)
    theta = ssm.bind(view, params, obs)
    y, mask, u = ssm.trajectories(obs)
    run = jax.jit(lambda key: pf.particle_filter(view, theta, key, y[0], mask[0], u[0], num_particles))
    out = run(jax.random.key(3))
    return np.asarray(out.particles)[..., 0], np.asarray(out.ancestors)


# ----------------------------------------------------------------------------------------------------------------
# Figure and comparison
# ----------------------------------------------------------------------------------------------------------------


def plot(out: Path, truth, scores, marginals, grid_rows, pgas_ref, particles, ancestors, cfg, regime) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    T = truth.shape[1]
    steps = np.arange(1, T + 1)

    ax = axes[0, 0]  # Fig 3.31: genealogy
    N = particles.shape[1]
    for t in range(T):
        ax.plot(np.full(N, t + 1), particles[t], "o", color="0.6", ms=3)
    for t in range(1, T):
        for i in range(N):
            ax.plot([t, t + 1], [particles[t - 1, ancestors[t, i]], particles[t, i]], color="0.85", lw=0.6)
    for i in range(N):  # surviving lineages, traced back from the last step
        idx, path = i, [particles[-1, i]]
        for t in range(T - 1, 0, -1):
            idx = ancestors[t, idx]
            path.append(particles[t - 1, idx])
        ax.plot(steps, path[::-1], color="C0", lw=1)
    ax.plot(steps, truth[0], "rx", label="true latent")
    ax.set(title=f"Fig 3.31: genealogy of a {N}-particle PF (blue: surviving paths)", xlabel="t", ylabel="x")
    ax.legend()

    ax = axes[0, 1]  # Fig 3.32: IS-EP vs PGAS per step
    mean, var = marginals["IS-EP"]
    rng = np.random.default_rng(0)
    d = pgas_ref[:, 0]
    ax.scatter(steps[None, :] + 0.15 * rng.standard_normal(d.shape), d, s=2, alpha=0.15, color="C1", label="PGAS draws")
    ax.errorbar(steps, mean[0], 2 * np.sqrt(var[0]), fmt="o", color="C0", capsize=3, label="IS-EP mean +- 2 sd")
    ax.plot(steps, truth[0], "rx", label="true latent")
    ax.set(title="Fig 3.32: trajectory 0, IS-EP vs PGAS posterior", xlabel="t", ylabel="x")
    ax.legend()

    ax = axes[1, 0]  # Fig 3.33
    isep = scores["IS-EP"]
    boxes, labels = [], []
    for P in cfg["particles"]:
        for S in cfg["samples"]:
            vals = np.array([r["pgas_gmm"] for r in grid_rows if r["particles"] == P and r["samples"] == S])
            boxes.append(vals - isep)
            labels.append(f"{P}/{S}")
    ax.boxplot(boxes)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=60)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_yscale("symlog", linthresh=0.1)  # mixtures fitted to 10 draws give outliers of -1e3
    ax.set(title="Fig 3.33: PGAS (3-comp. mixture) - IS-EP per trajectory", xlabel="particles / samples")
    ax.set_ylabel("difference in log density per point")

    ax = axes[1, 1]  # Tables 3.1/3.2 per trajectory (Fig 3.19 style)
    names = [n for n in ("ADS", "MC-EP", "IS-EP", "PGAS (gmm)", "NUTS (gmm)") if n in scores]
    data = [scores[n] for n in names]
    ax.boxplot(data)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=20)
    ax.set(title="Tables 3.1/3.2: log density of the true latents per point", ylabel="per trajectory")
    fig.suptitle(f"noise regime {regime}: process var, obs var = {REGIMES[regime]}")
    fig.tight_layout()
    fig.savefig(out / f"mchutchon_kink_estep_{regime}.png", dpi=110)
    plt.close(fig)


def _frac(a, b) -> str:
    """Paired comparison per trajectory: how often a > b, and the mean difference with its standard error."""
    d = np.asarray(a) - np.asarray(b)
    se = f" +- {d.std(ddof=1) / np.sqrt(d.size):.3f}" if d.size > 1 else ""
    return f"{int((d > 0).sum())}/{d.size} trajectories, mean diff {d.mean():+.3f}{se}"


def comparison_rows(scores, grid_rows, cfg, nuts_rhat: float | None = None) -> list[dict]:
    table = []
    for p in read_published(__file__):
        ours = scores.get(p["method"])
        table.append(
            {
                "table": p["table"],
                "method": p["method"],
                "published (one trajectory)": p["published"],
                "ours trajectory 0": float(ours[0]) if ours is not None else "not run",
                "ours mean": float(np.mean(ours)) if ours is not None else "",
                "ours median": float(np.median(ours)) if ours is not None else "",
            }
        )
    for name in [n for n in ("PGAS (gauss)", "NUTS (gauss)", "NUTS (gmm)") if n in scores]:
        table.append(
            {
                "table": "extra",
                "method": name,
                "published (one trajectory)": "",
                "ours trajectory 0": float(scores[name][0]),
                "ours mean": float(np.mean(scores[name])),
                "ours median": float(np.median(scores[name])),
            }
        )
    isep = scores["IS-EP"]

    def cell(P, S):
        return np.array([r["pgas_gmm"] for r in grid_rows if r["particles"] == P and r["samples"] == S])

    Ps, Ss = cfg["particles"], cfg["samples"]
    by_samples = np.mean([cell(P, Ss[-1]).mean() - cell(P, Ss[0]).mean() for P in Ps])
    by_particles = np.mean([cell(Ps[-1], S).mean() - cell(Ps[0], S).mean() for S in Ss])
    S_claim = min((S for S in Ss if S >= 500), default=Ss[-1])  # the claim's ~500 samples, or the most we drew
    top = [f"P={P}: {_frac(cell(P, S_claim), isep)}" for P in Ps]
    claims = [
        (
            "sampling EP beats ADS on the kink (Table 3.1, Fig 3.19)",
            f"MC-EP: {_frac(scores['MC-EP'], scores['ADS'])}; IS-EP: {_frac(isep, scores['ADS'])}",
        ),
        ("IS-EP beats MC-EP (Table 3.1 by 0.015, Table 3.2 by 0.10)", _frac(isep, scores["MC-EP"])),
        (
            "PGAS beats ADS and IS-EP (Table 3.2)",
            f"PGAS(gmm) vs ADS: {_frac(scores['PGAS (gmm)'], scores['ADS'])}; "
            f"vs IS-EP: {_frac(scores['PGAS (gmm)'], isep)}",
        ),
        (
            "number of samples matters more than number of particles (Fig 3.33)",
            f"mean gain {Ss[0]}->{Ss[-1]} samples: {by_samples:+.3f}; {Ps[0]}->{Ps[-1]} particles: {by_particles:+.3f}",
        ),
        (f"~500 samples consistently better than IS-EP (Fig 3.33); ours at {S_claim} samples", "; ".join(top)),
    ]
    if "MCMC-EP" in scores:
        claims.append(("MCMC-EP vs IS-EP (Table 3.2: +0.10; Table 3.1: -0.014)", _frac(scores["MCMC-EP"], isep)))
    if "NUTS (gmm)" in scores:
        n = len(scores["NUTS (gmm)"])
        claims.append(
            (
                f"gold standard: NUTS vs IS-EP and PGAS (not in the thesis); NUTS max R-hat {nuts_rhat:.3g}"
                + (" -- NOT CONVERGED, no gold standard here" if nuts_rhat is not None and nuts_rhat > 1.1 else ""),
                f"NUTS(gmm) vs IS-EP: {_frac(scores['NUTS (gmm)'], isep[:n])}; "
                f"vs PGAS(gmm): {_frac(scores['NUTS (gmm)'], scores['PGAS (gmm)'][:n])}",
            )
        )
    for claim, ours in claims:
        table.append(
            {"table": "claim", "method": claim, "published (one trajectory)": "thesis", "ours trajectory 0": ours}
        )
    return table


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    cfg = settings(quick)
    start = time.perf_counter()
    text, rows = __doc__, []
    for regime in REGIMES:
        table, note = run_regime(out, cfg, regime, quick)
        rows += [{"regime": regime, **r} for r in table]
        text += note
    text += f"\nTotal wall {time.perf_counter() - start:.0f} s."
    print(write_comparison(out, rows, text))


def run_regime(out: Path, cfg: dict, regime: str, quick: bool) -> tuple[list[dict], str]:
    start = time.perf_counter()
    spec, dataset, truth, params = problem(cfg["K"], regime)
    scores, marginals, times = run_methods(spec, dataset, truth, cfg, params)
    grid_rows, grid_times, pgas_ref = run_pgas_grid(spec, dataset, truth, cfg, params)
    times.update(grid_times)
    ref = [r for r in grid_rows if r["particles"] == cfg["particles"][-1] and r["samples"] == cfg["samples"][-1]]
    scores["PGAS (gmm)"] = np.array([r["pgas_gmm"] for r in ref])
    scores["PGAS (gauss)"] = np.array([r["pgas_gauss"] for r in ref])
    particles, ancestors = genealogy(spec, dataset, params)
    per_traj = [
        {"trajectory": k, **{name: float(v[k]) for name, v in scores.items() if k < len(v)}} for k in range(cfg["K"])
    ]
    write_csv(out / f"numbers_{regime}.csv", per_traj)
    grid = [{**r, "is_ep": float(scores["IS-EP"][r["trajectory"]])} for r in grid_rows]
    write_csv(out / f"pgas_grid_{regime}.csv", grid)
    plot(out, truth, scores, marginals, grid_rows, pgas_ref, particles, ancestors, cfg, regime)
    wall = time.perf_counter() - start
    timing = ", ".join(f"{k}: {v:.3g}" if isinstance(v, float) else f"{k}: {v}" for k, v in times.items())
    note = (
        f"\n\nRegime {regime} ({'quick' if quick else 'full'}): {cfg}.\nRun/compile times (s), diagnostics: {timing}. "
    )
    note += f"Wall {wall:.0f} s."
    return comparison_rows(scores, grid_rows, cfg, times.get("nuts max r-hat")), note


# ----------------------------------------------------------------------------------------------------------------
# The full run in resumable chunks, one trajectory per unit
# ----------------------------------------------------------------------------------------------------------------


def one_trajectory(dataset, k: int) -> dict:
    """Trajectory k of the dataset alone (at fixed parameters the trajectories' posteriors are independent)."""
    obs = observed_args(dataset)
    y, lengths = (np.asarray(obs[n])[k : k + 1] for n in ("y", "lengths"))
    return {"y": y, "lengths": lengths, "pseudo_inputs": PSEUDO_INPUTS}


def run_trajectory(regime: str, size: str, k: int) -> dict:
    """Every method on trajectory k of the full run's data (the same K trajectories as ``main``), each engine on that
    trajectory alone: scores {method: float}, the PGAS grid's rows, the EP marginals (T,) and PGAS reference draws
    (S, T) that the figure needs, run times and NUTS's R-hat."""
    cfg = settings(False, size)
    spec, dataset, truth, params = problem(cfg["K"], regime)
    data, true_k, cfg_k = spec.validate(one_trajectory(dataset, k)), truth[k : k + 1], {**cfg, "nuts_K": 1}
    scores, marginals, times = run_methods(spec, data, true_k, cfg_k, params)
    grid_rows, grid_times, pgas_ref = run_pgas_grid(spec, data, true_k, cfg_k, params)
    return {
        "scores": {name: float(v[0]) for name, v in scores.items()},
        "grid": [{**r, "trajectory": k} for r in grid_rows],
        "marginals": {name: (mv[0][0], mv[1][0]) for name, mv in marginals.items() if name != "NUTS"},
        "pgas_ref": pgas_ref[:, 0],
        "times": {**times, **grid_times},
    }


def unit_key(regime: str, size: str, k: int) -> tuple[str, tuple]:
    """A trajectory unit's cache label and the key of everything that determines its result."""
    return f"{regime}-{size}-trajectory{k}", (regime, sorted(settings(False, size).items()), k)


def run_chunk(out: Path, regime: str, size: str, trajectories) -> None:
    """Run the units of these trajectories (each cached in ``out/units`` as it finishes, so an interrupted chunk
    resumes), then tabulate every finished unit of the regime and size."""
    for k in trajectories:
        _, wall = cached(out / "units", *unit_key(regime, size, k), lambda k=k: run_trajectory(regime, size, k))
        print(f"trajectory {k}: {wall:.0f} s", flush=True)
    print(tabulate(out, regime, size))


def tabulate(out: Path, regime: str, size: str) -> str:
    """comparison.md, the per-trajectory numbers and the figure from the finished units, in trajectory order. At the
    thesis's size it adds the paired difference between Table 3.2's PGAS cell and the reduced run's (500 particles,
    500 samples), both in the thesis's grid."""
    cfg = settings(False, size)
    done = {}
    for k in range(cfg["K"]):
        loaded = load_cached(out / "units", *unit_key(regime, size, k))
        if loaded is not None:
            done[k] = loaded
    if not done:
        raise SystemExit(f"no finished trajectory of {regime} ({size}) in {out / 'units'}")
    ks = list(done)
    units = [done[k][0] for k in ks]
    names = [n for n in units[0]["scores"] if all(n in u["scores"] for u in units)]
    scores = {n: np.array([u["scores"][n] for u in units]) for n in names}
    grid_rows = [r for u in units for r in u["grid"]]
    ref = [r for r in grid_rows if r["particles"] == cfg["particles"][-1] and r["samples"] == cfg["samples"][-1]]
    scores["PGAS (gmm)"] = np.array([r["pgas_gmm"] for r in ref])
    scores["PGAS (gauss)"] = np.array([r["pgas_gauss"] for r in ref])
    marginals = {
        n: tuple(np.stack([u["marginals"][n][i] for u in units]) for i in (0, 1)) for n in units[0]["marginals"]
    }
    pgas_ref = np.stack([u["pgas_ref"] for u in units], axis=1)
    rhat = float(np.nanmax([u["times"].get("nuts max r-hat", np.nan) for u in units]))
    spec, dataset, truth, params = problem(cfg["K"], regime)
    particles, ancestors = genealogy(spec, dataset, params)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / f"numbers_{regime}.csv", [{"trajectory": k, **{n: float(v[i]) for n, v in scores.items()}}
                                             for i, k in enumerate(ks)])  # fmt: skip
    write_csv(out / f"pgas_grid_{regime}.csv", [{**r, "is_ep": float(scores["IS-EP"][ks.index(r["trajectory"])])}
                                                for r in grid_rows])  # fmt: skip
    plot(out, truth[ks], scores, marginals, grid_rows, pgas_ref, particles, ancestors, cfg, regime)
    table = comparison_rows(scores, grid_rows, cfg, rhat)
    if size == "thesis":
        reduced = np.array([r["pgas_gmm"] for r in grid_rows if r["particles"] == 500 and r["samples"] == 500])
        size_rows = {
            "PGAS (gmm), Table 3.2's cell (10,000 particles, 1,000 samples) - the reduced run's (500, 500)": _frac(
                scores["PGAS (gmm)"], reduced
            ),
            "PGAS (gmm) at the reduced run's cell (500, 500) - IS-EP": _frac(reduced, scores["IS-EP"]),
        }
        table += [
            {"table": "size", "method": method, "published (one trajectory)": "", "ours trajectory 0": value}
            for method, value in size_rows.items()
        ]
    walls = ", ".join(f"{k}: {done[k][1]:.0f}" for k in ks)
    text = __doc__ + f"\n\nRegime {regime}, size {size}: {cfg}.\nFinished trajectories {ks}; unit walls (s): {walls}."
    return write_comparison(out, [{"regime": regime, **r} for r in table], text)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(
        description="The full run of one noise regime in resumable chunks: run some trajectories (each cached in "
        "OUT/units as it finishes), then tabulate every finished one into OUT."
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--regime", choices=tuple(REGIMES), required=True)
    parser.add_argument("--size", choices=SIZES, default="reduced", help="PGAS grid: reduced or the thesis's")
    parser.add_argument("--trajectories", type=int, nargs="*", default=(), help="trajectories to run (none: tabulate)")
    args = parser.parse_args()
    K = settings(False, args.size)["K"]
    if any(not 0 <= k < K for k in args.trajectories):
        parser.error(f"--trajectories must lie in 0..{K - 1}, got {args.trajectories}")
    run_chunk(args.out, args.regime, args.size, args.trajectories)
