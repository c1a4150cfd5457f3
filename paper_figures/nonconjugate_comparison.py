"""Kuss & Rasmussen (2005)-style comparison of approximate inference for latent GPs: Laplace, EP, elliptical slice
sampling (ESS), NUTS and a full-rank Gaussian VI against a long NUTS reference, on a GP classifier (Ripley's
synthetic data, a seeded subset of MASS ``synth.tr``) and on the log-Gaussian Cox process of the coal-mining disasters
(docs/sources/nonconjugate.md#comparison-figure).

Every engine describes the same posterior p(f | y, theta) at fixed hyperparameters (stated below), each through
``inference.run``. The reference is NUTS run long on the whitened model; its Monte Carlo standard errors (ArviZ's
MCSE of the mean and sd per component) size every error. The reference log evidence log p(y | theta) is adaptive
tempered SMC (``tsmc``: R independent runs; its MCSE is the sd of the runs' log Z over sqrt(R)), the sequential
version of the annealed importance sampling K&R used. Reported per engine and model: the largest and the mean error
of the posterior mean of f in reference sds, the median ratio of posterior sds to the reference's, the largest
error of the predictive probability p(y_i = 1 | data) (classifier; at the training inputs, Phi(mu / sqrt(1 + s^2))
for a Gaussian q, the mean of Phi(f) over draws for the samplers) or of the expected count E[exp f_i] (Cox), the log
evidence where the engine gives one, run time (compile excluded) and, for samplers, the minimum bulk ESS per second.
A K&R evidence ladder: Laplace's and EP's log evidence against tempered SMC's as the signal variance grows (the
data become nearly separable in the latent space).

Not run: EP on the Cox process (``ep`` is probit classification only: the Poisson site moments have no closed form
in our engine). Two variational Gaussians, full runs only (each SVI program compiles for ~35 s): ``svi-mvn``, a
full-rank Gaussian guide on the whitened latents (the variational Gaussian that SVGP becomes with M = N inducing
points at the inputs, expectations by Monte Carlo), and ``svgp``, the sparse model ``gp/svgp-nonconjugate``
(Hensman, Matthews & Ghahramani 2015; M inducing inputs started on an even subset of the inputs and trained,
expectations by Gauss-Hermite) at the same fixed hyperparameters, its q(f) at the training inputs compared.

Claims checked (``claims``): Laplace's mean (the mode) nearer zero than the posterior mean on the nearly separable
classifier, its log evidence below the reference by more than 4 MCSE, EP closer than Laplace in mean and evidence,
and Laplace's evidence error growing with the signal variance (K&R 2005, secs. 7-8).
"""

from pathlib import Path

import arviz as az
import jax.numpy as jnp
import matplotlib
import numpy as np
from scipy.special import ndtr

import inference
import zoo
from inference.files.atomic import atomic_write_text
from inference.files.tables import markdown_table, write_csv
from zoo import sparse as sp
from zoo import sparse_nonconjugate as sn
from zoo.data import classification as cdata
from zoo.registry import Dataset

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DESCRIPTION = (
    "Kuss & Rasmussen 2005-style: Laplace, EP, ESS, NUTS, VI vs long NUTS on a GP classifier and the coal Cox process"
)

CLASSIFIER_PARAMS = {"lengthscale": [0.5, 0.5], "variance": 10.0}  # signal sd ~3.2: nearly separable latent f
VARIANCE_LADDER = (1.0, 10.0, 100.0)
COX_PARAMS = {"lengthscale": 1.0, "variance": 1.0, "mean": 0.5}  # one decade; log(191 / 112) ~ 0.53 per year

