"""The ``zoo`` command: list models and engines, run an engine on a model, benchmark, reproduce figures.

Kept outside the ``zoo`` package because it sits above every layer (zoo <- inference <- benchmarks,
paper_figures); heavy imports happen inside the subcommands so ``zoo --help`` answers at once.
"""

import argparse
import json
import sys
import time
from pathlib import Path

# command-line flags of the shared counts, and the engine options they set
COUNT_FLAGS = (
    ("chains", "num_chains"),
    ("warmup", "num_warmup"),
    ("samples", "num_samples"),
    ("steps", "num_steps"),
    ("particles", "num_particles"),
)


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _key_values(pairs: list[str], flag: str) -> dict:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"zoo: {flag} expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key] = _parse_value(value)
    return out


def cmd_list(args) -> int:
    import inference
    import zoo

    print("Models (engines that fit):")
    for name in zoo.names():
        spec = zoo.get(name)
        print(f"  {name:24s} {spec.summary}")
        print(f"  {'':24s}   engines: {', '.join(inference.engines_for(spec))}")
        declared = zoo.registry.family_options(name)
        if declared:
            shown = ", ".join(f"{k} ({o.describe()}, default {o.default})" for k, o in declared.items())
            print(f"  {'':24s}   options (-m KEY=VALUE): {shown}")
    print("\nEngines:")
    for name in inference.engine_names():
        engine = inference.get_engine(name)
        needs = " | ".join(", ".join(sorted(r)) for r in (engine.requires, *engine.alternatives))
        print(f"  {name:14s} {engine.summary} [needs: {needs}]")
        shown = ", ".join(f"{k} ({o.describe()}, default {o.default})" for k, o in engine.options.items())
        print(f"  {'':14s}   options (-o KEY=VALUE): {shown}")
    return 0


def cmd_run(args) -> int:
    import jax

    import inference
    import zoo
    from inference.core import progress
    from inference.results import diagnostics
    from inference.results.readable import condense
    from zoo.options import parse_assignments

    # unknown names and bad model options fail here, before any simulation or compilation
    spec = zoo.get(args.model, **parse_assignments(f"model {args.model!r}", args.model_option))
    options = _key_values(args.option, "--option")
    for flag, name in COUNT_FLAGS:
        value = getattr(args, flag)
        if value is not None:
            options[name] = value
    if args.params:
        options["params"] = _key_values(args.params, "--params")
    size = _key_values(args.size, "--size")
    data = _data_file(args, spec)
    if data is None and (size or args.data_seed is not None):
        data_seed = args.seed if args.data_seed is None else args.data_seed
        data = spec.simulate(jax.random.key(data_seed), **size)
    print(f"zoo: running {args.engine} on {spec.name} (seed {args.seed}) ...", file=sys.stderr, flush=True)
    # an estimate from the last run like this one, and a line every 15 s while it runs (inference/core/progress.py)
    sizes = {"size": size, "data": args.data, "map": args.map, "model_options": args.model_option}
    key = progress.run_key(spec.name, args.engine, options, sizes)
    with progress.expectations(f"zoo: {args.engine} on {spec.name}", key):
        idata = inference.run(spec, data, engine=args.engine, seed=args.seed, **options)
    table = diagnostics.summary(idata)
    columns = [c for c in ("mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat", "ess_bulk_per_s") if c in table]
    # parameters in full, a few rows of each large latent, no all-NaN columns (inference/results/readable.py)
    shown, omitted = condense(table[columns], args.rows_per_variable, args.all_rows)
    with_pd_options(lambda: print(shown.to_string(float_format=_fmt)))
    for line in omitted:
        print(f"... {line}")
    stats = table.attrs
    timing = f"compile {stats['compile_s']:.2f} s, run {stats['run_s']:.2f} s"
    if stats["draws"] < 2:  # point estimates: no ESS, R-hat or divergences to report
        print(f"\n{stats['engine']}: point estimates, {stats['chains']} chain(s); {timing}")
    else:
        print(
            f"\n{stats['engine']}: {stats['chains']} chains x {stats['draws']} draws; {timing}; "
            f"min bulk ESS {stats['min_ess_bulk']:.0f}, min tail ESS {stats['min_ess_tail']:.0f}, "
            f"ESS/s {stats['ess_per_s']:.1f}, max R-hat {stats['max_rhat']:.3f}, divergences {stats['divergences']}"
        )
    problems = json.loads(idata.posterior.attrs.get("health", "[]"))
    print(
        f"health: {len(problems)} warning(s), printed above (inference/results/health.py)" if problems else "health: ok"
    )
    if args.out:
        diagnostics.to_netcdf(idata, args.out)
        print(f"wrote {args.out}")
    return 0


