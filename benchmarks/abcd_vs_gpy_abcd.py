"""Our ABCD structure search next to GPy-ABCD's on the airline series: wall time, fits per second, final kernel, BIC.

Usage::

    python -m benchmarks.peers install gpy-abcd          # once: GPy-ABCD in its own venv (benchmarks/peers.py)
    python -m benchmarks.abcd_vs_gpy_abcd --depth 2 --restarts 3 [--side ours|theirs|both] [--results DIR]
        [--optimizer host-lbfgs|lbfgs] [--program shared|per-structure] [--processes 2]
    python -m benchmarks.abcd_vs_gpy_abcd --side theirs --structure "PER * LIN + C" --restarts 10

Pin it (``taskset -c 1 ...``). Each search runs in its own process: ours through this interpreter (with
``ZOO_JAX_CACHE_DIR=off``, so every candidate's compilation is in its time), GPy-ABCD's through the peer's
interpreter (``GPY_ABCD_SCRIPT``), both on the same series: the training 90 % of ``01-airline``
(``zoo.data.tsdl``, 129 months), x and y standardised to mean 0 and sd 1 (our search does this itself; GPy-ABCD
does not, and on raw years its Lin offsets and random restarts start far from the data).

Same settings on both sides: ``--depth`` levels of fitted candidates, ``--restarts`` optimiser runs per candidate,
a beam of 1 (the thesis's greedy search), BIC as the score, no early stop, one process (GPy-ABCD's
``fit_mods_not_parallel``, not its process pool); or with ``--processes N`` (N > 1) the candidates of a round in
parallel on both sides: ours on N Dask worker processes (the search's ``workers``), GPy-ABCD's own
``fit_mods_parallel_processes`` (a ``multiprocessing`` pool of one process per core; it takes no count). Each side
keeps its own grammar, which is why the table reports fits per second beside wall time:

* ours: ``inference.applications.structure_search.search`` defaults: base kernels SE, RQ, Lin, Per and operators
C.1-C.11;
  depth 1 is the base kernels; ML-II by L-BFGS (at most 300 steps), restarts jittered around data-scaled starts;
  ``--optimizer``: ml2's ``host-lbfgs`` (the search's default: scipy's L-BFGS over a compiled value-and-gradient)
  or ``lbfgs`` (optax's, the restarts vmapped in one compiled while_loop: the search before 2026-11-24);
  ``--program``: ``shared`` (the search's default: one compiled program for every structure within a capacity,
  docs/performance.md#shared-program) or ``per-structure`` (one program per candidate: the search before
  2026-11-25).
* GPy-ABCD 1.2.3: ``explore_model_space`` with its ``Default`` start kernels (round 0: WN, C, LIN, PER, LIN x LIN,
  LIN x LIN x LIN, PER + C, CP and CW of LIN) and ``Default`` production rules; SE is in neither (its config
  leaves SE out of expansions). Its round 0 is our depth 1, so it runs ``rounds = depth - 1``. GPy's L-BFGS-B
  (at most 1000 iterations), restarts from GPy's random re-draws. ``--peer-grammar original`` uses its
  ``Original_ABCD`` start (WN alone, round 0) and rules instead, with ``rounds = depth``.

BIC: ours is Duvenaud's eq. 3.3 on the log scale, log p(y | theta) - |M| / 2 log n, higher better, |M| the kernel's
free parameters without the redundant output scales of a product plus the noise variance
(``zoo.kernels.num_params``). GPy-ABCD's (``GPy_ABCD.Util.modelUtil.BIC``) is -2 log p(y | theta) + k log n, lower
better, k = ``model._size_transformed()``: every free GPy parameter, so the noise variance counts and each factor of
a product keeps its own variance. The table shows both on GPy-ABCD's -2 log scale (ours as -2 x our BIC), and
GPy-ABCD's final structure refitted by our ``ml2`` and scored by our BIC, the number directly comparable with ours.

``--structure EXPR`` (side ``theirs``): no search; GPy fits that one structure (GPy-ABCD's notation) as GPy-ABCD fits
a candidate, with ``--restarts`` restarts, and the same checks of it under our code follow, one more among them: our
ML-II from GPy's optimum within our search's period bounds (a period longer than half the series is outside them).

Why a refit differs from GPy's own value (docs/performance.md#gpy-abcd-refit): the GPy side also prints its fitted
kernel's tree and parameter values, mapped to our kernels (``gpy_kernel``: LIN is our Lin with the intercept at 0,
PER our ZPer, C our C), and four more rows check them: our log p at exactly GPy's parameters (equal to GPy's value
when the kernels are the same functions), our ML-II started at GPy's optimum with the Lin intercepts held at
``NO_INTERCEPT`` (GPy's model) and free (ours), and our random-start refit with the intercepts held.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import peers
from inference.applications.structure_search import search
from inference.applications.structure_search.bounds import PeriodBounds
from inference.applications.structure_search.fit import FitFailure, fit_ml2, log_likelihood_at, start_values
from inference.applications.structure_search.scales import DataScaledFactory, Scales
from inference.applications.structure_search.scores import bic
from inference.applications.structure_search.search import PROGRAMS
from inference.files.atomic import atomic_write_text
from zoo.data import tsdl
from zoo.errors import OptionError
from zoo.kernels import num_params, parse, with_values
from zoo.kernels.base import Constant, KernelError, Product, Sum
from zoo.kernels.nonstationary import Changepoint, ChangeWindow, Linear
from zoo.kernels.priors import site_names
from zoo.kernels.stationary import White, ZeroMeanPeriodic

PEER = "gpy-abcd"
SERIES = "01-airline"
MAX_DEPTH = 10
SIDES = ("ours", "theirs", "both")
PEER_GRAMMARS = ("default", "original")
OPTIMIZERS = ("host-lbfgs", "lbfgs")

# Runs inside the peer's venv: argv[1] a JSON file {x, y, depth, restarts, seed, grammar, structure}; prints one JSON
# line. Without a structure GPy-ABCD's search runs; with one (GPy-ABCD's notation, e.g. ``PER * LIN + C``) only that
# structure is fitted, exactly as GPy-ABCD's search fits a candidate: the text evaluated into its kernel expressions
# (SumKE, ProductKE, ChangeKE, so its own simplification and product variances apply) and ``GPModel.fit``
# (GPy's ``optimize_restarts`` with L-BFGS-B: the first run from GPy's initial values, each other after ``randomize``).
GPY_ABCD_SCRIPT = r"""
import contextlib, json, sys, time, warnings
t_import = time.perf_counter()
import numpy as np
import GPy
import GPy_ABCD
from GPy_ABCD import BIC, explore_model_space, fit_mods_not_parallel, production_rules, start_kernels
from GPy_ABCD.KernelExpressions.all import ChangeKE, ProductKE, SumKE
from GPy_ABCD.Models.model import GPModel
from GPy_ABCD.Models.modelSearch import fit_mods_parallel_processes
import_s = time.perf_counter() - t_import
cfg = json.load(open(sys.argv[1]))
X, Y = np.asarray(cfg["x"], float)[:, None], np.asarray(cfg["y"], float)[:, None]
np.random.seed(cfg["seed"])
warnings.simplefilter("ignore")
t0 = time.perf_counter()