FULL = {
    "n_classifier": 100,
    "num_bins": 112,
    "reference": {"num_chains": 4, "num_warmup": 1000, "num_samples": 2500},
    "nuts": {"num_chains": 2, "num_warmup": 500, "num_samples": 1000},
    "ess": {"num_chains": 4, "num_warmup": 1000, "num_samples": 2000, "thinning": 5},
    "svi": {"guide": "mvn", "num_steps": 4000, "num_particles": 8, "num_samples": 1000},
    "svgp": {"num_inducing": 20, "num_steps": 4000, "learning_rate": 0.02, "num_samples": 200},
    "gaussian": {"num_chains": 2, "num_samples": 500},
    "tsmc": {"num_chains": 8, "num_particles": 1000, "mutation": "rw", "num_mcmc_steps": 20},
    "engines": ("laplace", "ep", "ess", "nuts", "svi-mvn", "svgp"),
}
QUICK = {
    "n_classifier": 30,
    "num_bins": 56,
    "reference": {"num_chains": 2, "num_warmup": 300, "num_samples": 1000},
    "nuts": {"num_chains": 2, "num_warmup": 200, "num_samples": 300},
    "ess": {"num_chains": 2, "num_warmup": 300, "num_samples": 500, "thinning": 2},
    "svi": {"guide": "mvn", "num_steps": 1000, "num_particles": 4, "num_samples": 300},
    "svgp": {"num_inducing": 10, "num_steps": 1000, "learning_rate": 0.02, "num_samples": 200},
    "gaussian": {"num_chains": 2, "num_samples": 500},
    "tsmc": {"num_chains": 4, "num_particles": 200, "mutation": "rw", "num_mcmc_steps": 10},
    "engines": ("laplace", "ep", "ess", "nuts"),  # svi's compile alone is ~35 s per model: svi-mvn, svgp full only
}
SVGP_LIKELIHOOD = {"probit": "bernoulli-probit", "poisson": "poisson"}
EVIDENCE_MCSE_FACTOR = 4.0  # a difference counts when it exceeds 4 MCSE (the project's rule)


# -- data ---------------------------------------------------------------------------------------------------------


def classifier_data(n: int, seed: int = 0) -> Dataset:
    """A seeded subset of n points of Ripley's synth.tr; ``test`` holds the same inputs (Laplace and EP report their
    marginal variances there)."""
    X, y = cdata.synth("train")
    keep = np.sort(np.random.default_rng(seed).permutation(len(y))[:n])
    return Dataset(observed={"X": X[keep], "y": y[keep]}, test={"X": X[keep]})


def cox_data(num_bins: int) -> Dataset:
    data = zoo.get("gp/cox", num_bins=num_bins).simulate()
    return Dataset(observed=data.observed, test={"X": data.observed["X"]})


# -- per-engine summaries -----------------------------------------------------------------------------------------


def moments(result) -> tuple[np.ndarray, np.ndarray]:
    """(mean, sd) of f at the training inputs: the Gaussian fit's own (laplace, ep: f_mean, f_test_var at the same
    inputs, which omits the prior's 1e-6 relative jitter) or over draws."""
    if "point_estimates" in result.groups() and "f_test_var" in result.point_estimates:
        pe = result.point_estimates.isel(chain=0)
        return np.asarray(pe["f_mean"]), np.sqrt(np.asarray(pe["f_test_var"]))
    f = np.asarray(result.posterior["f"]).reshape(-1, result.posterior["f"].shape[-1])
    return f.mean(0), f.std(0)


def predictive(result, likelihood: str) -> np.ndarray:
    """p(y_i = 1 | data) (probit) or E[exp f_i | data] (Poisson) at the training inputs."""
    if "point_estimates" in result.groups() and "f_test_var" in result.point_estimates:
        mean, sd = moments(result)
        if likelihood == "probit":
            return ndtr(mean / np.sqrt(1.0 + sd**2))
        return np.exp(mean + 0.5 * sd**2)
    f = np.asarray(result.posterior["f"]).reshape(-1, result.posterior["f"].shape[-1])
    return (ndtr(f) if likelihood == "probit" else np.exp(f)).mean(0)


