"""The memory mappings one process holds as it runs many cells of a suite (docs/performance.md#bounded-caches).

Every compiled program a process keeps holds memory mappings, and Linux allows a process ``vm.max_map_count`` of them
(65,530 by default) before LLVM aborts it; ``inference.core.cache`` releases every kept program past half of that.
This runs the first ``--cells`` distinct (model, model options, engine) cells of a suite one after another in this
process (``benchmarks.runner.run_cell``, as ``zoo bench`` runs them locally) and prints, per cell, its wall time, the
mappings held after it and how many releases there have been::

    python -m benchmarks.program_mappings --suite gym --cells 60
"""

import argparse
import sys
import time

from benchmarks import runner, suites
from inference.core import cache


def distinct_cells(suite: suites.Suite, count: int) -> list[suites.Cell]:
    """The first ``count`` cells of ``suite`` that differ in model, model options or engine (seeds share programs)."""
    seen, cells = set(), []
    for cell in suite.cells:
        key = (cell.model, repr(cell.model_options), cell.engine)
        if key not in seen:
            seen.add(key)
            cells.append(cell)
    return cells[:count]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="gym", choices=suites.available())
    p.add_argument("--cells", type=int, default=60, help="distinct cells to run (default 60)")
    args = p.parse_args(argv)
    if args.cells < 1:
        print(f"error: --cells must be a positive integer, got {args.cells}.", file=sys.stderr)
        return 2
    print(f"limit {cache.mapping_limit()}, release past {cache.MAPPING_SHARE:g} of it")
    print(f"start: {cache.mappings_in_use()} mappings")
    for index, cell in enumerate(distinct_cells(suites.load(args.suite), args.cells)):
        start = time.perf_counter()
        outcome = runner.run_cell(cell)
        status = "ok" if outcome.ok else f"failed: {outcome.error.splitlines()[0][:60]}"
        print(
            f"{index:3d} {cell.model} {cell.engine} {status} {time.perf_counter() - start:.1f} s: "
            f"{cache.mappings_in_use()} mappings, {cache.releases} releases",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
