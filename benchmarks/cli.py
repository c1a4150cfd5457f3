"""Handlers of ``zoo bench`` and ``zoo report`` (``zoo_cli.py`` builds the parser and imports these lazily)."""

import signal
import sys
from pathlib import Path

from zoo.errors import ZooError

DEFAULT_ROOT = Path("bench_results")


_terminated = False


def _exit_on_sigterm(signum, frame):
    # SIGTERM's default action ends the process at once; raising instead lets the atomic writers' `finally`
    # blocks remove their temporary files, so a killed run leaves only whole files behind. Python runs the handler
    # wherever the main thread is, and an exception raised inside a weakref callback or __del__ is printed and
    # dropped ("Exception ignored in ..."): seen in tests/test_bench.py, where the run then finished all its cells.
    # So the request is also remembered, and the runner asks for it before each cell (``run_suite(stop=...)``).
    global _terminated
    _terminated = True
    raise SystemExit(128 + signum)


def bench(args) -> int:
    """Run suite ``args.suite`` into ``args.out`` (default bench_results/SUITE), then write the report."""
    from benchmarks import posteriors, runner, suites
    from benchmarks.store import ResultsStore

    suite = suites.load(args.suite)
    problems = posteriors.check(suite.cells)  # one posterior per comparison (docs/architecture.md#one-posterior)
    if problems:
        raise suites.SuiteError(f"suite {suite.name!r} compares different posteriors: " + "; ".join(problems))
    missing = runner.missing_references(suite.cells)  # reference = "stored" (docs/gym.md#references)
    if missing:
        raise suites.SuiteError(f"suite {suite.name!r} needs stored references: " + "; ".join(missing))
    out = Path(args.out) if args.out else DEFAULT_ROOT / suite.name
    if args.scheduler and args.executor != "dask":
        raise ZooError("--scheduler needs --executor dask.")
    store = ResultsStore(out)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    print(
        f"zoo bench: suite {suite.name!r}, {len(suite.cells)} cells ({len(suite.models())} models), "
        f"executor {args.executor}, results in {out}/",
        file=sys.stderr,
        flush=True,
    )
    result = runner.run_suite(
        suite,
        store,
        executor=args.executor,
        scheduler=args.scheduler,
        workers=args.workers,
        resume=args.resume,
        retry_failed=args.retry_failed,
        stop=lambda: _terminated,
    )
    if _terminated:
        raise SystemExit(128 + signal.SIGTERM)
    print(
        f"zoo bench: ran {result.ran} cells ({result.failed} failed), skipped {result.skipped} finished ones, "
        f"in {result.seconds:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    if not args.no_report:
        from benchmarks import report

        paths = report.write_report(store)
        print(f"report: {paths['html']} (and {paths['md'].name})")
    return 0


def rebuild_report(args) -> int:
    """Rebuild report.md and report.html of the run stored in ``args.dir``."""
    from benchmarks import report
    from benchmarks.store import ResultsStore

    store = ResultsStore(args.dir)
    if store.is_empty():
        raise ZooError(f"{args.dir} holds no benchmark results (expected {args.dir}/cells/*.json).")
    paths = report.write_report(store)
    print(f"report: {paths['html']} (and {paths['md'].name})")
    return 0
