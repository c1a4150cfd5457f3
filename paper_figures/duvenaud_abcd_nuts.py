"""Beyond Duvenaud 2014 ch. 3 (issue 20): a kernel found by the BIC structure search, refitted by NUTS. Do the
ML-II hyperparameters the search scored sit inside the posterior bulk?

Data: the airline series' training part (``zoo.data.tsdl`` "01-airline", 129 months). The search
(``inference.applications.structure_search.search``, base SE, Lin, Per, operators C.1-C.3, BIC) picks a kernel; that
structure is
then sampled by NUTS (``inference.run(..., engine="nuts")``) as ``gp/regression`` on the same standardised data, with
the model's priors (LogNormal(0, 1) on positive hyperparameters, Normal(0, 1) on locations, LogNormal(-2, 1) on the
noise variance; docs/sources/duvenaud.md#kernel-priors). For every hyperparameter we report the posterior quantile of
its ML-II value, q = P(theta < theta_ML | y), and call it inside the bulk when 0.05 <= q <= 0.95. The ML-II point
maximises p(y | theta) and the posterior adds the prior, so q near 0.5 is not expected exactly; a value outside the
bulk says the BIC score was taken at a point the posterior finds atypical (docs/sources/duvenaud.md#nuts-check).

Full: search to depth 3 with 2 restarts; NUTS 2 chains x (300 warm-up + 300 draws), trees of at most 2^7 - 1
leapfrog steps (the cost cap of one core's slot). Quick: depth 1, base SE and Lin, one restart; NUTS 1 chain x
(100 + 100), trees of at most 63 steps.
"""

from pathlib import Path

import arviz as az
import numpy as np

import inference
import zoo
from inference.applications.structure_search import search
from inference.applications.structure_search.fit import start_values
from inference.files.atomic import atomic_write_text
from inference.files.tables import markdown_table, write_csv
from zoo import gp
from zoo.data import tsdl
from zoo.kernels import with_values

DESCRIPTION = "Duvenaud ch. 3 (beyond): a searched kernel's ML-II hyperparameters against their NUTS posterior"
FULL = {"base": ("SE", "Lin", "Per"), "depth": 3, "restarts": 2, "chains": 2, "warmup": 300, "samples": 300, "tree": 7}
QUICK = {"base": ("SE", "Lin"), "depth": 1, "restarts": 1, "chains": 1, "warmup": 100, "samples": 100, "tree": 6}
BULK = (0.05, 0.95)


def quantile_of(draws: np.ndarray, value: float) -> float:
    """P(theta < value) under the draws (S,): the fraction of draws below ``value``."""
    return float(np.mean(np.asarray(draws) < value))


def draw_log_likelihoods(best, Xs: np.ndarray, ys: np.ndarray, idata, count: int = 40) -> np.ndarray:
    """log p(y | theta) (count,) at ``count`` posterior draws spread over the chains, to compare with the ML-II
    optimum's: a draw above it means the ML-II fit stopped at a local optimum."""
    posterior = idata.posterior.stack(sample=("chain", "draw"))
    picks = np.linspace(0, posterior.sizes["sample"] - 1, count).astype(int)
    values = []
    for i in picks:
        draw = {name: np.asarray(posterior[name].values[..., i], float) for name in posterior.data_vars}
        kernel = with_values(best.kernel, draw, D=Xs.shape[1])
        values.append(float(gp.log_marginal_likelihood(kernel, Xs, ys, draw["noise"])))
    return np.asarray(values)


def main(quick: bool, out: Path) -> None:
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = QUICK if quick else FULL
    data = tsdl.load("01-airline")
    result = search(
        data.x_train[:, None],
        data.y_train,
        depth=settings["depth"],
        base=settings["base"],
        operators=("C.1", "C.2", "C.3"),
        restarts=settings["restarts"],
    )
    best = result.best
    s = result.standardisation
    Xs, ys = s.inputs(result.X), s.targets(result.y)
    ml2 = {name: float(np.squeeze(v)) for name, v in start_values(best.kernel, best.noise).items()}
    idata = inference.run(
        zoo.get("gp/regression", kernel=best.expression),
        {"X": Xs, "y": ys},
        engine="nuts",
        seed=0,
        num_chains=settings["chains"],
        num_warmup=settings["warmup"],
        num_samples=settings["samples"],
        max_num_doublings=settings["tree"],
    )
    rhat = az.rhat(idata.posterior) if settings["chains"] > 1 else {}
    draws_ll = draw_log_likelihoods(best, Xs, ys, idata)
    rows = []
    figure, axes = plt.subplots(1, len(ml2), figsize=(2.6 * len(ml2), 2.4), squeeze=False)
    for ax, (name, value) in zip(axes[0], ml2.items(), strict=True):
        draws = np.asarray(idata.posterior[name].values, float).ravel()
        q = quantile_of(draws, value)
        low, median, high = np.quantile(draws, [0.05, 0.5, 0.95])
        rows.append(
            {
                "site": name,
                "ML-II": f"{value:.4g}",
                "posterior 5 %": f"{low:.4g}",
                "median": f"{median:.4g}",
                "95 %": f"{high:.4g}",
                "quantile of ML-II": round(q, 3),
                "inside bulk": BULK[0] <= q <= BULK[1],
                "R-hat": round(float(np.max(rhat[name].values)), 3) if name in rhat else "-",  # ARD sites are (1,)
            }
        )
        ax.hist(np.log(draws), bins=30, color="tab:blue", alpha=0.6)
        ax.axvline(np.log(value), color="tab:red", lw=1.5)
        ax.set_title(f"log {name}\nq = {q:.2f}", fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "ml2_in_posterior.png", dpi=100)
    plt.close(figure)
    write_csv(out / "ml2_in_posterior.csv", rows)
    inside = sum(r["inside bulk"] for r in rows)
    atomic_write_text(
        out / "comparison.md",
        f"# A searched kernel refitted by NUTS ({'quick' if quick else 'full'})\n\n"
        f"Airline training part ({len(data.x_train)} months); search settings {settings}; best kernel "
        f"`{best.expression}` (depth {best.depth}, BIC {best.bic:.2f}, standardised data). NUTS on the same "
        f"structure with gp/regression's priors: {settings['chains']} chain(s) x {settings['samples']} draws. "
        f"{inside} of {len(rows)} ML-II values lie inside the posterior's central 90 % (quantile in "
        f"[{BULK[0]}, {BULK[1]}]); no published counterpart (the thesis fits by ML-II only). log p(y | theta) "
        f"(standardised y): ML-II {best.log_likelihood:.2f}; at {len(draws_ll)} posterior draws median "
        f"{np.median(draws_ll):.2f}, max {np.max(draws_ll):.2f} (a draw above the ML-II value means the ML-II fit "
        f"is a local optimum).\n\n" + markdown_table(rows) + "\n",
    )
