"""How many threads the BLAS/LAPACK library behind JAX's CPU linear algebra may use (``ZOO_CPU_THREADS``).

Why (docs/performance.md#busy-machine): on the CPU, jaxlib runs Cholesky, triangular solves and the other LAPACK
calls through SciPy's OpenBLAS. OpenBLAS starts one thread per core, and after each call those threads busy-wait
for the next one. A GP program calls LAPACK at every leapfrog step, so a sampler on a tiny problem keeps two cores
at 100 % (twice the CPU time of the same run on one core), and when a second such process shares the cores, each
call waits for a thread the other process holds: a NUTS run of `gp/regression` took 15.7 s instead of 0.24 s
beside one. The zoo's LAPACK calls are per-chain factorisations of N <= a few thousand, where the threads win
little; XLA's own operations keep their own thread pool.

``ZOO_CPU_THREADS``: unset -> 1 (the default, measured in ``benchmarks/busy_machine.py``); a positive integer -> at
most that many BLAS threads; ``off`` -> leave the libraries' own setting (one thread per core).
"""

import os

ENV = "ZOO_CPU_THREADS"
DEFAULT = 1
# Read by OpenBLAS (and by the other BLAS builds) when it loads: covers libraries loaded after `zoo`, and child
# processes (pytest-xdist and Dask workers, `zoo figure --jobs`).
_LIBRARY_ENVS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def blas_threads() -> int | None:
    """The BLAS thread limit in force by ``ZOO_CPU_THREADS``: a positive int, or None for 'off'.

    Raises ValueError with one line naming the variable on anything else.
    """
    raw = os.environ.get(ENV, "").strip().lower()
    if raw == "":
        return DEFAULT
    if raw == "off":
        return None
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    raise ValueError(f"{ENV}={raw!r}: expected a positive integer or 'off'")


def limit_blas_threads() -> int | None:
    """Apply ``blas_threads()`` to the BLAS libraries loaded now and to those loaded later; returns the limit.

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


def describe() -> str:
    """The thread setting as recorded in every result's attributes, e.g. ``"blas=1 cores=2"``."""
    limit = blas_threads()
    return f"blas={'off' if limit is None else limit} cores={len(os.sched_getaffinity(0))}"
