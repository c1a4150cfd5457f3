"""Recovery of known kernel structures by our greedy search, SMC over structures and GPy-ABCD, on series simulated
from each structure: recovery rate and held-out log density (docs/performance.md#structure-recovery).

Usage::

    python -m benchmarks.peers install gpy-abcd          # once: GPy-ABCD in its own venv (benchmarks/peers.py)
    python -m benchmarks.structure_recovery [--truths SE,Per,d3.0,...] [--drawn K] [--seeds 0,1] [--n 50,100]
        [--snr 3,10,30] [--depth 2] [--restarts 3] [--methods greedy,greedy-laplace,gpy-abcd,smc]
        [--smc-particles 32] [--results DIR] [--plot F]

Pin it (``taskset -c 1 ...``). The truths: ``TRUTHS`` (structures of depth 1 and 2 with hand-set hyperparameters)
and, with ``--drawn K``, K structures at each depth 1..``--depth`` drawn from the grammar (``draw_truth``: distinct
bases SE, Lin, Per joined by + and x; named ``d<depth>.<index>``), on inputs x = 0.1, 0.2, ... in years-like units.
Each truth is drawn once per seed, length n and signal-to-noise ratio (every pair of the ``--n`` and ``--snr``
lists) at n + n / 5 equally spaced inputs, with Gaussian noise of variance (mean prior variance of the signal on
the training inputs) / snr; the first n points train, the last n / 5 are held out (an extrapolation, as in the ABCD
paper's sec. 3.8.2). On the training part:

* ``greedy``: our search (``inference.applications.structure_search.search``): base SE, RQ, Lin, Per, operators
  C.1-C.11, BIC, beam 1, ``--depth`` levels, ``--restarts`` per candidate, no early stop;
* ``greedy-laplace``: the same search ranked by Laplace's log evidence (``score="laplace"``; BIC still recorded);
* ``greedy-tsmc``: the same search ranked by the tempered-SMC log evidence (``score="tsmc"`` with
  ``TSMC_SCORE_OPTIONS``: 64 particles, 5 mutation steps, one run, about 20-25 s of CPU per SE-sized candidate at
  n = 100; docs/performance.md#structure-recovery-laplace);
* ``gpy-abcd``: GPy-ABCD 1.2.3's ``explore_model_space`` in its own venv with its ``Default`` start kernels and
  rules, ``rounds = depth - 1`` (its round 0 is our depth 1; as in ``benchmarks/abcd_vs_gpy_abcd.py``), BIC, beam 1,
  the same restarts, on the training part standardised by its mean and sd (our search standardises itself). Its
  grammar leaves SE out (its config's ``__INCLUDE_SE_KERNEL = False``), so it cannot recover a truth with SE;
* ``smc``: SMC over structures (``smc_search``, operators + and x, no changepoints) with ``--smc-particles``; its
  structure is the most probable one and its held-out density the particles' mixture.

Recovered: the found structure equals the truth up to equivalence (``same_structure``: canonical form, with white noise
summands dropped as the likelihood's own noise, constants dropped as summands and factors, and GPy-ABCD's PER, the
periodic kernel less its constant, read as Per). For every miss the truth's structure is refitted by our ML-II
(``refit_truth``: one restart from the true hyperparameters, the rest jittered around them), so its BIC can be set
beside the found kernel's (for ``greedy-laplace`` and ``greedy-tsmc`` its Laplace or tempered-SMC evidence too, from the
refit's optimum, and the comparison is by that score): a miss whose found kernel has the higher BIC is the score's limit
(the data do not single the truth out), a miss with the lower BIC is the search's: its optimiser's when the search
fitted the truth's structure below the refit, its path's when the greedy path never reached the truth.
Held-out: log p(y_test | y_train) of the held-out points jointly, in data units; the oracle is the true kernel and
noise. Each row also keeps the fraction of held-out points inside the central 95 % band of the pointwise predictive
(``inside_95``; SMC: of the mixture) and the process CPU seconds (``cpu_s``: the search and its forecast; ``wall_s``
is the search's alone). Every (truth, n, snr, seed, method) row is kept as JSON in ``--results`` and reused by a
rerun with the same settings. The report: recovery by the truth's depth, length and ratio, then per truth, then
every miss. ``run_method`` is the dispatch that ``benchmarks/structure_smc.py`` (real series) shares.
"""

import argparse
import functools
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

