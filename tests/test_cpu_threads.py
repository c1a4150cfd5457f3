"""zoo.cpu_threads: the BLAS thread limit behind JAX's CPU LAPACK calls (docs/performance.md#busy-machine)."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from zoo import cpu_threads

# Prints the thread count of every BLAS library loaded in a process that imported numpy and scipy before zoo (so
# their OpenBLAS read no variable of ours when it loaded) and ran one Cholesky through jaxlib's LAPACK kernels.
REPORT_BLAS_THREADS = """
import json
import numpy, scipy.linalg
import jax.numpy as jnp
import zoo
jnp.linalg.cholesky(jnp.eye(3)).block_until_ready()
from threadpoolctl import threadpool_info
print(json.dumps(sorted(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")))
"""


def _blas_threads_in_new_process(**env: str) -> list[int]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and k != cpu_threads.ENV}
    done = subprocess.run(
        [sys.executable, "-c", REPORT_BLAS_THREADS], env=environ | env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("value", "small", "large"),
    [("", 1, "cores"), ("auto", 1, "cores"), ("3", 3, 3), (" off ", None, None), ("OFF", None, None)],
)
def test_setting_gives_the_count_by_problem_size(monkeypatch, value, small, large):
    monkeypatch.setenv(cpu_threads.ENV, value)
    assert cpu_threads.blas_threads(cpu_threads.LARGE_N - 1) == small
    assert cpu_threads.blas_threads(cpu_threads.LARGE_N) == (cpu_threads.cores() if large == "cores" else large)


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_bad_setting_is_one_clear_error(monkeypatch, value):
    monkeypatch.setenv(cpu_threads.ENV, value)
    with pytest.raises(ValueError, match="ZOO_CPU_THREADS=.*'auto', a positive integer or 'off'"):
        cpu_threads.blas_threads()


def test_default_caps_blas_loaded_before_zoo_and_off_leaves_it():
    capped = _blas_threads_in_new_process()
    assert capped and set(capped) == {1}
    # With 'off' the libraries keep their own count: one per core, so on a machine of one core this cannot differ.
    if len(os.sched_getaffinity(0)) > 1:
        assert max(_blas_threads_in_new_process(ZOO_CPU_THREADS="off")) > 1


def test_a_large_problem_gets_every_core_while_it_runs_and_the_result_records_it(monkeypatch):
    from threadpoolctl import threadpool_info

    import inference

    def blas_counts():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = []
    exact = inference.get_engine("exact")

    def counting(*args, **kwargs):
        seen.append(blas_counts())
        return exact.fn(*args, **kwargs)

    monkeypatch.setitem(inference.core.api._ENGINES, "exact", dataclasses.replace(exact, fn=counting))
    data = {"X": np.ones((cpu_threads.LARGE_N, 1)), "y": np.zeros(cpu_threads.LARGE_N)}
    small = inference.run("blr", engine="exact", seed=0, num_samples=10)
    large = inference.run("blr", data, engine="exact", seed=0, num_samples=10)
    assert seen == [{1}, {cpu_threads.cores()}]
    assert blas_counts() == {1}  # restored after the run
    assert small.posterior.attrs["cpu_threads"] == f"blas=1 cores={cpu_threads.cores()} (auto)"
    assert large.posterior.attrs["cpu_threads"] == f"blas={cpu_threads.cores()} cores={cpu_threads.cores()} (auto)"
