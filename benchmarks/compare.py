"""``zoo compare MODEL --engines a,b,c``: engines side by side on one model and one data set, with the report of
``zoo bench`` (docs/architecture.md#zoo-compare).

The comparison is a suite built in code: one model, one cell per (engine, seed), the reference chosen as suite files
choose it (``suites.default_reference``: an exact engine when one fits the model). It runs through the runner and
store of ``zoo bench`` and keeps the equivalent suite file (``suite.toml``) next to the results, so a comparison on
simulated data reruns with ``zoo bench DIR/suite.toml``. Everything the user got wrong (names, engines that do not
fit, options, data files) fails here, before any cell starts.
"""

import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import posteriors, suites
from zoo.errors import IncompatibleEngineError, OptionError, ZooError

DEFAULT_ROOT = Path("bench_results")

# zoo compare flag -> the common engine option it sets, on every engine that declares it
COUNT_FLAGS = {
    "chains": "num_chains",
    "warmup": "num_warmup",
    "samples": "num_samples",
    "steps": "num_steps",
    "particles": "num_particles",
}


def split_options(
    given: Mapping[str, Any], engines: Sequence[str], declared: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, Any]]:
    """Engine options per engine name from ``given`` (``{"num_samples": 200, "svi.guide": "mvn"}``): a plain name
    goes to every engine that declares it (``declared``: engine -> its option names), ``ENGINE.name`` to that engine
    only. An option no chosen engine declares is an OptionError (a plain name silently dropped would be a typo
    unnoticed)."""
    out: dict[str, dict[str, Any]] = {engine: {} for engine in engines}
    for key, value in given.items():
        engine, dot, name = key.rpartition(".")
        if dot:
            if engine not in out:
                raise OptionError(
                    f"option {key!r} names engine {engine!r}, which is not compared ({', '.join(engines)})."
                )
            out[engine][name] = value  # validated against the engine's declarations by the caller
            continue
        takers = [e for e in engines if key in declared[e]]
        if not takers:
            raise OptionError(f"option {key!r} is not an option of {', '.join(engines)} (see `zoo list`).")
        for engine in takers:
            out[engine].setdefault(key, value)
    return out


def build_suite(
    model: str,
    engines: Sequence[str],
    seeds: Sequence[int],
    options: Mapping[str, Any],
    model_options: Mapping[str, Any] | None = None,
    reference: str | None = None,
    size: Mapping[str, Any] | None = None,
    data_seed: int = 0,
    data: Mapping[str, Any] | None = None,
) -> tuple[suites.Suite, list[str]]:
    """The comparison's suite and notes for the user (an engine added as the reference).

    options: engine options as for ``split_options``; data: ``{"file", "map", "test"}`` of ``--data`` (None
    simulates with ``size`` and ``data_seed``). Raises ZooError subclasses for unknown names, engines that do not
    fit, bad options or data, before anything is compiled.
    """
    import inference
    import zoo
    from inference.core.api import fits, get_engine, validate_options

    spec = zoo.get(model, **(model_options or {}))
    engines = list(dict.fromkeys(engines))
    if not engines:
        raise OptionError("--engines needs at least one engine name, e.g. --engines nuts,svi.")
    fitting = inference.engines_for(spec)
    notes = []
    chosen = reference or suites.default_reference(engines, fitting)
    if chosen not in engines:
        engines.insert(0, chosen)
        why = "given by --reference" if reference else f"exact for {spec.name}"
        notes.append(f"reference: {chosen} ({why}; added to the engines)")
    for name in engines:
        if not fits(get_engine(name), spec):  # get_engine: unknown names raise with close matches
            raise IncompatibleEngineError(
                f"engine {name!r} does not fit model {spec.name!r}; engines that fit: {', '.join(fitting) or 'none'}."
            )
    per_engine = split_options(options, engines, {e: list(get_engine(e).options) for e in engines})
    notes += posteriors.align_params(spec, engines, per_engine)  # one posterior per comparison
    for name in engines:
        validate_options(get_engine(name), per_engine[name])
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise OptionError(f"--seeds must be distinct non-negative integers, got {list(seeds)}.")
    source = _data_source(spec, data) if data else {}
    cells = [
        suites.Cell(
            spec.name,
            engine,
            engine,
            seed,
            per_engine[engine],
            dict(size or {}),
            data_seed,
            chosen,
            dict(spec.options),
            **source,
        )
        for engine in engines
        for seed in seeds
    ]
    problems = posteriors.check(cells)
    if problems:
        raise OptionError(f"zoo compare {spec.name}: {problems[0]}")
    shown = ", ".join(f"{k}={v}" for k, v in (size or {}).items()) or "default size"
    on = f"data {data['file']}" if data else f"simulated data ({shown}, data seed {data_seed})"
    description = f"zoo compare {spec.name}: {', '.join(engines)} against {chosen}, on {on}, seeds {list(seeds)}"
    name = "compare-" + cells[0].variant.replace("/", "__")
    return suites.from_cells(name, description, cells), notes