from benchmarks import peers
from benchmarks.abcd_vs_gpy_abcd import to_zoo_expression
from inference.applications.structure_search import Standardisation, search, smc_search
from inference.applications.structure_search.bounds import PeriodBounds
from inference.applications.structure_search.fit import FitFailure, fit_ml2, start_values
from inference.applications.structure_search.scores import bic, laplace_log_evidence, tsmc_log_evidence
from inference.applications.structure_search.smc import SMC_DEFAULTS
from inference.files.atomic import atomic_write_text
from zoo import gp
from zoo.errors import OptionError
from zoo.kernels import (
    Changepoint,
    Constant,
    Linear,
    Periodic,
    Product,
    SquaredExponential,
    Sum,
    White,
    ZeroMeanPeriodic,
    num_params,
    parse,
    site_names,
    with_values,
)
from zoo.structure.canonical import key
from zoo.structure.grammar import Grammar, expand
from zoo.structure.rescale import rescale_inputs, scale_output

PEER = "gpy-abcd"
METHODS = ("greedy", "greedy-laplace", "greedy-tsmc", "gpy-abcd", "smc")
# The greedy searches and the score each ranks its candidates by (search(..., score=...)).
GREEDY_SCORES = {"greedy": "bic", "greedy-laplace": "laplace", "greedy-tsmc": "tsmc"}
# The tempered-SMC score's engine options: the tsmc engine's defaults (256 particles x 2 runs x 10 mutation steps) took
# over 240 s per candidate (docs/performance.md#structure-recovery-laplace)
TSMC_SCORE_OPTIONS = {"num_particles": 64, "num_chains": 1, "num_mcmc_steps": 5}
SPACING = 0.1  # input spacing; n = 100 covers 10 units, so a period of 1.5 is seen ~7 times
# The true structures (data units), depth 1 and 2 of our grammar; CP(SE, SE) is C.4 applied to SE.
TRUTHS = {
    "SE": SquaredExponential(lengthscale=1.0, variance=1.0),
    "Per": Periodic(variance=1.0, lengthscale=1.0, period=1.5),
    "Lin": Linear(variance=0.1, offset=0.5, location=5.0),
    "SE + Per": SquaredExponential(lengthscale=2.0, variance=1.0) + Periodic(variance=0.5, lengthscale=1.0, period=1.5),
    "Lin x Per": Linear(variance=0.05, offset=0.3, location=0.0) * Periodic(variance=1.0, lengthscale=1.0, period=1.5),
    "CP(SE, SE)": Changepoint(
        SquaredExponential(lengthscale=0.3, variance=1.0),
        SquaredExponential(lengthscale=3.0, variance=1.0),
        location=5.0,
        width=0.2,
    ),
}
# Truths drawn from the grammar (``draw_truth``): from a base kernel, each further level one random expansion by +
# or x (operators C.1, C.2) that brings in a base type not yet present, so a depth-d truth has d distinct bases.
# RQ is left out of the draws (it contains SE as alpha -> infinity, so "recovered" would be ambiguous).
DRAWN_GRAMMAR = Grammar(base=("SE", "Lin", "Per"), operators=("C.1", "C.2"))
# Hyperparameters of drawn truths, uniform (log-uniform for lengthscales and Lin's variance) in data units: spacing
# 0.1, n = 100 spans 10 units; periods seen 5-12 times on 10 units and at least twice on 5 (n = 50, the search's
# period bound); Lin's slope sd 0.14-0.32 per unit around a location inside the series.
DRAWN_RANGES = {
    ("SE", "lengthscale"): (0.5, 2.0, "log"),
    ("SE", "variance"): (0.5, 1.5, "lin"),
    ("Per", "lengthscale"): (0.8, 1.5, "lin"),
    ("Per", "period"): (0.8, 2.0, "lin"),
    ("Per", "variance"): (0.5, 1.5, "lin"),
    ("Lin", "variance"): (0.02, 0.1, "log"),
    ("Lin", "offset"): (0.0, 0.5, "lin"),
    ("Lin", "location"): (0.0, 10.0, "lin"),
}
DRAWN_NAME = re.compile(r"d(\d+)\.(\d+)")  # drawn truth d<depth>.<index>


def _leaves(kernel) -> list:
    """The base kernels of ``kernel``, in reading order."""
    if not kernel.CHILDREN:
        return [kernel]
    return [leaf for c in kernel.CHILDREN for leaf in _leaves(getattr(kernel, c))]