def _data_file(args, spec):
    """The Dataset of ``--data`` (with ``--map`` and ``--test``), or None when no data file was given. Read here, so a
    bad file fails before anything is compiled (docs/architecture.md#data-files)."""
    from zoo.errors import DataError

    simulated = [flag for flag, given in (("--size", args.size), ("--data-seed", args.data_seed is not None)) if given]
    if not args.data:
        if args.test or args.map:
            raise DataError(f"{'--test' if args.test else '--map'} needs --data (the observed data file).")
        return None
    if simulated:
        raise DataError(f"--data reads the data from a file; {' and '.join(simulated)} would simulate it: give one.")
    from inference.files.data import load_dataset, parse_mapping

    return load_dataset(args.data, spec, parse_mapping(args.map), test=args.test)


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """``--data``, ``--map`` and ``--test`` (shared by ``zoo run`` and ``zoo compare``)."""
    p.add_argument("--data", metavar="FILE", help="observed data from a .csv, .npz or .nc file (see --map)")
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="ARG=COLUMN[,COLUMN...]",
        help="the file's column(s) or variable(s) holding a model argument, e.g. --map y=strength "
        "--map X=cement,age (repeatable; default: y is column y, X is columns X_0, X_1, ...)",
    )
    p.add_argument("--test", metavar="FILE", help="held-out test data (same layout and --map as --data)")


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def with_pd_options(fn):
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 20):
        fn()