class Stamped:  # its verbose log, one line per round, on stderr with the seconds since the search began
    def write(self, text):
        for line in text.splitlines(keepends=True):
            sys.stderr.write(f"{time.perf_counter() - t0:9.1f} GPy-ABCD: {line}" if line.strip() else line)
        sys.stderr.flush()

    def flush(self):
        sys.stderr.flush()


def tree(kern):  # the fitted GPy kernel: sums and products of leaves, each leaf its class and parameter values
    if isinstance(kern, (GPy.kern.Add, GPy.kern.Prod)):
        op = "sum" if isinstance(kern, GPy.kern.Add) else "product"
        return {"op": op, "parts": [tree(part) for part in kern.parts]}
    # by attribute: a product's later factors keep their variance unlinked from the model, at its initial value
    names = ("variance", "offset", "period", "lengthscale")
    return {"kernel": type(kern).__name__,
            "params": {n: np.asarray(getattr(kern, n)).tolist() for n in names if hasattr(kern, n)}}


def fitted(model):  # what both modes report of the fitted GPy model
    return {"gpy_kernel": tree(model.kern), "gpy_noise": float(model.Gaussian_noise.variance.values[0]),
            "gpy_parameters": dict(zip(model.parameter_names_flat().tolist(), model.param_array.tolist()))}