@functools.cache  # a cell asks for its truth several times (simulation, oracle, refit)
def draw_truth(depth: int, index: int):
    """Truth ``d<depth>.<index>``: a structure of ``depth`` distinct bases drawn through ``DRAWN_GRAMMAR``'s
    expansions, its hyperparameters from ``DRAWN_RANGES``; the same (depth, index) always gives the same kernel."""
    rng = np.random.default_rng([43, depth, index])
    kernel = None
    for _ in range(depth):
        options = [c.kernel for c in expand(kernel, DRAWN_GRAMMAR) if _distinct(c.kernel)]
        kernel = options[rng.integers(len(options))]
    # site_names lists the parametrised nodes in reading order, each with its PARAMS: here only the leaves have any
    kinds = [(leaf.SYMBOL, param) for leaf in _leaves(kernel) for param in leaf.PARAMS]
    values = {}
    for name, kind in zip(site_names(kernel), kinds, strict=True):
        low, high, scale = DRAWN_RANGES[kind]
        draw = np.exp(rng.uniform(np.log(low), np.log(high))) if scale == "log" else rng.uniform(low, high)
        values[name] = jnp.asarray(float(draw))
    return with_values(kernel, values, D=0)


def _distinct(kernel) -> bool:
    types = [leaf.SYMBOL for leaf in _leaves(kernel)]
    return len(set(types)) == len(types)


def truth_kernel(name: str):
    """The data-units kernel of truth ``name``: one of ``TRUTHS`` or a drawn ``d<depth>.<index>``."""
    if name in TRUTHS:
        return TRUTHS[name]
    match = DRAWN_NAME.fullmatch(name)
    if match is None:
        raise OptionError(f"unknown truth {name!r}; truths: {list(TRUTHS)} or drawn ones d<depth>.<index>, e.g. d3.0.")
    return draw_truth(int(match[1]), int(match[2]))


def truth_depth(kernel) -> int:
    """The grammar depth of a truth: its number of base kernels (CP(SE, SE) is C.4 applied to SE: depth 2)."""
    return len(_leaves(kernel))


def _truth_index(name: str) -> int:
    """A stable integer per truth for the simulation's random stream."""
    if name in TRUTHS:
        return list(TRUTHS).index(name)
    match = DRAWN_NAME.fullmatch(name)
    return 1000 + 100 * int(match[1]) + int(match[2])


# Runs inside the peer's venv: argv[1] a JSON file {x, y, x_test, y_test, depth, restarts, seed}; prints one JSON line
# (the held-out log density in the standardised units it was given).
GPY_SCRIPT = r"""
import contextlib, json, sys, time, warnings
import numpy as np
from GPy_ABCD import BIC, explore_model_space, fit_mods_not_parallel, production_rules, start_kernels
cfg = json.load(open(sys.argv[1]))
X, Y = np.asarray(cfg["x"], float)[:, None], np.asarray(cfg["y"], float)[:, None]
Xt, Yt = np.asarray(cfg["x_test"], float)[:, None], np.asarray(cfg["y_test"], float)
np.random.seed(cfg["seed"])
warnings.simplefilter("ignore")
t0 = time.perf_counter()
with contextlib.redirect_stdout(sys.stderr):
    sorted_models, tested, *_ = explore_model_space(
        X, Y, start_kernels=start_kernels["Default"], p_rules=production_rules["Default"], utility_function=BIC,
        rounds=cfg["depth"] - 1, beam=1, restarts=cfg["restarts"], model_list_fitter=fit_mods_not_parallel,
        optimiser="lbfgsb", verbose=False,
    )
wall_s = time.perf_counter() - t0
best = sorted_models[0]
mean, cov = best.model.predict(Xt, full_cov=True)  # include_likelihood: the noise is on the diagonal
r = Yt - mean[:, 0]
L = np.linalg.cholesky(cov)
z = np.linalg.solve(L, r)
log_density = float(-0.5 * z @ z - np.log(np.diag(L)).sum() - 0.5 * len(r) * np.log(2 * np.pi))
print(json.dumps({
    "wall_s": wall_s, "fits": sum(len(level) for level in tested), "kernel": str(best.kernel_expression),
    "log_likelihood": float(best._ll()), "num_params": int(best._k()), "bic": float(best.cached_utility_function),
    "log_density_std": log_density,
}))
"""