def run_svgp(data: Dataset, params: dict, likelihood: str, options: dict):
    """SVGP (``gp/svgp-nonconjugate``) at the hyperparameters ``params``; its q(f) at the training inputs (mean a^T m
    plus the prior mean, variance k - |a|^2 + |S^T a|^2) is added to the fit's point estimates as ``f_mean`` and
    ``f_test_var``, the form ``moments`` and ``predictive`` read for a Gaussian fit."""
    options = dict(options)
    num_inducing = options.pop("num_inducing")
    X, y = np.asarray(data.observed["X"]), np.asarray(data.observed["y"])
    Z = X[np.linspace(0, len(X) - 1, num_inducing).round().astype(int)]
    spec = zoo.get("gp/svgp-nonconjugate", likelihood=SVGP_LIKELIHOOD[likelihood], num_inducing=num_inducing)
    fixed = {**params, "lengthscale": np.broadcast_to(params["lengthscale"], X.shape[1]).tolist()}
    result = inference.run(spec, {"X": X, "y": y, "Z": Z}, engine="svi", guide="model", seed=1, params=fixed, **options)
    estimates = result.point_estimates
    kernel, Z_fit, q, _, prior_mean = sn.fit_from(estimates.isel(chain=0), spec.views["likelihood"], fixed)
    marginal = sp.sparse_predict(kernel, Z_fit, q, jnp.asarray(X))
    shape = (estimates.sizes["chain"], len(X))
    estimates["f_mean"] = (("chain", "f_dim"), np.broadcast_to(np.asarray(marginal.mean + prior_mean), shape))
    estimates["f_test_var"] = (("chain", "f_dim"), np.broadcast_to(np.asarray(marginal.cov), shape))
    return result


def reference_summary(result) -> dict:
    """Mean, sd, MCSE of the mean and of the sd of f, and the reference's min bulk ESS and max R-hat."""
    f = result.posterior["f"]
    return {
        "mean": np.asarray(f.mean(("chain", "draw"))),
        "sd": np.asarray(f.std(("chain", "draw"))),
        "mcse_mean": np.asarray(az.mcse(result.posterior, var_names=["f"], method="mean")["f"]),
        "mcse_sd": np.asarray(az.mcse(result.posterior, var_names=["f"], method="sd")["f"]),
        "min_ess": float(np.min(az.ess(result.posterior, var_names=["f"])["f"])),
        "max_rhat": float(np.max(az.rhat(result.posterior, var_names=["f"])["f"])),
    }


def tsmc_log_evidence(result) -> tuple[float, float]:
    """(log of the mean of the runs' Z, MCSE): the runs' final log Z from the ``optimization`` traces; the MCSE of
    log Z-bar by the delta method, sd(Z_r) / (sqrt(R) Z-bar) with the Z_r scaled to avoid overflow."""
    trace = np.asarray(result.optimization["log_evidence"])
    runs = np.array([row[np.isfinite(row)][-1] for row in trace])
    scaled = np.exp(runs - runs.max())
    return float(runs.max() + np.log(scaled.mean())), float(scaled.std(ddof=1) / (np.sqrt(len(runs)) * scaled.mean()))


def engine_row(case: str, label: str, result, reference: dict, likelihood: str, ref_predictive) -> dict:
    mean, sd = moments(result)
    z = np.abs(mean - reference["mean"]) / reference["sd"]
    row = {
        "model": case,
        "engine": label,
        "max_mean_err_sd": float(z.max()),
        "mean_mean_err_sd": float(z.mean()),
        "median_sd_ratio": float(np.median(sd / reference["sd"])),
        "max_predictive_err": float(np.max(np.abs(predictive(result, likelihood) - ref_predictive))),
        "log_evidence": float(result.posterior.attrs.get("log_evidence", np.nan)),
        "run_s": float(result.posterior.attrs["run_s"]),
        "compile_s": float(result.posterior.attrs["compile_s"]),
        "min_bulk_ess_per_s": np.nan,
    }
    if "sample_stats" in result.groups() and result.posterior.sizes["draw"] > 1 and label not in ("svi-mvn",):
        ess = float(np.min(az.ess(result.posterior, var_names=["f"])["f"]))
        row["min_bulk_ess_per_s"] = ess / row["run_s"]
    return row


# -- claims (K&R 2005), pure functions of the measured arrays -----------------------------------------------------


def shrinkage_counts(approx_mean, ref_mean, ref_mcse, factor: float = 4.0) -> tuple[int, int]:
    """(points where |approx| < |ref| by more than ``factor`` MCSE, points where |approx| > |ref| by more): how
    often an approximation's mean of f lies nearer zero than the reference posterior mean, beyond Monte Carlo noise.
    A prior mean of zero (the classifier's) is assumed."""
    gap = np.abs(np.asarray(ref_mean)) - np.abs(np.asarray(approx_mean))
    margin = factor * np.asarray(ref_mcse)
    return int(np.sum(gap > margin)), int(np.sum(-gap > margin))


