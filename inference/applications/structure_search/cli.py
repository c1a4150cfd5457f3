"""``zoo search DATA.csv --map X=year --map y=value --depth D --score bic``: a structure search on a data file, its
trace written as JSON (atomically) and a progress line per candidate on stderr; ``--report DIR`` also writes the App. D
report of the best kernel (``inference.applications.structure_report``, one input column). ``--strategy smc`` runs SMC
over structures instead (``smc.py``) and writes its posterior; the greedy search keeps its fitted candidates in
``OUT.parts/`` as it goes, and ``--resume`` loads them instead of fitting them again (``checkpoint.py``)."""

import argparse
from pathlib import Path

SHAPES = {"X": ("N", "D"), "y": ("N",)}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="a .csv, .npz or .nc file with the inputs X and the target y (see --map)")
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="ARG=COLUMN[,COLUMN...]",
        help="the file's column(s) holding X or y, e.g. --map X=year --map y=value (default: X_0, X_1, ... and y)",
    )
    p.add_argument("--depth", type=int, default=10, help="expansion rounds (default 10, as the thesis)")
    p.add_argument("--score", default="bic", help="bic (default), laplace or tsmc")
    p.add_argument("--width", type=int, default=1, help="beam width (default 1: greedy)")
    p.add_argument("--restarts", type=int, default=3, help="ML-II restarts per candidate (chains)")
    p.add_argument("--base", default=None, help="base kernels, comma-separated (default SE,RQ,Lin,Per)")
    p.add_argument(
        "--operators", default=None, help="grammar operators C.1 ... C.11, comma-separated (default: all for one input)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="fit each depth's candidates on this many local processes")
    p.add_argument("--scheduler", default=None, help="or on the Dask cluster at this address (e.g. tcp://host:8786)")
    p.add_argument(
        "--strategy",
        default="greedy",
        choices=("greedy", "smc"),
        help="greedy (default: the thesis's search) or smc (SMC over structures and hyperparameters, AutoGP's)",
    )
    p.add_argument("--particles", type=int, default=None, help="smc: particles (default 64)")
    p.add_argument("--smc-steps", type=int, default=None, help="smc: data-annealing steps (default 10)")
    p.add_argument("--max-depth", type=int, default=None, help="smc: the prior's largest tree depth (default 2)")
    p.add_argument("--out", default="search.json", help="where the trace goes (JSON; default search.json)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="greedy: load the candidates a previous run with the same data and options fitted (kept as they are "
        "fitted in OUT's folder OUT.parts/), fit only the rest",
    )
    p.add_argument(
        "--subset",
        type=int,
        default=None,
        help="greedy: on longer series, fit changepoint / window candidates' restarts on every k-th point (at most "
        "this many), then once on all points",
    )
    p.add_argument("--report", default=None, metavar="DIR", help="also write the best kernel's report (HTML, Markdown)")


def run(args) -> int:
    from inference.applications.structure_search import search
    from inference.files.data import load_data, parse_mapping
    from zoo.structure.grammar import TIME_SERIES_BASE

    arrays = load_data(args.data, SHAPES, parse_mapping(args.map))
    result = search(
        arrays["X"],
        arrays["y"],
        depth=args.depth,
        base=TIME_SERIES_BASE if args.base is None else tuple(b.strip() for b in args.base.split(",")),
        operators=None if args.operators is None else tuple(o.strip() for o in args.operators.split(",")),
        score=args.score,
        width=args.width,
        restarts=args.restarts,
        seed=args.seed,
        workers=args.workers,
        scheduler=args.scheduler,
        strategy=args.strategy,
        smc_options=_smc_options(args),
        checkpoint=None if args.strategy == "smc" else _parts(Path(args.out)),
        resume=args.resume,
        subset=args.subset,
    )
    path = result.write_json(Path(args.out))
    if args.strategy == "smc":
        print(f"best: {result.best.expression} (posterior probability {result.best.score:.2f}); log evidence of the")
        print(f"standardised series {result.log_evidence:.2f}; posterior: {_top(result.posterior())}")
    else:
        print(f"best: {result.best.expression} ({result.score} {result.best.score:.2f}, depth {result.best.depth})")
    print(f"wrote {path}" + (" (interrupted: the candidates fitted before Ctrl-C)" if result.interrupted else ""))
    if args.report is not None:
        from inference.applications.structure_report import report

        name = Path(args.data).stem
        how = "SMC over structures" if args.strategy == "smc" else f"{result.score}, depth {args.depth}"
        notes = f"Kernel {result.best.expression} found by zoo search ({how})."
        _, paths = report(
            result.kernel, result.noise, result.X, result.y, Path(args.report), name, notes, offset=result.mean
        )
        print(f"wrote {paths['html']} and {paths['md']}")
    return 130 if result.interrupted else 0  # the shell's code for a run stopped by SIGINT


def _smc_options(args) -> dict:
    given = {"particles": args.particles, "steps": args.smc_steps, "max_depth": args.max_depth}
    return {name: value for name, value in given.items() if value is not None}


def _top(posterior: dict, k: int = 5) -> str:
    return ", ".join(f"{name} {p:.2f}" for name, p in list(posterior.items())[:k])


def _parts(out: Path) -> Path:
    """Where a search writing ``out`` keeps its fitted candidates and partial trace: ``out`` + ``.parts``."""
    return out.with_name(out.name + ".parts")