def _strip(kernel):
    """``kernel`` without white-noise and constant summands or constant factors, ZPer read as Per (None: nothing
    left)."""
    if isinstance(kernel, Sum | Product):
        left, right = _strip(kernel.left), _strip(kernel.right)
        if left is None or right is None:
            return right if left is None else left
        return type(kernel)(left, right)
    if isinstance(kernel, White | Constant):
        return None
    if isinstance(kernel, ZeroMeanPeriodic):
        return Periodic()
    if kernel.CHILDREN:
        children = [_strip(getattr(kernel, c)) for c in kernel.CHILDREN]
        return type(kernel)(*[Constant() if c is None else c for c in children])
    return kernel


def same_structure(found: str, truth: str) -> bool:
    """Whether two kernel expressions (our grammar's text) name the same structure up to white noise, constants and
    the constant part of Per (module docstring)."""
    a, b = _strip(parse(found)), _strip(parse(truth))
    return a is not None and b is not None and key(a) == key(b)


def simulate(name: str, n: int, snr: float, seed: int) -> dict:
    """One draw of truth ``name`` at n + n // 5 inputs: x, y (n,) for training, x_test, y_test (n // 5,) and the noise
    variance (module docstring)."""
    kernel = truth_kernel(name)
    m = n // 5
    x = SPACING * np.arange(1, n + m + 1)
    K = np.asarray(kernel(jnp.asarray(x[:, None])))
    noise = float(np.mean(np.diag(K)[:n]) / snr)
    rng = np.random.default_rng([seed, _truth_index(name)])
    L = np.linalg.cholesky(K + 1e-10 * np.eye(len(x)))
    y = L @ rng.standard_normal(len(x)) + math.sqrt(noise) * rng.standard_normal(len(x))
    return {"x": x[:n], "y": y[:n], "x_test": x[n:], "y_test": y[n:], "noise": noise}


def oracle_log_density(name: str, data: dict) -> float:
    """log p(y_test | y_train) under the true kernel and noise."""
    X, Xt = jnp.asarray(data["x"][:, None]), jnp.asarray(data["x_test"][:, None])
    post = gp.predict(truth_kernel(name), X, jnp.asarray(data["y"]), data["noise"], Xt, True)
    r = jnp.asarray(data["y_test"]) - post.mean
    return float(gp.gaussian_log_evidence(r, post.cov + data["noise"] * jnp.eye(len(r)))[0])


def to_standardised(kernel, scale: Standardisation):
    """The data-units ``kernel`` as a kernel of the standardised inputs and targets (inverse of
    ``Standardisation.kernel_in_data_units``)."""
    shift, sx = float(scale.x_shift[0]), float(scale.x_scale[0])
    return scale_output(rescale_inputs(kernel, -shift / sx, 1.0 / sx), 1.0 / scale.y_scale**2)


def refit_truth(name: str, data: dict, restarts: int, seed: int, score: str = "bic") -> dict:
    """The true structure fitted by our ML-II on the standardised training data, chain 0 from the true
    hyperparameters and noise, the others jittered around them, within the periodic bounds: log p and our BIC, and
    with ``score="laplace"`` (``"tsmc"``) Laplace's log evidence from that optimum (the tempered-SMC evidence of that
    structure), as the search scores a candidate."""
    X, y = data["x"][:, None], data["y"]
    scale = Standardisation.of(X, y)
    Xs, ys = scale.inputs(X), scale.targets(y)
    try:
        fit = fit_ml2(
            to_standardised(truth_kernel(name), scale),
            Xs,
            ys,
            data["noise"] / scale.y_scale**2,
            restarts,
            seed=seed,
            bounds=PeriodBounds.of(Xs),
            optimizer="host-lbfgs",
        )
    except FitFailure as err:
        return {"error": str(err)}
    k = num_params(fit.kernel, 1) + 1
    out = {"log_likelihood": fit.log_likelihood, "num_params": k, "bic": bic(fit.log_likelihood, k, len(y))}
    if score == "laplace":
        init = start_values(fit.kernel, fit.noise)
        # the fitted kernel in its own order, so that its site names are those of start_values
        out["laplace"] = laplace_log_evidence(str(fit.kernel), Xs, ys, init, seed=seed)["log_evidence"]
    elif score == "tsmc":
        out["tsmc"] = tsmc_log_evidence(str(fit.kernel), Xs, ys, seed=seed, **TSMC_SCORE_OPTIONS)["log_evidence"]
    return out