class Term:  # the structure text evaluated into GPy-ABCD's kernel expressions
    def __init__(self, kex):
        self.kex = kex

    def parts(self):  # (base terms, composite terms)
        return ([self.kex], []) if isinstance(self.kex, str) else ([], [self.kex])

    def __add__(self, other):
        return Term(SumKE(self.parts()[0] + other.parts()[0], self.parts()[1] + other.parts()[1]))

    def __mul__(self, other):
        return Term(ProductKE(self.parts()[0] + other.parts()[0], self.parts()[1] + other.parts()[1]))


if cfg.get("structure"):
    names = {name: Term(name) for name in ("C", "LIN", "PER", "SE", "WN")}
    names |= {op: (lambda a, b, op=op: Term(ChangeKE(op, a.kex, b.kex))) for op in ("CP", "CW")}
    kex = eval(cfg["structure"], {"__builtins__": {}}, names).kex
    kex = (SumKE([kex]) if isinstance(kex, str) else kex)._initialise()
    candidate = GPModel(X, Y, kex).fit(cfg["restarts"], "lbfgsb", robust=True)
    candidate.compute_utility(BIC)
    model = candidate.model
    result = {"kernel": str(candidate.kernel_expression), "log_likelihood": float(candidate._ll()),
              "num_params": int(candidate._k()), "n": int(candidate._n()),
              "bic": float(candidate.cached_utility_function), "fits": len(model.optimization_runs),
              "restart_log_likelihoods": [-float(run.f_opt) for run in model.optimization_runs]}
else:
    name = {"default": "Default", "original": "Original_ABCD"}[cfg["grammar"]]
    rounds = cfg["depth"] - 1 if cfg["grammar"] == "default" else cfg["depth"]
    fitter = fit_mods_not_parallel if cfg.get("processes", 1) == 1 else fit_mods_parallel_processes
    with contextlib.redirect_stdout(Stamped()):
        sorted_models, tested, *_ = explore_model_space(
            X, Y, start_kernels=start_kernels[name], p_rules=production_rules[name], utility_function=BIC,
            rounds=rounds, beam=1, restarts=cfg["restarts"], model_list_fitter=fitter, optimiser="lbfgsb",
            verbose=True,
        )
    best = sorted_models[0]
    try:
        sum_of_products = str(best.sum_of_prods_kex)
    except Exception as err:  # its parameter read-back fails on some kernels; the structure is still kernel_expression
        sum_of_products = f"n/a ({type(err).__name__})"
    model = best.model
    result = {"fits": sum(len(level) for level in tested), "fits_per_level": [len(level) for level in tested],
              "kernel": str(best.kernel_expression), "sum_of_products": sum_of_products,
              "log_likelihood": float(best._ll()), "num_params": int(best._k()), "n": int(best._n()),
              "bic": float(best.cached_utility_function), "rounds": rounds, "grammar": name}
