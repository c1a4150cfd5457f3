"""A Dask client for independent tasks: on the cluster at a scheduler's address, or on a local cluster of
single-threaded worker processes started here (one per core). Used by ``zoo bench --executor dask`` (one task per
cell) and by the structure search (one task per candidate)."""

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from zoo.errors import ZooError

__all__ = ["dask_client"]

try:
    from dask.distributed import WorkerPlugin
except ImportError:  # Dask is an optional extra; dask_client says how to install it
    WorkerPlugin = object


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int = 2) -> Iterator[Any]:
    """A ``dask.distributed.Client``: connected to ``scheduler`` if given, else to a local cluster of ``workers``
    processes, closed on exit. One thread per worker (JAX is not fork-safe, so processes rather than threads), and,
    when there are no more workers than cores, each local worker pinned to a core of its own: XLA and BLAS size their
    thread pools by the cores a process may use, and two workers whose threads span both cores spin against each
    other (on this 2-core machine a structure-search candidate took 2.7x as long in each of two unpinned workers as
    alone, measured before BLAS was capped at one thread: docs/performance.md#busy-machine)."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ZooError("a Dask executor needs Dask's distributed scheduler: pip install -e '.[distributed]'") from None
    cluster = None
    if scheduler is None:
        # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (memory back to the OS sooner); glibc then
        # returns and maps again the buffers of every compiled call: one ML-II fit of a structure-search candidate
        # took 1.22 s with it against 0.87 s without (one pinned core, the same fit in a plain process).
        environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
        environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,  # nanny chatter at shutdown would drown the progress lines
            )
    try:
        with Client(cluster if cluster is not None else scheduler) as client:
            if cluster is not None and workers <= len(os.sched_getaffinity(0)):
                client.register_plugin(_CoreOfItsOwn(sorted(os.sched_getaffinity(0))))
            yield client
    finally:
        if cluster is not None:
            cluster.close()


class _CoreOfItsOwn(WorkerPlugin):
    """Pins local worker i (LocalCluster names its workers 0, 1, ...) to the i-th of ``cores``, every thread of its
    process, before any task has imported JAX."""

    def __init__(self, cores: list[int]):
        self.cores = cores

    def setup(self, worker) -> None:
        core = {self.cores[int(worker.name) % len(self.cores)]}
        for thread in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(thread), core)