def greedy_forecast(result, x_test: np.ndarray, y_test: np.ndarray) -> tuple[float, np.ndarray]:
    """The best kernel's GP predictive of the held-out points, one prediction: log N(y_test | m, S + noise I), the
    points jointly (data units), and P(Y_j <= y_test[j] | y_train) (m,) under the pointwise N(m_j, S_jj + noise)."""
    X, Xt = jnp.asarray(result.X), jnp.asarray(x_test[:, None])
    post = gp.predict(result.kernel, X, jnp.asarray(result.y - result.mean), result.noise, Xt, full_cov=True)
    r = jnp.asarray(y_test - result.mean) - post.mean
    log_density = float(gp.gaussian_log_evidence(r, post.cov + result.noise * jnp.eye(len(y_test)))[0])
    sd = jnp.sqrt(jnp.maximum(jnp.diag(post.cov), 0.0) + result.noise)
    return log_density, np.asarray(norm.cdf(r / sd))


def inside_band(cdf: np.ndarray, level: float = 0.95) -> float:
    """The fraction of held-out points inside the central ``level`` predictive band, from their predictive CDF
    values (the probability integral transform): (1 - level) / 2 <= cdf <= (1 + level) / 2."""
    cdf = np.asarray(cdf)
    return float(np.mean((cdf >= (1 - level) / 2) & (cdf <= (1 + level) / 2)))


def run_greedy(data: dict, depth: int, restarts: int, seed: int, score: str = "bic") -> dict:
    """Our greedy search ranked by ``score``; the row keeps the best's score and every fitted structure's under
    that score's name (``bic``, ``trace_bic``; ``laplace``, ``trace_laplace``; ``tsmc``, ``trace_tsmc``)."""
    t0 = time.perf_counter()
    result = search(
        data["x"],
        data["y"],
        depth=depth,
        restarts=restarts,
        patience=depth,
        width=1,
        seed=seed,
        score=score,
        score_options=TSMC_SCORE_OPTIONS if score == "tsmc" else None,
        progress=_quiet,
    )
    log_density, cdf = greedy_forecast(result, data["x_test"], data["y_test"])
    return {
        "wall_s": time.perf_counter() - t0,
        "kernel": result.best.expression,
        "fits": len(result.trace),
        "log_likelihood": result.best.log_likelihood,
        "num_params": result.best.num_params,
        "bic": result.best.bic,
        "log_density": log_density,
        "inside_95": inside_band(cdf),
        "trace_bic": {f.expression: f.bic for f in result.trace if f.ok},  # every structure it fitted
        score: result.best.score,
        f"trace_{score}": {f.expression: f.score for f in result.trace if f.ok},
    }


def run_smc(data: dict, particles: int, seed: int, steps: int = SMC_DEFAULTS["steps"]) -> dict:
    """SMC over structures (``smc_search``'s defaults but ``particles`` and ``steps``): the most probable structure,
    the posterior mass of the five most probable, the log evidence (data units, and ``log_evidence_std`` of the
    standardised series) and the particles' mixture forecast."""
    t0 = time.perf_counter()
    result = smc_search(data["x"], data["y"], seed=seed, particles=particles, steps=steps, progress=_quiet)
    x_test = data["x_test"][:, None]
    return {
        "wall_s": time.perf_counter() - t0,
        "kernel": result.best.expression,
        "posterior_of_best": next(iter(result.posterior().values())),
        "posterior_top": dict(list(result.posterior().items())[:5]),
        "log_evidence": result.log_evidence_data_units,
        "log_evidence_std": result.log_evidence,
        "final_ess": result.steps[-1]["ess"],
        "log_density": result.log_predictive_density(x_test, data["y_test"]),
        "inside_95": inside_band(result.predictive_cdf(x_test, data["y_test"])),
    }