wall_s = time.perf_counter() - t0
print(json.dumps({"version": GPy_ABCD.__version__, "import_s": import_s, "wall_s": wall_s} | result | fitted(model)))
"""


def check_options(
    depth, restarts, side: str = "both", grammar: str = "default", processes: int = 1, structure: str | None = None
) -> None:
    """An ``OptionError`` for settings no search can run with (before any data is read or anything compiled)."""
    for label, value, top in (
        ("depth", depth, MAX_DEPTH),
        ("restarts", restarts, None),
        ("processes", processes, None),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (top and value > top):
            bound = f"an integer from 1 to {top}" if top else "a positive integer"
            raise OptionError(f"{label} must be {bound}, got {value!r}.")
    if side not in SIDES:
        raise OptionError(f"side must be one of {SIDES}, got {side!r}.")
    if grammar not in PEER_GRAMMARS:
        raise OptionError(f"peer grammar must be one of {PEER_GRAMMARS}, got {grammar!r}.")
    if structure is not None:
        if side != "theirs":
            raise OptionError(f"--structure fits one structure in GPy (side 'theirs'), got side {side!r}.")
        if not re.fullmatch(r"[A-Za-z+*(), ]+", structure):  # the peer evaluates it: names, + * ( ) , only
            raise OptionError(f"structure {structure!r}: only kernel names, +, *, parentheses and commas.")
        try:
            parse(to_zoo_expression(structure))
        except KernelError as err:
            raise OptionError(f"structure {structure!r}: {err}") from None


def standardised_series(name: str = SERIES) -> tuple[np.ndarray, np.ndarray]:
    """The training split of a shipped TSDL series, x and y each shifted and scaled to mean 0, sd 1: (n,), (n,)."""
    x, y, _, _ = tsdl.load(name)
    return (x - x.mean()) / x.std(), (y - y.mean()) / y.std()


def to_zoo_expression(text: str) -> str:
    """GPy-ABCD's kernel text (``PER * LIN + C``, ``CP(LIN, PER)``) in our grammar's notation. Its PER is the
    periodic kernel without its constant part (Lloyd's, ``PureStdPeriodicKernel``): our ZPer; LIN (with its
    horizontal offset) is our Lin; WN, C, SE and the CP / CW operators have the same names."""
    names = {"PER": "ZPer", "LIN": "Lin", "SE": "SE", "WN": "WN", "C": "C", "CP": "CP", "CW": "CW"}

    def rename(match: re.Match) -> str:
        word = match.group(0)
        if word not in names:
            raise OptionError(f"GPy-ABCD kernel {text!r}: no counterpart of {word!r} in our grammar.")
        return names[word]

    return re.sub(r"[A-Za-z]+", rename, text).replace(" * ", " x ")


def _ours_worker(cfg: dict) -> dict:
    """Our search on cfg's series (runs in its own process; see ``run_ours``)."""
    x, y = np.asarray(cfg["x"]), np.asarray(cfg["y"])
    t0 = time.perf_counter()
    result = search(
        x,
        y,
        depth=cfg["depth"],
        restarts=cfg["restarts"],
        patience=cfg["depth"],
        seed=cfg["seed"],
        width=1,
        optimizer=cfg["optimizer"],
        program=cfg.get("program", "shared"),
        workers=cfg.get("processes", 1),
    )
    wall_s = time.perf_counter() - t0
    best = result.best
    depths = sorted({f.depth for f in result.trace})
    return {
        "wall_s": wall_s,
        "compile_s": sum(f.compile_s for f in result.trace),
        "run_s": sum(f.run_s for f in result.trace),
        "optimizer": cfg["optimizer"],
        "program": cfg.get("program", "shared"),
        "fits": len(result.trace),
        "fits_per_level": [sum(f.depth == d for f in result.trace) for d in depths],
        "failed": sum(not f.ok for f in result.trace),
        "kernel": best.expression,
        "log_likelihood": best.log_likelihood,
        "num_params": best.num_params,
        "n": int(len(y)),
        "bic": best.bic,
    }


def _run_json(args: list[str], env: dict | None = None) -> dict:
    """Run a worker process and read the JSON it prints last; its stderr goes to ours (progress lines)."""
    t0 = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.PIPE, text=True, check=True, env=env)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t0
    return out


def run_ours(cfg: dict, tmp: Path) -> dict:
    """Our search in a fresh interpreter without the persistent compile cache."""
    path = tmp / "ours.json"
    path.write_text(json.dumps(cfg))
    env = {**os.environ, "ZOO_JAX_CACHE_DIR": "off"}
    return _run_json([sys.executable, "-m", "benchmarks.abcd_vs_gpy_abcd", "--worker", str(path)], env)


def run_theirs(cfg: dict, tmp: Path, python: Path) -> dict:
    """GPy-ABCD's search in the peer's interpreter."""
    (tmp / "theirs.json").write_text(json.dumps(cfg))
    (tmp / "gpy_abcd_run.py").write_text(GPY_ABCD_SCRIPT)
    # A fixed hash seed: GPy-ABCD's production rules iterate over a frozenset of kernel names, whose order (and so
    # which candidate its restarts' random draws go to) follows the string hash, randomised per process.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return _run_json([str(python), str(tmp / "gpy_abcd_run.py"), str(tmp / "theirs.json")], env)


