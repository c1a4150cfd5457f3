"""Our ABCD structure search next to GPy-ABCD's on the airline series: wall time, fits per second, final kernel, BIC.

Usage::

    python -m benchmarks.peers install gpy-abcd          # once: GPy-ABCD in its own venv (benchmarks/peers.py)
    python -m benchmarks.abcd_vs_gpy_abcd --depth 2 --restarts 3 [--side ours|theirs|both] [--results DIR]
        [--optimizer host-lbfgs|lbfgs] [--program shared|per-structure] [--processes 2]

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
"""

import argparse
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
from inference.applications.structure_search.fit import FitFailure, fit_ml2
from inference.applications.structure_search.scales import DataScaledFactory, Scales
from inference.applications.structure_search.scores import bic
from inference.applications.structure_search.search import PROGRAMS
from inference.files.atomic import atomic_write_text
from zoo.data import tsdl
from zoo.errors import OptionError
from zoo.kernels import num_params, parse
from zoo.kernels.base import Constant, Product, Sum
from zoo.kernels.nonstationary import Changepoint, ChangeWindow

PEER = "gpy-abcd"
SERIES = "01-airline"
MAX_DEPTH = 10
SIDES = ("ours", "theirs", "both")
PEER_GRAMMARS = ("default", "original")
OPTIMIZERS = ("host-lbfgs", "lbfgs")

# Runs inside the peer's venv: argv[1] a JSON file {x, y, depth, restarts, seed, grammar}; prints one JSON line.
GPY_ABCD_SCRIPT = r"""
import contextlib, json, sys, time, warnings
t_import = time.perf_counter()
import numpy as np
import GPy_ABCD
from GPy_ABCD import BIC, explore_model_space, fit_mods_not_parallel, production_rules, start_kernels
from GPy_ABCD.Models.modelSearch import fit_mods_parallel_processes
import_s = time.perf_counter() - t_import
cfg = json.load(open(sys.argv[1]))
X, Y = np.asarray(cfg["x"], float)[:, None], np.asarray(cfg["y"], float)[:, None]
name = {"default": "Default", "original": "Original_ABCD"}[cfg["grammar"]]
rounds = cfg["depth"] - 1 if cfg["grammar"] == "default" else cfg["depth"]
np.random.seed(cfg["seed"])
fitter = fit_mods_not_parallel if cfg.get("processes", 1) == 1 else fit_mods_parallel_processes
warnings.simplefilter("ignore")
t0 = time.perf_counter()


class Stamped:  # its verbose log, one line per round, on stderr with the seconds since the search began
    def write(self, text):
        for line in text.splitlines(keepends=True):
            sys.stderr.write(f"{time.perf_counter() - t0:9.1f} GPy-ABCD: {line}" if line.strip() else line)
        sys.stderr.flush()

    def flush(self):
        sys.stderr.flush()


with contextlib.redirect_stdout(Stamped()):
    sorted_models, tested, *_ = explore_model_space(
        X, Y, start_kernels=start_kernels[name], p_rules=production_rules[name], utility_function=BIC, rounds=rounds,
        beam=1, restarts=cfg["restarts"], model_list_fitter=fitter, optimiser="lbfgsb", verbose=True,
    )
wall_s = time.perf_counter() - t0
best = sorted_models[0]
try:
    sum_of_products = str(best.sum_of_prods_kex)
except Exception as err:  # its parameter read-back fails on some kernels; the structure is still kernel_expression
    sum_of_products = f"n/a ({type(err).__name__})"
print(json.dumps({
    "version": GPy_ABCD.__version__, "import_s": import_s, "wall_s": wall_s,
    "fits": sum(len(level) for level in tested), "fits_per_level": [len(level) for level in tested],
    "kernel": str(best.kernel_expression), "sum_of_products": sum_of_products,
    "log_likelihood": float(best._ll()), "num_params": int(best._k()), "n": int(best._n()),
    "bic": float(best.cached_utility_function), "rounds": rounds, "grammar": name,
}))
"""


def check_options(depth, restarts, side: str = "both", grammar: str = "default", processes: int = 1) -> None:
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
    return _run_json([str(python), str(tmp / "gpy_abcd_run.py"), str(tmp / "theirs.json")])


def refit_ours(
    expression: str,
    x: np.ndarray,
    y: np.ndarray,
    restarts: int,
    seed: int,
    draws: int = 3,
    optimizer: str = "host-lbfgs",
) -> dict:
    """Structure ``expression`` fitted by our ML-II as a candidate of our search would be (``draws`` data-scaled
    starts, each with ``restarts`` jittered restarts, within the periodic bounds) and scored by our BIC."""
    X = x[:, None]
    rng = np.random.default_rng(seed)
    factory = DataScaledFactory(Scales.of(X), rng)
    structure = parse(expression)
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
            )
        except FitFailure:
            continue
        if best is None or fit.log_likelihood > best.log_likelihood:
            best = fit
    if best is None:
        return {"kernel": expression, "error": "every start failed"}
    k = num_params(best.kernel, 1) + 1
    return {
        "kernel": expression,
        "log_likelihood": best.log_likelihood,
        "num_params": k,
        "bic": bic(best.log_likelihood, k, len(y)),
    }


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
    return rows


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
    grammar = f"_{args.optimizer}_{args.program}" if side == "ours" else f"_{args.peer_grammar}"
    processes = f"_processes{args.processes}" if args.processes > 1 else ""
    return results / f"{side}_depth{args.depth}_restarts{args.restarts}_seed{args.seed}{grammar}{processes}.json"


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def compare(args) -> str:
    """Run the requested sides (each in its own process), keep their JSON in ``args.results``, refit GPy-ABCD's
    final structure by our ML-II once both are there, and return the Markdown table."""
    check_options(args.depth, args.restarts, args.side, args.peer_grammar, args.processes)
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
    title = (
        f"{SERIES} training split (n = {len(y)}, standardised), depth {args.depth}, {args.restarts} restarts per "
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