def run_gpy_abcd(data: dict, depth: int, restarts: int, seed: int, python: Path) -> dict:
    """GPy-ABCD in the peer's interpreter on the standardised training part; its kernel in our notation
    (``abcd_vs_gpy_abcd.to_zoo_expression``), its BIC on our scale (-1/2 x its own) and its held-out log density in
    data units."""
    scale = Standardisation.of(data["x"][:, None], data["y"])
    cfg = {
        "x": scale.inputs(data["x"][:, None])[:, 0].tolist(),
        "y": scale.targets(data["y"]).tolist(),
        "x_test": scale.inputs(data["x_test"][:, None])[:, 0].tolist(),
        "y_test": scale.targets(data["y_test"]).tolist(),
        "depth": depth,
        "restarts": restarts,
        "seed": seed,
    }
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cfg.json").write_text(json.dumps(cfg))
        (Path(tmp) / "run.py").write_text(GPY_SCRIPT)
        done = subprocess.run(
            [str(python), str(Path(tmp) / "run.py"), str(Path(tmp) / "cfg.json")],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            check=True,
        )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["peer_kernel"] = out["kernel"]
    try:
        out["kernel"] = key(parse(to_zoo_expression(out["peer_kernel"])))
    except (OptionError, ValueError) as err:  # a kernel our grammar cannot read counts as a miss
        out["kernel"], out["parse_error"] = None, str(err)
    out["bic"] = -0.5 * out["bic"]
    out["log_density"] = out.pop("log_density_std") - len(data["y_test"]) * math.log(scale.y_scale)
    return out


def _quiet(_line: str) -> None:
    pass


def _row_path(results: Path, cell: tuple, args) -> Path:
    truth, n, snr, seed, method = cell
    tag = "".join(c if c.isalnum() else "_" for c in truth)
    size = f"n{n}_snr{snr:g}_depth{args.depth}_restarts{args.restarts}"
    extra = f"_p{args.smc_particles}" if method == "smc" else ""
    return results / f"{tag}_seed{seed}_{method}_{size}{extra}.json"


def _cpu_s() -> float:
    """Process CPU seconds so far, this process's threads and its waited-for children (GPy-ABCD's interpreter)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_method(
    method: str,
    data: dict,
    depth: int,
    restarts: int,
    seed: int,
    smc_particles: int,
    smc_steps: int = SMC_DEFAULTS["steps"],
    python: Path | None = None,
) -> dict:
    """One search of ``method`` (``METHODS``) on ``data`` (x, y training, x_test, y_test held out; data units): its
    row (``run_greedy``, ``run_smc`` or ``run_gpy_abcd``) with the process CPU seconds it took (``cpu_s``) beside
    its wall time. The simulated series here and the real ones of ``benchmarks/structure_smc.py`` both run through
    it."""
    cpu = _cpu_s()
    if method in GREEDY_SCORES:
        row = run_greedy(data, depth, restarts, seed, GREEDY_SCORES[method])
    elif method == "smc":
        row = run_smc(data, smc_particles, seed, smc_steps)
    elif method == "gpy-abcd":
        row = run_gpy_abcd(data, depth, restarts, seed, python)
    else:
        raise OptionError(f"unknown method {method!r}; methods: {list(METHODS)}.")
    return row | {"cpu_s": _cpu_s() - cpu}


def run_cell(cell: tuple, args, python: Path | None) -> dict:
    """One (truth, n, snr, seed, method): its JSON row, computed or read back."""
    truth, n, snr, seed, method = cell
    path = _row_path(Path(args.results), cell, args)
    if path.is_file():
        return json.loads(path.read_text())
    data = simulate(truth, n, snr, seed)
    row = run_method(method, data, args.depth, args.restarts, seed, args.smc_particles, python=python)
    kernel = truth_kernel(truth)
    row |= {"truth": truth, "truth_expression": str(kernel), "truth_depth": truth_depth(kernel), "n": n, "snr": snr,
            "seed": seed, "method": method, "oracle_log_density": oracle_log_density(truth, data)}  # fmt: skip
    row["recovered"] = row["kernel"] is not None and same_structure(row["kernel"], str(kernel))
    if not row["recovered"] and method != "smc":
        row["truth_refit"] = refit_truth(truth, data, args.restarts, seed, GREEDY_SCORES.get(method, "bic"))
    atomic_write_text(path, json.dumps(row))
    return row


def verdict(row: dict) -> str:
    """A miss's cause by the method's score (BIC, or Laplace's log evidence for ``greedy-laplace``; higher is better):
    the score's limit when the found kernel's score is at least the refitted truth's; otherwise, for our greedy
    search, the optimiser's when the search fitted the truth's structure (and scored it below the refit), its path's
    when the greedy path never reached it. GPy-ABCD's misses of a truth
    with SE are its grammar's (it has no SE); its BIC counts every GPy parameter (each product factor keeps its
    variance), so on a miss its BIC is a little lower than ours would be for the same fit."""
    refit = row.get("truth_refit") or {}
    score = GREEDY_SCORES.get(row.get("method"), "bic")
    if row["recovered"]:
        return "recovered"
    expression = str(row.get("truth_expression", row.get("truth")))
    if row.get("method") == "gpy-abcd" and "SE" in expression.replace("(", " ").replace(",", " ").split():
        return "miss: truth outside its grammar (no SE)"
    if score not in refit or row.get(score) is None:
        return "miss (no comparison)"
    if row[score] >= refit[score]:
        return "miss: score's limit"
    trace = row.get(f"trace_{score}")
    fitted = [b for k, b in (trace or {}).items() if same_structure(k, expression)]
    if fitted:
        return f"miss: optimiser's (the search's fit of the truth: {max(fitted):.2f})"
    return "miss: search's path (the truth not among its candidates)" if trace is not None else "miss: search's"


def _label(row: dict) -> str:
    """A truth's name, with its structure when the name does not say it (drawn truths)."""
    expression = row.get("truth_expression", row["truth"])
    return row["truth"] if expression == row["truth"] else f"{row['truth']}: {expression}"