def refit_ours(
    expression: str,
    x: np.ndarray,
    y: np.ndarray,
    restarts: int,
    seed: int,
    draws: int = 3,
    optimizer: str = "host-lbfgs",
    intercepts: bool = True,
) -> dict:
    """Structure ``expression`` fitted by our ML-II as a candidate of our search would be (``draws`` data-scaled
    starts, each with ``restarts`` jittered restarts, within the periodic bounds) and scored by our BIC. With
    ``intercepts`` False every Lin's intercept (our ``offset``) is held at ``NO_INTERCEPT``: GPy-ABCD's model, fitted
    from the same draws."""
    X = x[:, None]
    rng = np.random.default_rng(seed)
    factory = DataScaledFactory(Scales.of(X), rng)
    structure = parse(expression)
    names = intercept_sites(structure)
    fixed = None if intercepts else {name: NO_INTERCEPT for name in names}
    best = None
    for _ in range(draws):
        try:
            fit = fit_ml2(
                data_scaled(structure, factory),
                X,
                y,
                0.1,
                restarts,
                seed=int(rng.integers(2**31)),
                bounds=PeriodBounds.of(X),
                optimizer=optimizer,
                fixed=fixed,
            )
        except FitFailure:
            continue
        if best is None or fit.log_likelihood > best.log_likelihood:
            best = fit
    if best is None:
        return {"kernel": expression, "error": "every start failed"}
    k = num_params(best.kernel, 1) + 1 - (0 if intercepts else len(names))
    return {
        "kernel": expression,
        "log_likelihood": best.log_likelihood,
        "num_params": k,
        "bic": bic(best.log_likelihood, k, len(y)),
        "hyperparameters": _values(best.kernel),
        "noise": best.noise,
    }


def _values(kernel) -> dict:
    """The kernel's hyperparameters by site name, as JSON numbers."""
    return {name: np.asarray(value).tolist() for name, value in start_values(kernel).items()}


def intercept_sites(kernel) -> list[str]:
    """The site names of every Lin's intercept (its ``offset``) in ``kernel``."""
    return [name for name in site_names(kernel) if name == "offset" or name.endswith("_offset")]


def _one(values) -> float:
    return float(np.asarray(values, float).reshape(-1)[0])


# GPy-ABCD 1.2.3's leaves (its Kernels/baseKernels.py with its default config) as ours, by GPy class name, from
# their parameter values by GPy name. LinearWithOffset is variance (x - offset)(x' - offset): our Lin with its
# location at GPy's offset and our intercept (Lin's ``offset``, sd of a constant) at 0 -- ours has that one parameter
# more. PureStdPeriodicKernel is Lloyd's zero-mean periodic with the same variance, period and lengthscale
# (exp(cos(2 pi r / p) / l^2) - I_0(1 / l^2), normalised): our ZPer. Bias is C; White is WN.
GPY_LEAVES = {
    "LinearWithOffset": lambda p: Linear(variance=_one(p["variance"]), offset=0.0, location=_one(p["offset"])),
    "PureStdPeriodicKernel": lambda p: ZeroMeanPeriodic(
        variance=_one(p["variance"]), lengthscale=_one(p["lengthscale"]), period=_one(p["period"])
    ),
    "Bias": lambda p: Constant(variance=_one(p["variance"])),
    "White": lambda p: White(variance=_one(p["variance"])),
}


def gpy_kernel(tree: dict):
    """Our kernel equal to GPy-ABCD's fitted GPy kernel ``tree`` (``GPY_ABCD_SCRIPT``'s ``gpy_kernel``: sums and
    products of leaves with their parameter values) at its parameter values (``GPY_LEAVES``); an ``OptionError``
    for a leaf without a counterpart (its sigmoidal change operators)."""
    if "op" in tree:
        parts = [gpy_kernel(part) for part in tree["parts"]]
        out = parts[0]
        for part in parts[1:]:
            out = Sum(out, part) if tree["op"] == "sum" else Product(out, part)
        return out
    if tree["kernel"] not in GPY_LEAVES:
        raise OptionError(f"GPy kernel {tree['kernel']!r}: no counterpart in our kernels.")
    return GPY_LEAVES[tree["kernel"]](tree["params"])