def _data_source(spec: Any, data: Mapping[str, Any]) -> dict[str, Any]:
    """The Cell fields of ``--data``: the files read once here, so a bad file fails before any cell starts."""
    from inference.files.data import file_digest, load_dataset

    mapping = {k: tuple(v) for k, v in (data.get("map") or {}).items()}
    load_dataset(data["file"], spec, mapping, data.get("test") or None)
    return {
        "data_file": str(Path(data["file"]).resolve()),  # cells may run elsewhere (a Dask worker's folder)
        "data_map": mapping,
        "test_file": str(Path(data["test"]).resolve()) if data.get("test") else "",
        "data_digest": file_digest(data["file"]),
    }


def parse_seeds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise OptionError(f"--seeds expects integers separated by commas, e.g. 0,1, got {text!r}.") from None


def compare(args) -> int:
    """The ``zoo compare`` handler: build the suite, run it into ``args.out``, write the report, print its path."""
    from benchmarks import cli, report, runner
    from benchmarks.store import ResultsStore
    from inference.files.data import parse_mapping

    data = None
    if args.data and args.size:
        raise ZooError("--data reads the data from a file; --size would simulate it: give one.")
    if args.data:
        data = {"file": args.data, "map": parse_mapping(args.map), "test": args.test}
    elif args.map or args.test:
        raise ZooError(f"{'--test' if args.test else '--map'} needs --data (the observed data file).")
    options = dict(args.engine_option_values)
    for flag, name in COUNT_FLAGS.items():
        if getattr(args, flag) is not None:
            options[name] = getattr(args, flag)
    if args.params_values:
        options["params"] = args.params_values
    suite, notes = build_suite(
        args.model,
        [e.strip() for e in args.engines.split(",") if e.strip()],
        parse_seeds(args.seeds),
        options,
        model_options=args.model_option_values,
        reference=args.reference,
        size=args.size_values,
        data_seed=args.data_seed,
        data=data,
    )
    out = Path(args.out) if args.out else DEFAULT_ROOT / suite.name
    store = ResultsStore(out)
    signal.signal(signal.SIGTERM, cli._exit_on_sigterm)  # a killed comparison leaves whole files, as zoo bench
    for note in notes:
        print(f"zoo compare: {note}", file=sys.stderr, flush=True)
    print(f"zoo compare: {suite.description}; {len(suite.cells)} cells, results in {out}/", file=sys.stderr, flush=True)
    result = runner.run_suite(suite, store, resume=args.resume, stop=lambda: cli._terminated)
    if cli._terminated:
        raise SystemExit(128 + signal.SIGTERM)
    print(f"zoo compare: ran {result.ran} cells ({result.failed} failed) in {result.seconds:.1f} s", file=sys.stderr)
    paths = report.write_report(store)
    print(f"report: {paths['html']} (and {paths['md'].name})")
    return 0