def mode_nearer_zero(approx_mean, ref_mean, ref_mcse, factor: float = 4.0) -> bool:
    """K&R's first bias: the approximation's mean is nearer zero than the posterior mean at more points than it is
    farther, beyond ``factor`` MCSE, and at least one point shows it."""
    nearer, farther = shrinkage_counts(approx_mean, ref_mean, ref_mcse, factor)
    return nearer > 0 and nearer > farther


def evidence_too_low(approx: float, ref: float, ref_mcse: float, factor: float = 4.0) -> bool:
    """K&R's second bias: the approximate log evidence lies below the reference by more than ``factor`` MCSE."""
    return bool(approx < ref - factor * ref_mcse)


def closer(a_error: float, b_error: float) -> bool:
    """Whether an error ``a_error`` is smaller in size than ``b_error``."""
    return bool(abs(a_error) < abs(b_error))


def grows(values) -> bool:
    """Whether the sizes of a sequence of errors increase strictly."""
    sizes = np.abs(np.asarray(values, float))
    return bool(np.all(np.diff(sizes) > 0))


# -- the runs -----------------------------------------------------------------------------------------------------


def run_case(case: str, spec, data: Dataset, params: dict, likelihood: str, settings: dict, engines) -> dict:
    """Every engine on one posterior; returns the results by label, the reference summary and rows."""
    reference = inference.run(spec, data, engine="nuts", seed=100, params=params, **settings["reference"])
    ref = reference_summary(reference)
    ref_pred = predictive(reference, likelihood)
    options = {
        "laplace": settings["gaussian"],
        "ep": settings["gaussian"],
        "ess": settings["ess"],
        "nuts": settings["nuts"],
        "svi-mvn": settings["svi"],
    }
    results, rows = {}, []
    for label in engines:
        if label == "svgp":
            results[label] = run_svgp(data, params, likelihood, settings["svgp"])
        else:
            engine = "svi" if label == "svi-mvn" else label
            results[label] = inference.run(spec, data, engine=engine, seed=1, params=params, **options[label])
        rows.append(engine_row(case, label, results[label], ref, likelihood, ref_pred))
    smc = inference.run(spec, data, engine="tsmc", seed=2, params=params, **settings["tsmc"])
    log_z, log_z_mcse = tsmc_log_evidence(smc)
    return {"reference": reference, "ref": ref, "results": results, "rows": rows, "log_z": (log_z, log_z_mcse)}


def evidence_ladder(spec, data: Dataset, settings: dict, known: dict) -> list[dict]:
    """Laplace's and EP's log evidence against tempered SMC's for each signal variance of ``VARIANCE_LADDER``;
    ``known``: rows already measured, by variance (the main case's)."""
    rows = []
    for variance in VARIANCE_LADDER:
        if variance in known:
            rows.append(known[variance])
            continue
        params = {**CLASSIFIER_PARAMS, "variance": variance}
        row = {"variance": variance}
        for engine in ("laplace", "ep"):
            fit = inference.run(spec, data, engine=engine, seed=0, params=params, **settings["gaussian"])
            row[engine] = float(fit.posterior.attrs["log_evidence"])
        smc = inference.run(spec, data, engine="tsmc", seed=3, params=params, **settings["tsmc"])
        row["tsmc"], row["tsmc_mcse"] = tsmc_log_evidence(smc)
        rows.append(row)
    return rows