def at_gpy_parameters(theirs: dict, x: np.ndarray, y: np.ndarray) -> dict:
    """Our log marginal likelihood of GPy-ABCD's fitted kernel at GPy's own parameter values and noise, beside
    GPy's value: equal (up to rounding and GPy's series approximation of I_0 for l < 0.52) when the kernels are the
    same functions."""
    kernel = gpy_kernel(theirs["gpy_kernel"])
    ll = log_likelihood_at(kernel, theirs["gpy_noise"], x[:, None], y)
    k = num_params(kernel, 1) + 1 - len(intercept_sites(kernel))  # GPy's model: no intercepts
    return {"kernel": str(kernel), "log_likelihood": ll, "num_params": k, "bic": bic(ll, k, len(y)),
            "difference": ll - theirs["log_likelihood"]}  # fmt: skip


NO_INTERCEPT = 1e-8  # our Lin's offset held here for GPy's model: offset^2 = 1e-16 of Var(y), no effect on log p


def from_gpy_point(
    theirs: dict, x: np.ndarray, y: np.ndarray, intercepts: bool, optimizer: str, bounded: bool = False
) -> dict:
    """Our ML-II of GPy-ABCD's structure started exactly at GPy's optimum (one restart; no bounds, as GPy has none,
    unless ``bounded``: then a period outside our search's admissible region is projected back, ``bounds.py``).
    ``intercepts`` False: every Lin's intercept (our ``offset``) held at ``NO_INTERCEPT`` (its site's support
    excludes 0), so the model is GPy's own; True: free, started at 0.1 (offset^2 = 0.01 of Var(y): a start near 0 has
    almost no gradient in the log-offset)."""
    kernel = gpy_kernel(theirs["gpy_kernel"])
    names = intercept_sites(kernel)
    start = with_values(kernel, {name: 0.1 for name in names}, 1) if intercepts else kernel
    fixed = None if intercepts else {name: NO_INTERCEPT for name in names}
    bounds = PeriodBounds.of(x[:, None]) if bounded else None
    k = num_params(kernel, 1) + 1 - (0 if intercepts else len(names))
    try:
        fit = fit_ml2(start, x[:, None], y, theirs["gpy_noise"], 1, 0.0, 1000, 0, bounds, optimizer=optimizer,
                      fixed=fixed)  # fmt: skip
    except FitFailure as err:  # e.g. a GPy variance at 5e-309, whose log our sites cannot start from
        return {"kernel": str(start), "log_likelihood": float("nan"), "num_params": k, "bic": float("nan"),
                "error": str(err)}  # fmt: skip
    return {"kernel": str(fit.kernel), "log_likelihood": fit.log_likelihood, "num_params": k,
            "bic": bic(fit.log_likelihood, k, len(y)), "iterations": fit.iterations[0],
            "hyperparameters": _values(fit.kernel), "noise": fit.noise, "projected": fit.projected[0]}  # fmt: skip


def data_scaled(kernel, factory):
    """``kernel``'s structure with every hyperparameter drawn afresh by ``factory`` (one-dimensional inputs)."""
    if isinstance(kernel, Sum):
        return data_scaled(kernel.left, factory) + data_scaled(kernel.right, factory)
    if isinstance(kernel, Product):
        return data_scaled(kernel.left, factory) * data_scaled(kernel.right, factory)
    if isinstance(kernel, Changepoint):
        return factory.changepoint(data_scaled(kernel.first, factory), data_scaled(kernel.second, factory))
    if isinstance(kernel, ChangeWindow):
        return factory.window(data_scaled(kernel.inside, factory), data_scaled(kernel.outside, factory))
    if isinstance(kernel, Constant):
        return factory.constant()
    return factory.base(type(kernel), None)


