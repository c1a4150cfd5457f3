"""Kaiser 2021 Fig 6.2: the identity as a composition of three linear layers, and the collapse of a posterior that is
independent across layers.

Model (``deep_gp/linear``, docs/sources/kaiser.md#layer-collapse): three zero-mean GP layers with the linear kernel
h h' on a scalar input, i.e. f_l(h) = w_l h with w_l ~ N(0, 1), y = f_3(f_2(f_1(x))) + eps. Data (the thesis gives
none): y = x + N(0, 0.05^2) at 20 even points of [-1, 1] (seed 0). The exact posterior puts equal mass on the four sign
patterns (+ + +), (+ - -), (- + -), (- - +) (flipping two signs changes neither prior nor likelihood). Three
approximations, all through ``inference.run``:
- NUTS (BlackJAX; chains started uniform on (-2, 2), so they start in different sign patterns): each chain stays in
  one pattern (the patterns are separated by the region around w_l = 0 that does not fit the data), so together the
  chains show the patterns and each chain the exact within-pattern posterior;
- ``svi`` with the mean-field Gaussian guide (``guide="normal"``: q(w_1) q(w_2) q(w_3), the layer-independent family
  of DSVI and the thesis's "independent approximation"), several runs (seeds) as the figure's colours;
- ``svi`` with a full-rank Gaussian guide (``guide="mvn"``: correlated, still one Gaussian) as a contrast.
Adam (lr 0.01) for 3000 steps, 1000 draws from each fitted guide.

Claims: the exact posterior has several sign patterns that fit the data; the mean-field runs land on different
patterns (the figure's colours); each mean-field run puts its mass on one pattern; and its layers are near-deterministic
(per-layer sd under a fifth of the exact within-pattern sd: "collapses to deterministic functions").
"""

from pathlib import Path

import jax
import numpy as np

import inference
import zoo
from paper_figures._claims import pyplot, write_results

DESCRIPTION = "Kaiser 2021 Fig 6.2: the identity as a 3-layer linear deep GP; layer collapse under mean-field VI"
LAYERS = 3
COLLAPSE_RATIO = 0.2  # "deterministic": a layer's sd under a fifth of the exact posterior's within one sign pattern


def settings(quick: bool) -> dict:
    if quick:
        return {"chains": 4, "warmup": 300, "samples": 300, "runs": 3, "steps": 2000}
    return {"chains": 8, "warmup": 1000, "samples": 1000, "runs": 10, "steps": 3000}


def slopes(idata) -> np.ndarray:
    """(chains, draws, L) slopes from a result's posterior."""
    return np.stack([np.asarray(idata.posterior[f"slope_{layer}"].values) for layer in range(1, LAYERS + 1)], -1)


def pattern(w: np.ndarray) -> str:
    """The majority sign pattern of draws (S, L), e.g. '+--'."""
    return "".join("+" if s > 0 else "-" for s in np.sign(w).mean(0))