def claims(classifier: dict, ladder: list[dict]) -> list[dict]:
    """The K&R statements, each with the numbers that decide it."""
    rows = {r["engine"]: r for r in classifier["rows"]}
    ref = classifier["ref"]
    lap_mean, _ = moments(classifier["results"]["laplace"])
    nearer, farther = shrinkage_counts(lap_mean, ref["mean"], ref["mcse_mean"])
    log_z, log_z_mcse = classifier["log_z"]
    lap_z, ep_z = rows["laplace"]["log_evidence"], rows["ep"]["log_evidence"]
    gaps = [r["laplace"] - r["tsmc"] for r in ladder]
    return [
        {
            "claim": "Laplace's mean of f (the mode) lies nearer zero than the posterior mean (K&R sec. 7)",
            "measured": f"nearer at {nearer} points, farther at {farther} (beyond 4 MCSE; N = {len(lap_mean)})",
            "holds": mode_nearer_zero(lap_mean, ref["mean"], ref["mcse_mean"]),
        },
        {
            "claim": "Laplace's log evidence is too low (K&R sec. 8)",
            "measured": f"Laplace {lap_z:.3f}, tempered SMC {log_z:.3f} ± {log_z_mcse:.3f}",
            "holds": evidence_too_low(lap_z, log_z, log_z_mcse),
        },
        {
            "claim": "EP's log evidence is closer to the reference than Laplace's",
            "measured": f"EP {ep_z - log_z:+.3f}, Laplace {lap_z - log_z:+.3f} (against tempered SMC)",
            "holds": closer(ep_z - log_z, lap_z - log_z),
        },
        {
            "claim": "EP's mean of f is closer to the reference than Laplace's (largest error, reference sds)",
            "measured": f"EP {rows['ep']['max_mean_err_sd']:.3f}, Laplace {rows['laplace']['max_mean_err_sd']:.3f}",
            "holds": closer(rows["ep"]["max_mean_err_sd"], rows["laplace"]["max_mean_err_sd"]),
        },
        {
            "claim": "Laplace's evidence error grows with the signal variance (K&R Fig. 5's trend)",
            "measured": ", ".join(f"var {r['variance']:g}: {g:+.3f}" for r, g in zip(ladder, gaps, strict=True)),
            "holds": grows(gaps),
        },
    ]


# -- output -------------------------------------------------------------------------------------------------------


def plot(out: Path, classifier: dict, cox: dict, ladder: list[dict], cox_X) -> None:
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    colours = {"laplace": "C0", "ep": "C1", "ess": "C2", "nuts": "C3", "svi-mvn": "C4", "svgp": "C5"}
    for row_axes, case, title in ((axes[0], classifier, "classifier (Ripley synth)"), (axes[1], cox, "coal Cox")):
        ref = case["ref"]
        ax = row_axes[0]
        for label, result in case["results"].items():
            mean, _ = moments(result)
            ax.plot(ref["mean"], mean, ".", color=colours[label], label=label, alpha=0.7)
        lo, hi = ref["mean"].min(), ref["mean"].max()
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.set(xlabel="reference E[f_i]", ylabel="engine's E[f_i]", title=f"{title}: posterior means")
        ax.legend(fontsize=8)
        ax = row_axes[1]
        for label, result in case["results"].items():
            _, sd = moments(result)
            ax.plot(ref["sd"], sd, ".", color=colours[label], label=label, alpha=0.7)
        lo, hi = ref["sd"].min(), ref["sd"].max()
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.set(xlabel="reference sd(f_i)", ylabel="engine's sd(f_i)", title=f"{title}: posterior sds")
    ax = axes[0, 2]
    variances = [r["variance"] for r in ladder]
    for engine, colour in (("laplace", "C0"), ("ep", "C1")):
        ax.plot(variances, [r[engine] - r["tsmc"] for r in ladder], "o-", color=colour, label=engine)
    ax.errorbar(variances, [0.0] * len(ladder), yerr=[4 * r["tsmc_mcse"] for r in ladder], fmt="k_", label="±4 MCSE")
    ax.set(xscale="log", xlabel="signal variance", ylabel="log Z - log Z (tempered SMC)", title="evidence error")
    ax.legend(fontsize=8)
    ax = axes[1, 2]
    x = np.asarray(cox_X)[:, 0] * 10 + 1851
    f = np.asarray(cox["reference"].posterior["f"]).reshape(-1, len(x))
    rate = np.exp(f)
    ax.fill_between(x, *np.percentile(rate, [2.5, 97.5], axis=0), color="0.85", label="reference 95%")
    ax.plot(x, rate.mean(0), "k-", label="reference mean")
    for label, result in cox["results"].items():
        ax.plot(x, predictive(result, "poisson"), "-", color=colours[label], lw=0.8, label=label)
    ax.set(xlabel="year", ylabel="events per bin", title="coal: E[exp f]")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "nonconjugate_comparison.png", dpi=100)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    settings = QUICK if quick else FULL
    clf_spec = zoo.get("gp/classification", link="probit")
    clf_data = classifier_data(settings["n_classifier"])
    engines = settings["engines"]
    classifier = run_case("classifier", clf_spec, clf_data, CLASSIFIER_PARAMS, "probit", settings, engines)
    cox_spec = zoo.get("gp/cox", num_bins=settings["num_bins"])
    cox = run_case(
        "cox",
        cox_spec,
        cox_data(settings["num_bins"]),
        COX_PARAMS,
        "poisson",
        settings,
        tuple(e for e in engines if e != "ep"),
    )
    by_engine = {r["engine"]: r["log_evidence"] for r in classifier["rows"]}
    main_row = {"variance": CLASSIFIER_PARAMS["variance"], "laplace": by_engine["laplace"], "ep": by_engine["ep"]}
    main_row["tsmc"], main_row["tsmc_mcse"] = classifier["log_z"]
    ladder = evidence_ladder(clf_spec, clf_data, settings, {main_row["variance"]: main_row})
    checked = claims(classifier, ladder)
    rows = classifier["rows"] + cox["rows"]
    write_csv(out / "engines.csv", rows)
    write_csv(out / "evidence_ladder.csv", ladder)
    write_csv(out / "claims.csv", checked)
    plot(out, classifier, cox, ladder, cox_data(settings["num_bins"]).observed["X"])
    atomic_write_text(out / "comparison.md", report(classifier, cox, rows, ladder, checked, settings, quick))