def _fmt(value, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def table_rows(ours: dict | None, theirs: dict | None, refit: dict | None) -> list[dict]:
    """One row per search (and one for GPy-ABCD's structure refitted by us), both BICs on both scales: ours is
    log p - k/2 log n, theirs -2 log p + k log n, so each is the other times -2 (for its own k)."""
    rows = []
    for label, r, ours_scale in (
        ("ours", ours, True),
        ("GPy-ABCD", theirs, False),
        ("GPy-ABCD's kernel, our fit", refit, True),
    ):
        if r is None or r.get("bic") is None:
            rows.append({"search": label})
            continue
        row = {"search": label, "kernel": r["kernel"], "log_likelihood": r["log_likelihood"], "k": r["num_params"]}
        row["our_bic"] = r["bic"] if ours_scale else -0.5 * r["bic"]
        row["their_bic"] = -2.0 * r["bic"] if ours_scale else r["bic"]
        if "wall_s" in r:
            row |= {"wall_s": r["wall_s"], "process_s": r["process_s"], "fits": r["fits"]}
            row["compile_s"] = r.get("compile_s")
            row["fits_per_s"] = r["fits"] / r["wall_s"]
        rows.append(row)
    for label, r in (refit or {}).get("diagnostics", []):  # GPy-ABCD's kernel at or from GPy's point, on our scale
        row = {"search": label, "kernel": r["kernel"], "log_likelihood": r["log_likelihood"], "k": r["num_params"]}
        rows.append(row | {"our_bic": r["bic"], "their_bic": -2.0 * r["bic"]})
    return rows


def diagnostics(theirs: dict, x: np.ndarray, y: np.ndarray, restarts: int, seed: int, optimizer: str) -> list:
    """(label, row) of the checks of GPy-ABCD's final kernel under our code (docs/performance.md#gpy-abcd-refit):
    our log p at GPy's parameters, our ML-II from GPy's optimum without and with Lin intercepts and within our
    search's period bounds, and our random-start refit without intercepts (GPy's model)."""
    expression = to_zoo_expression(theirs["kernel"])
    return [
        ("GPy-ABCD's kernel at GPy's parameters, our log p", at_gpy_parameters(theirs, x, y)),
        ("our ML-II from GPy's point, no Lin intercept", from_gpy_point(theirs, x, y, False, optimizer)),
        ("our ML-II from GPy's point, Lin intercepts free", from_gpy_point(theirs, x, y, True, optimizer)),
        ("our ML-II from GPy's point within our period bounds, no Lin intercept",
         from_gpy_point(theirs, x, y, False, optimizer, bounded=True)),
        ("GPy-ABCD's kernel, our fit, no Lin intercept",
         refit_ours(expression, x, y, restarts, seed, optimizer=optimizer, intercepts=False)),
    ]  # fmt: skip


def markdown(ours: dict | None, theirs: dict | None, refit: dict | None) -> str:
    """The comparison table; a side not run shows n/a."""
    lines = [
        "| search | wall (s) | compile (s) | process (s) | candidate fits | fits / s | final kernel | log p(y_s) | k "
        "| -2 log p + k log n | log p - k/2 log n |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in table_rows(ours, theirs, refit):
        g = r.get
        lines.append(
            f"| {r['search']} | {_fmt(g('wall_s'), '.1f')} | {_fmt(g('compile_s'), '.1f')} "
            f"| {_fmt(g('process_s'), '.1f')} | {_fmt(g('fits'), 'd')} "
            f"| {_fmt(g('fits_per_s'), '.3f')} | {g('kernel') or 'n/a'} | {_fmt(g('log_likelihood'), '.2f')} "
            f"| {_fmt(g('k'), 'd')} | {_fmt(g('their_bic'), '.2f')} | {_fmt(g('our_bic'), '.2f')} |"
        )
    return "\n".join(lines)


def _result_path(results: Path, side: str, args) -> Path:
    if args.structure is not None:  # one structure fitted, not a search
        tag = hashlib.sha256(args.structure.encode()).hexdigest()[:8]
        return results / f"{side}_structure-{tag}_restarts{args.restarts}_seed{args.seed}.json"
    grammar = f"_{args.optimizer}_{args.program}" if side == "ours" else f"_{args.peer_grammar}"
    processes = f"_processes{args.processes}" if args.processes > 1 else ""
    return results / f"{side}_depth{args.depth}_restarts{args.restarts}_seed{args.seed}{grammar}{processes}.json"


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def compare(args) -> str:
    """Run the requested sides (each in its own process), keep their JSON in ``args.results``, refit GPy-ABCD's
    final structure by our ML-II once both are there, and return the Markdown table."""
    check_options(args.depth, args.restarts, args.side, args.peer_grammar, args.processes, args.structure)
    python = peers.peer_python(PEER) if args.side in ("theirs", "both") else None  # PeerMissing before any work
    x, y = standardised_series()
    cfg = {
        "x": x.tolist(),
        "y": y.tolist(),
        "depth": args.depth,
        "restarts": args.restarts,
        "seed": args.seed,
        "grammar": args.peer_grammar,
        "optimizer": args.optimizer,
        "program": args.program,
        "processes": args.processes,
        "structure": args.structure,
    }
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if args.side in ("ours", "both"):
            atomic_write_text(_result_path(results, "ours", args), json.dumps(run_ours(cfg, Path(tmp))))
        if python is not None:
            atomic_write_text(_result_path(results, "theirs", args), json.dumps(run_theirs(cfg, Path(tmp), python)))
    ours, theirs = _load(_result_path(results, "ours", args)), _load(_result_path(results, "theirs", args))
    refit = None
    if theirs is not None and not args.no_refit:
        refit_path = results / (_result_path(results, "theirs", args).stem + "_refit.json")
        refit = _load(refit_path)
        if refit is None or refit.get("source") != theirs["kernel"] or refit.get("optimizer") != args.optimizer:
            refit = refit_ours(
                to_zoo_expression(theirs["kernel"]), x, y, args.restarts, args.seed, optimizer=args.optimizer
            )
            refit["source"], refit["optimizer"] = theirs["kernel"], args.optimizer
            atomic_write_text(refit_path, json.dumps(refit))
        if "gpy_kernel" in theirs and "diagnostics" not in refit:  # older GPy-side results lack its parameters
            try:
                refit["diagnostics"] = diagnostics(theirs, x, y, args.restarts, args.seed, args.optimizer)
            except OptionError as err:  # a GPy kernel without a counterpart (its sigmoidal change operators)
                print(f"no check at GPy's parameters: {err}", file=sys.stderr)
            else:
                atomic_write_text(refit_path, json.dumps(refit))
    searched = f"GPy fits {args.structure!r} only" if args.structure else f"depth {args.depth}"
    title = (
        f"{SERIES} training split (n = {len(y)}, standardised), {searched}, {args.restarts} restarts per "
        f"candidate, beam 1, seed {args.seed}; our optimizer {args.optimizer!r}, program {args.program!r}; "
        f"GPy-ABCD grammar {args.peer_grammar!r}; {args.processes} process(es) per search"
    )
    return title + "\n\n" + markdown(ours, theirs, refit)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=2, help=f"levels of fitted candidates (1 to {MAX_DEPTH})")
    parser.add_argument("--restarts", type=int, default=3, help="optimiser runs per candidate, both searches")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--side", choices=SIDES, default="both", help="which search(es) to run now")
    parser.add_argument("--peer-grammar", choices=PEER_GRAMMARS, default="default")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="host-lbfgs", help="ml2 optimizer of our search")
    parser.add_argument(
        "--program", choices=PROGRAMS, default="shared", help="our search's candidates: one shared program or one each"
    )
    parser.add_argument("--results", default="bench_results/abcd_vs_gpy_abcd", help="where each side's JSON is kept")
    parser.add_argument(
        "--processes", type=int, default=1, help="fit a round's candidates on this many processes (both sides)"
    )
    parser.add_argument(
        "--structure", help="fit only this structure in GPy (GPy-ABCD notation, e.g. 'PER * LIN + C'; side theirs)"
    )
    parser.add_argument("--no-refit", action="store_true", help="skip refitting GPy-ABCD's structure by our ML-II")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_ours_worker(json.loads(Path(args.worker).read_text()))))
        return 0
    try:
        print(compare(args))
    except peers.PeerMissing as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
