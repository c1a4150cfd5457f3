"""How many threads the BLAS/LAPACK library behind JAX's CPU linear algebra may use (``ZOO_CPU_THREADS``).

Why (docs/performance.md#busy-machine): on the CPU, jaxlib runs Cholesky, triangular solves and the other LAPACK
calls through SciPy's OpenBLAS. OpenBLAS starts one thread per core, and after each call those threads busy-wait
for the next one. A GP program calls LAPACK at every leapfrog step, so a sampler on a small problem keeps two cores
at 100 % (twice the CPU time of the same run on one core), and when a second such process shares the cores each
call waits for a thread the other process holds: a NUTS run of `gp/regression` took 7.0 s instead of 0.26 s beside
one. Below a few hundred data points a second BLAS thread wins nothing; above, the factorisations are long enough
for it to pay (ML-II at N = 1000: 0.67 s with both cores, 0.95 s with one). XLA's own operations keep their own
thread pool either way.

``ZOO_CPU_THREADS``:

* unset (``auto``, the default): one BLAS thread, raised to every core the process may use while
  ``inference.run`` fits data of ``LARGE_N`` points or more (``for_problem_size``);
* a positive integer: at most that many BLAS threads, whatever the size;
* ``off``: leave the libraries' own setting (one thread per core).
"""

import contextlib
import os
from collections.abc import Iterator

ENV = "ZOO_CPU_THREADS"
# The size from which a second BLAS thread pays, measured by ML-II on gp/regression (2 cores): equal at N = 300,
# 12 % faster at 500, 24 % at 700, 30 % at 1000 (docs/performance.md#busy-machine).
LARGE_N = 400
# Read by OpenBLAS (and by the other BLAS builds) when it loads: covers libraries loaded after `zoo`, and child
# processes (pytest-xdist and Dask workers, `zoo figure --jobs`).
_LIBRARY_ENVS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def setting() -> int | str | None:
    """``ZOO_CPU_THREADS`` read: ``"auto"``, a positive int, or None for ``off``.

    Raises ValueError with one line naming the variable on anything else.
    """
    raw = os.environ.get(ENV, "").strip().lower()
    if raw in {"", "auto"}:
        return "auto"
    if raw == "off":
        return None
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    raise ValueError(f"{ENV}={raw!r}: expected 'auto', a positive integer or 'off'")


def cores() -> int:
    """The cores this process may run on (its CPU affinity, which `taskset` and container limits set)."""
    return len(os.sched_getaffinity(0))


def blas_threads(n: int = 0) -> int | None:
    """The BLAS thread count for a problem of ``n`` data points under the setting in force (None: 'off')."""
    chosen = setting()
    if chosen == "auto":
        return cores() if n >= LARGE_N else 1
    return chosen


def limit_blas_threads() -> int | None:
    """Apply the count for small problems to the BLAS libraries loaded now and to those loaded later.

    An explicit ``OPENBLAS_NUM_THREADS`` (etc.) set by the user is left as it is for libraries loaded later.
    """
    limit = blas_threads()
    if limit is None:
        return None
    for name in _LIBRARY_ENVS:
        os.environ.setdefault(name, str(limit))
    # Libraries already loaded (numpy's and scipy's OpenBLAS when `numpy`/`scipy` came before `zoo`) read the
    # variables no more: threadpoolctl sets their limit through each library's own API.
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=limit, user_api="blas")
    return limit


@contextlib.contextmanager
def for_problem_size(n: int) -> Iterator[str]:
    """Within: the BLAS thread count for ``n`` data points; yields ``describe(n)``. Outside it, the count is what
    it was (threadpoolctl restores it)."""
    limit = blas_threads(n)
    if limit is None or limit == blas_threads():
        yield describe(n)
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=limit, user_api="blas"):
        yield describe(n)


def describe(n: int = 0) -> str:
    """The thread setting as recorded in every result's attributes, e.g. ``"blas=1 cores=2 (auto)"``."""
    limit = blas_threads(n)
    chosen = setting()
    mode = "auto" if chosen == "auto" else ("off" if chosen is None else "fixed")
    return f"blas={'off' if limit is None else limit} cores={cores()} ({mode})"