def _fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def report(classifier, cox, rows, ladder, checked, settings, quick: bool) -> str:
    def ref_line(name, case):
        ref = case["ref"]
        return (
            f"{name}: min bulk ESS {ref['min_ess']:.0f}, max R-hat {ref['max_rhat']:.3f}, largest MCSE of a mean "
            f"{ref['mcse_mean'].max():.3g} (in sds: {np.max(ref['mcse_mean'] / ref['sd']):.3g}); tempered SMC "
            f"log Z {case['log_z'][0]:.3f} ± {case['log_z'][1]:.3f}"
        )

    table = markdown_table([{k: _fmt(v) for k, v in r.items()} for r in rows])
    ladder_table = markdown_table([{k: _fmt(v) for k, v in r.items()} for r in ladder])
    claim_table = markdown_table([{k: str(v) for k, v in r.items()} for r in checked])
    return f"""# Approximate inference for latent GPs against a long NUTS reference ({"quick" if quick else "full"} run)

Kuss & Rasmussen (2005) compared Laplace, EP and MCMC on GP classifiers; this is that comparison on the zoo's engines
(docs/sources/nonconjugate.md#comparison-figure). No numbers are transcribed: K&R's data sets (Ionosphere, Sonar,
USPS) are not among ours, so the comparison is of directions, not values.

- Classifier: `gp/classification` (probit, SE-ARD, whitened), {settings["n_classifier"]} points of Ripley's synth.tr
  (seed 0), hyperparameters fixed at {CLASSIFIER_PARAMS}.
- Cox process: `gp/cox` ({settings["num_bins"]} bins of the coal-mining disasters), fixed at {COX_PARAMS}.
- Reference: NUTS {settings["reference"]}. {ref_line("Classifier", classifier)}. {ref_line("Cox", cox)}.
- Engines: {", ".join(settings["engines"])} (ep on the classifier only: probit); ess {settings["ess"]}, nuts
  {settings["nuts"]}, svi-mvn {settings["svi"] if "svi-mvn" in settings["engines"] else "(full runs only)"}
  (full-rank Gaussian VI on the whitened latents), svgp {
        settings["svgp"] if "svgp" in settings["engines"] else "(full runs only)"
    } (`gp/svgp-nonconjugate` at the same hyperparameters, its q(f) at the inputs),
  tempered SMC {settings["tsmc"]} for the reference evidence.
- Errors of means are in reference sds; `max_predictive_err`: p(y = 1) (classifier) or the expected count (Cox).
  Times in seconds on a shared 2-core machine (indicative).

{table}

Evidence ladder (classifier, lengthscales fixed; log evidence of Laplace and EP, tempered SMC with its MCSE):

{ladder_table}

The MCSE of tempered SMC's log Z is the spread between its runs: a bias shared by the runs (the random-walk mutation
mixes slowly in 100 dimensions, and log of an unbiased Z estimate is biased low) is not in it, so differences of a
few tenths of a nat are not decided by this reference. tests/test_nonconjugate.py decides the evidence direction on
separable data with an importance-sampling reference (docs/sources/nonconjugate.md#bias).

Claims (K&R 2005), each decided by the numbers beside it:

{claim_table}
"""


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    main(args.quick, args.out)