def cmd_figure(args) -> int:
    import paper_figures

    if args.list or not (args.names or args.all):
        for name, figure in paper_figures.FIGURES.items():
            print(f"  {name:28s} {figure.description}")
        return 0
    names = list(paper_figures.FIGURES) if args.all else args.names
    unknown = [name for name in names if name not in paper_figures.FIGURES]
    if unknown:
        from zoo.errors import unknown_name

        raise unknown_name("figure", unknown[0], paper_figures.FIGURES)
    if args.jobs < 1:
        print(f"zoo figure: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.jobs > 1:
        from paper_figures.parallel import run_figures_in_parallel

        failed = run_figures_in_parallel(names, quick=args.quick, out=Path(args.out), jobs=args.jobs)
        if failed:
            print(f"zoo figure: {len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1 if failed else 0
    for index, name in enumerate(names, start=1):
        start = time.perf_counter()
        paper_figures.run_figure(name, quick=args.quick, out=Path(args.out))
        print(f"[{index}/{len(names)}] {name}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return 0


def cmd_bench(args) -> int:
    from benchmarks.cli import bench

    return bench(args)


def cmd_compare(args) -> int:
    from benchmarks.compare import compare
    from zoo.options import parse_assignments

    args.model_option_values = parse_assignments(f"model {args.model!r}", args.model_option)
    args.engine_option_values = _key_values(args.option, "--option")
    args.size_values = _key_values(args.size, "--size")
    args.params_values = _key_values(args.params, "--params")
    return compare(args)


def cmd_report(args) -> int:
    from benchmarks.cli import rebuild_report

    return rebuild_report(args)


def cmd_reference(args) -> int:
    """(Re)build, list or export reference posteriors (docs/gym.md#references)."""
    from inference.results import references as refs
    from zoo.options import parse_assignments

    if args.list:
        for ref in refs.stored():
            checks = ref.provenance.get("checks_made")
            print(
                f"  {ref.id:64s} {ref.kind:9s} {ref.provenance.get('engine', '?'):6s} "
                f"{'' if checks is None else ('all checks passed' if all(checks.values()) else 'CHECKS FAILED')}"
            )
        return 0
    if not args.model:
        raise SystemExit("zoo reference: give a MODEL (or --list)")
    model_options = parse_assignments(f"model {args.model!r}", args.model_option)
    size = _key_values(args.size, "--size")
    params = _key_values(args.params, "--params") or None
    if args.export:
        import zoo
        from inference.applications.posteriordb import export

        zoo.get(args.model, **model_options)  # unknown names and options fail here
        ref = refs.require(args.model, model_options, size, args.data_seed, params or {}, args.out)
        for path in export(ref, args.export):
            print(f"wrote {path}")
        return 0
    from inference.applications.references import build

    counts = {k: getattr(args, k) for k in ("chains", "draws", "thin", "warmup", "seed")}
    counts = {k: v for k, v in counts.items() if v is not None}  # build's defaults: posteriordb's
    engine_options = {} if args.target_accept is None else {"target_accept": args.target_accept}
    ref = build(
        args.model, model_options, size, args.data_seed, params, args.engine, **counts, engine_options=engine_options
    )
    path = ref.save(args.out)
    print(f"wrote {path} ({ref.kind}, {ref.provenance.get('wall_s')} s)")
    return 0


def cmd_search(args) -> int:
    from inference.applications.structure_search.cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zoo", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list models and engines, and which engine fits which model")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="run an inference engine on a model and print diagnostics")
    p.add_argument("model", help="model name (see `zoo list`)")
    p.add_argument("--engine", default="nuts", help="engine name (default: nuts)")
    p.add_argument(
        "--model-option",
        "-m",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a model option, e.g. -m num_modes=3 -m depths=1,2 (repeatable; see `zoo list`)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed of the engine (and of simulated data)")
    p.add_argument("--data-seed", type=int, default=None, help="simulate data with this seed instead")
    p.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="size of simulated data, e.g. --size n=100 (repeatable)",
    )
    add_data_arguments(p)
    p.add_argument("--chains", type=int, help="num_chains")
    p.add_argument("--warmup", type=int, help="num_warmup")
    p.add_argument("--samples", type=int, help="num_samples")
    p.add_argument("--steps", type=int, help="num_steps (optimisation steps)")
    p.add_argument("--particles", type=int, help="num_particles")
    p.add_argument(
        "--params",
        action="append",
        default=[],
        metavar="SITE=VALUE",
        help="fix a model parameter, e.g. --params noise=0.1 (repeatable)",
    )
    p.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other engine option, value parsed as JSON (repeatable)",
    )
    p.add_argument("--out", help="write the InferenceData to this netCDF file")
    p.add_argument(
        "--rows-per-variable",
        type=int,
        default=5,
        help="rows of the summary printed per variable with more components (default 5; parameters print in full)",
    )
    p.add_argument("--all-rows", action="store_true", help="print every row of the summary table")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("figure", help="reproduce a table or figure of the source documents")
    p.add_argument("names", nargs="*", help="figure names (see --list)")
    p.add_argument("--list", action="store_true", help="list the reproductions")
    p.add_argument("--all", action="store_true", help="run every reproduction")
    p.add_argument("--quick", action="store_true", help="a small version (what CI runs)")
    p.add_argument("--out", default="figures_out", help="output folder (default: figures_out)")
    p.add_argument(
        "--jobs", type=int, default=1, help="figures run at once, each in its own process pinned to a core (default: 1)"
    )
    p.set_defaults(func=cmd_figure)

    p = sub.add_parser("bench", help="run a benchmark suite (a grid of model x engine x seed) and write a report")
    p.add_argument("suite", help="suite name (benchmarks/suites/NAME.toml) or a path to a suite .toml file")
    p.add_argument("--out", help="results folder (default: bench_results/SUITE)")
    p.add_argument("--executor", choices=["local", "dask"], default="local", help="where cells run (default: local)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler to connect to (default: a local cluster)")
    p.add_argument("--workers", type=int, default=2, help="worker processes of the local Dask cluster (default: 2)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted run; finished cells are not redone")
    p.add_argument("--retry-failed", action="store_true", help="with --resume, run failed cells again")
    p.add_argument("--no-report", action="store_true", help="skip writing report.md/report.html")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "compare",
        help="run several engines on one model and one data set and write the report of `zoo bench`",
        description="Run ENGINES on MODEL (one data set: --data FILE, or simulated) and write the benchmark report "
        "(engines side by side, ESS/s, errors against the reference engine, marginals, trace and rank plots).",
    )
    p.add_argument("model", help="model name (see `zoo list`)")
    p.add_argument("--engines", required=True, help="engine names separated by commas, e.g. nuts,svi,pgas")
    p.add_argument(
        "--reference",
        help="the engine the others are compared against (default: an exact engine that fits the model, added if "
        "not listed, else the first of --engines)",
    )
    p.add_argument(
        "--model-option", "-m", action="append", default=[], metavar="KEY=VALUE", help="a model option (repeatable)"
    )
    p.add_argument("--seeds", default="0", help="engine seeds separated by commas (default: 0)")
    add_data_arguments(p)
    p.add_argument(
        "--size", action="append", default=[], metavar="KEY=VALUE", help="size of simulated data, e.g. --size n=100"
    )
    p.add_argument("--data-seed", type=int, default=0, help="seed of simulated data (default: 0)")
    for flag, name in COUNT_FLAGS:
        p.add_argument(f"--{flag}", type=int, help=f"{name}, for every engine that has it")
    p.add_argument(
        "--params", action="append", default=[], metavar="SITE=VALUE", help="fix a model parameter in every engine"
    )
    p.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="[ENGINE.]KEY=VALUE",
        help="an engine option, value parsed as JSON: KEY=VALUE for every engine that has it, ENGINE.KEY=VALUE for "
        "one, e.g. -o svi.guide=mvn (repeatable)",
    )
    p.add_argument("--out", help="results folder (default: bench_results/compare-MODEL)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted comparison in --out")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("search", help="search kernel structures for a data file (Duvenaud ch. 3), trace as JSON")
    from inference.applications.structure_search.cli import add_arguments

    add_arguments(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "reference",
        help="(re)build the reference posterior of a model (exact, or a long NUTS run certified by posteriordb's "
        "criteria), list them, or export one to posteriordb's layout",
    )
    p.add_argument("model", nargs="?", help="model name (see `zoo list`)")
    p.add_argument("--model-option", "-m", action="append", default=[], metavar="KEY=VALUE", help="a model option")
    p.add_argument("--size", action="append", default=[], metavar="KEY=VALUE", help="size of the simulated data")
    p.add_argument("--data-seed", type=int, default=0, help="seed of the simulated data (default: 0)")
    p.add_argument("--params", action="append", default=[], metavar="SITE=VALUE", help="hold a model parameter fixed")
    p.add_argument("--engine", help="exact, kalman or nuts (default: the first of these that fits the model)")
    p.add_argument("--chains", type=int, help="NUTS chains (default: 10)")
    p.add_argument("--draws", type=int, help="draws per chain after thinning (default: 1000)")
    p.add_argument("--thin", type=int, help="thinning (default: 10)")
    p.add_argument("--warmup", type=int, help="warm-up iterations (default: 10000)")
    p.add_argument("--seed", type=int, help="engine seed (default: 4711)")
    p.add_argument(
        "--target-accept",
        type=float,
        help="NUTS's target acceptance (Stan's adapt_delta; default: the engine's 0.8); raise it when divergences "
        "refuse the run",
    )
    p.add_argument("--out", help="references folder (default: zoo/references)")
    p.add_argument("--export", metavar="DIR", help="write the stored reference to DIR in posteriordb's layout")
    p.add_argument("--list", action="store_true", help="list the stored references")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("report", help="rebuild report.md and report.html from a results folder of `zoo bench`")
    p.add_argument("dir", help="results folder (e.g. bench_results/quick)")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import zoo  # noqa: F401  (quiet XLA logging and float64 before anything imports jax)
    from zoo.errors import ZooError

    try:
        return args.func(args)
    except ZooError as exc:
        print(f"zoo: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