def compute(quick: bool) -> tuple[list[dict], dict, dict]:
    s = settings(quick)
    spec = zoo.get("deep_gp/linear", num_layers=LAYERS)
    observed = spec.simulate(jax.random.PRNGKey(0)).observed
    nuts = slopes(inference.run(spec, observed, engine="nuts", seed=0, num_chains=s["chains"],
                                num_warmup=s["warmup"], num_samples=s["samples"]))  # fmt: skip
    fits = {}
    for guide in ("normal", "mvn"):
        fits[guide] = [slopes(inference.run(spec, observed, engine="svi", guide=guide, seed=seed, num_steps=s["steps"],
                                            learning_rate=0.01, num_samples=1000))[0]
                       for seed in range(s["runs"] if guide == "normal" else 3)]  # fmt: skip
    exact_patterns = [pattern(w) for w in nuts]
    products = nuts.prod(-1).mean(1)
    exact_sd = np.sqrt(np.mean(nuts.var(1), 0))  # pooled within-chain sd per layer (L,)
    mf = fits["normal"]
    mf_patterns = [pattern(w) for w in mf]
    purity = [float(np.mean(np.all(np.sign(w) == np.sign(w.mean(0)), -1))) for w in mf]
    mf_sd = np.array([w.std(0) for w in mf])  # (runs, L)
    mvn_sd = np.array([w.std(0) for w in fits["mvn"]])
    rows = [
        {"figure": "6.2", "claim": "the identity has several solutions as three linear layers (slopes of either sign)",
         "measured": f"exact posterior (NUTS, {len(nuts)} chains): sign patterns {exact_patterns}, mean product "
                     f"w1 w2 w3 per chain {np.round(products, 3).tolist()}",
         "verdict": "PASS" if len(set(exact_patterns)) >= 2 and np.all(np.abs(products - 1) < 0.05) else "FAIL"},
        {"figure": "6.2", "claim": "different training runs (colours) give different solutions",
         "measured": f"mean-field runs' sign patterns: {mf_patterns}",
         "verdict": "PASS" if len(set(mf_patterns)) >= 2 else "FAIL"},
        {"figure": "6.2", "claim": "an independent approximation collapses to a single solution",
         "measured": f"share of each mean-field run's draws in its own sign pattern: min {min(purity):.4f}",
         "verdict": "PASS" if min(purity) > 0.99 else "FAIL"},
        {"figure": "6.2", "claim": "... and to deterministic functions",
         "measured": f"per-layer sd: mean-field runs max {mf_sd.max():.4f}, exact within one pattern "
                     f"{np.round(exact_sd, 3).tolist()} (ratio max {(mf_sd / exact_sd).max():.3f}, threshold "
                     f"{COLLAPSE_RATIO}); full-rank Gaussian max {mvn_sd.max():.4f}",
         "verdict": "PASS" if np.all(mf_sd < COLLAPSE_RATIO * exact_sd) else "FAIL"},
    ]  # fmt: skip
    numbers = {"exact_sd_layer1": exact_sd[0], "mf_sd_max": mf_sd.max(), "mvn_sd_max": mvn_sd.max(),
               "distinct_mf_patterns": len(set(mf_patterns)),
               "distinct_exact_patterns": len(set(exact_patterns))}  # fmt: skip
    return rows, numbers, {"nuts": nuts, "mf": mf, "mvn": fits["mvn"], "observed": observed}


def plot(out: Path, data: dict) -> None:
    """Left: each layer's functions h -> w_l h (a few draws per mean-field run, one colour per run); right: the exact
    posterior's (w_1, w_2) per NUTS chain against the mean-field runs."""
    plt = pyplot()
    fig, axes = plt.subplots(1, LAYERS + 1, figsize=(15, 3.6))
    h = np.linspace(-1.0, 1.0, 2)
    for run, w in enumerate(data["mf"]):
        for layer in range(LAYERS):
            for draw in w[:20]:
                axes[layer].plot(h, draw[layer] * h, color=f"C{run % 10}", alpha=0.3, lw=0.8)
    for layer in range(LAYERS):
        axes[layer].set_title(f"f_{layer + 1} (mean-field runs)")
        axes[layer].set_xlabel(f"input of layer {layer + 1}")
    for chain, w in enumerate(data["nuts"]):
        label = "exact (NUTS)" if chain == 0 else None
        axes[-1].scatter(w[::5, 0], w[::5, 1], s=3, alpha=0.3, color="0.5", label=label)
    for run, w in enumerate(data["mf"]):
        axes[-1].scatter(w[::10, 0], w[::10, 1], s=3, color=f"C{run % 10}")
    axes[-1].set_xlabel("slope w_1")
    axes[-1].set_ylabel("slope w_2")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "kaiser_layer_collapse.png", dpi=110)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows, numbers, data = compute(quick)
    plot(out, data)
    write_results(out, rows, numbers, __doc__, quick)