def _grouped_table(rows: list[dict], methods: list[str], group, head: list[str], columns: dict) -> list[str]:
    """One line per value of ``group(row)`` (a tuple, its items under ``head``), and per method one cell per
    ``columns`` item (title: function of that group's rows of the method, to text)."""
    titles = [f"{m} {title}" for m in methods for title in columns]
    lines = ["| " + " | ".join(head + titles) + " |", "|" + "---|" * len(head) + "---:|" * len(titles)]
    for g in dict.fromkeys(group(r) for r in rows):
        cells = []
        for m in methods:
            rs = [r for r in rows if group(r) == g and r["method"] == m]
            cells += [cell(rs) if rs else "" for cell in columns.values()]
        lines.append("| " + " | ".join([str(v) for v in g] + cells) + " |")
    return lines


def markdown(rows: list[dict]) -> str:
    """Recovery by the truth's depth, length and signal-to-noise ratio; then per truth, length and ratio and per
    method: recovered / runs, mean held-out log density minus the oracle's, mean wall; then every miss with the
    method's score of the found kernel and of the refitted truth."""
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    size = lambda r: (r.get("n"), r.get("snr"))  # noqa: E731 (rows of earlier runs have neither)
    recovered = {"recovered": lambda rs: f"{sum(r['recovered'] for r in rs)}/{len(rs)}"}
    per_truth = recovered | {
        "held-out - oracle": lambda rs: f"{np.mean([r['log_density'] - r['oracle_log_density'] for r in rs]):.2f}",
        "wall (s)": lambda rs: f"{np.mean([r['wall_s'] for r in rs]):.1f}",
    }
    by_depth = lambda r: (r.get("truth_depth"), *size(r))  # noqa: E731
    lines = _grouped_table(rows, methods, by_depth, ["truth depth", "n", "snr"], recovered)
    lines += [""] + _grouped_table(rows, methods, lambda r: (_label(r), *size(r)), ["truth", "n", "snr"], per_truth)
    misses = [r for r in rows if not r["recovered"]]
    if misses:
        lines += [
            "",
            "| truth | n | snr | seed | method | found | its score | truth refit's score | verdict |",
            "|---|---:|---:|---:|---|---|---:|---:|---|",
        ]
        for r in misses:  # the method's score: BIC, Laplace's log evidence for greedy-laplace
            refit, score = r.get("truth_refit") or {}, GREEDY_SCORES.get(r["method"], "bic")
            found_bic = "n/a" if r.get(score) is None else f"{r[score]:.2f}"
            refit_bic = f"{refit[score]:.2f}" if score in refit else "n/a"
            found = r["kernel"] if r["kernel"] else r.get("peer_kernel")
            lines.append(
                f"| {_label(r)} | {r.get('n')} | {r.get('snr')} | {r['seed']} | {r['method']} | {found} | {found_bic} "
                f"| {refit_bic} | {verdict(r)} |"
            )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> Path:
    """Two panels: recovery rate per truth and method; held-out log density minus the oracle's, one point a seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    truths = list(dict.fromkeys(r["truth"] for r in rows))
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        pos = np.arange(len(truths)) + (j - (len(methods) - 1) / 2) * width
        rate = [
            np.mean([r["recovered"] for r in rows if r["truth"] == t and r["method"] == m] or [np.nan]) for t in truths
        ]
        a.bar(pos, rate, width, label=m)
        for i, t in enumerate(truths):
            gaps = [r["log_density"] - r["oracle_log_density"] for r in rows if r["truth"] == t and r["method"] == m]
            b.plot([pos[i]] * len(gaps), gaps, "o", color=f"C{j}", label=m if i == 0 else None)
    for ax in (a, b):
        ax.set_xticks(np.arange(len(truths)), truths, rotation=20)
    a.set_ylabel("recovered (fraction of seeds)")
    b.set_ylabel("held-out log density - oracle's (nats)")
    b.axhline(0.0, color="k", lw=0.5)
    a.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def check_args(args) -> None:
    """An ``OptionError`` for settings no run can use, before anything is simulated or compiled."""
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        raise OptionError(f"unknown methods {unknown}; methods: {list(METHODS)}.")
    for label, value in (("depth", args.depth), ("restarts", args.restarts)):
        if value < 1:
            raise OptionError(f"{label} must be a positive integer, got {value}.")
    if args.drawn < 0:
        raise OptionError(f"drawn must be 0 or more, got {args.drawn}.")
    if min(args.n) < 20 or not min(args.snr) > 0 or ("smc" in args.methods and args.smc_particles < 2):
        raise OptionError("every n must be at least 20, every snr positive, and smc needs at least 2 particles.")
    deep = [t for t in args.truths if truth_depth(truth_kernel(t)) > args.depth]
    if deep:
        raise OptionError(f"truths {deep} are deeper than --depth {args.depth}: the search cannot reach them.")


def _truth_names(text: str) -> list[str]:
    """Comma-separated truth names; a comma inside parentheses belongs to its name (``CP(SE, SE),Per``)."""
    names, depth, start = [], 0, 0
    for i, c in enumerate(text + ","):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            names.append(text[start:i].strip())
            start = i + 1
    return names


def _numbers(kind):
    return lambda text: [kind(v) for v in text.split(",")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--truths", type=_truth_names, default=list(TRUTHS),
                   help="names of TRUTHS and drawn truths d<depth>.<index> (default: TRUTHS)")  # fmt: skip
    p.add_argument("--drawn", type=int, default=0, help="add this many drawn truths at every depth 1..--depth")
    p.add_argument("--seeds", type=_numbers(int), default=[0, 1])
    p.add_argument("--methods", type=lambda s: s.split(","), default=["greedy", "gpy-abcd"])
    p.add_argument("--n", type=_numbers(int), default=[100], help="training points (n / 5 more are held out), a list")
    p.add_argument("--snr", type=_numbers(float), default=[10.0], help="signal variance / noise variance, a list")
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--restarts", type=int, default=3)
    p.add_argument("--smc-particles", type=int, default=32)
    p.add_argument("--results", default="bench_results/structure_recovery")
    p.add_argument("--plot", default=None, help="write the figure here (default: recovery.png in --results)")
    args = p.parse_args(argv)
    try:
        args.truths = args.truths + [f"d{d}.{i}" for d in range(1, args.depth + 1) for i in range(args.drawn)]
        check_args(args)
        python = peers.peer_python(PEER) if "gpy-abcd" in args.methods else None
    except (OptionError, peers.PeerMissing) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    Path(args.results).mkdir(parents=True, exist_ok=True)
    cells = itertools.product(args.truths, args.n, args.snr, args.seeds, args.methods)
    rows = [_announce(run_cell(cell, args, python)) for cell in cells]
    title = (
        f"n = {args.n} training (+ n / 5 held-out) points, snr {args.snr}, depth {args.depth}, "
        f"{args.restarts} restarts, seeds {args.seeds}"
        + (f", SMC {args.smc_particles} particles" if "smc" in args.methods else "")
    )
    print(title + "\n\n" + markdown(rows))
    figure = plot(rows, Path(args.plot) if args.plot else Path(args.results) / "recovery.png")
    print(f"\nfigure: {figure}", file=sys.stderr)
    return 0


def _announce(row: dict) -> dict:
    """A progress line per cell on stderr."""
    print(
        f"{_label(row)} n {row['n']} snr {row['snr']:g} seed {row['seed']} {row['method']}: {row['kernel']} "
        f"({'recovered' if row['recovered'] else 'miss'}), held-out {row['log_density']:.2f} "
        f"(oracle {row['oracle_log_density']:.2f}), {row['wall_s']:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return row


if __name__ == "__main__":
    sys.exit(main())
