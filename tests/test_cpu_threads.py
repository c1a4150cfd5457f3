"""zoo.cpu_threads: the BLAS thread limit behind JAX's CPU LAPACK calls (docs/performance.md#busy-machine)."""

import json
import os
import subprocess
import sys

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


@pytest.mark.parametrize(("value", "expected"), [("", 1), ("3", 3), (" off ", None), ("OFF", None)])
def test_setting_parses(monkeypatch, value, expected):
    monkeypatch.setenv(cpu_threads.ENV, value)
    assert cpu_threads.blas_threads() == expected


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_bad_setting_is_one_clear_error(monkeypatch, value):
    monkeypatch.setenv(cpu_threads.ENV, value)
    with pytest.raises(ValueError, match="ZOO_CPU_THREADS=.*positive integer or 'off'"):
        cpu_threads.blas_threads()


def test_default_caps_blas_loaded_before_zoo_and_off_leaves_it():
    capped = _blas_threads_in_new_process()
    assert capped and set(capped) == {1}
    # With 'off' the libraries keep their own count: one per core, so on a machine of one core this cannot differ.
    if len(os.sched_getaffinity(0)) > 1:
        assert max(_blas_threads_in_new_process(ZOO_CPU_THREADS="off")) > 1


def test_result_records_the_setting():
    import inference

    idata = inference.run("blr", engine="exact", seed=0, num_samples=10)
    assert idata.posterior.attrs["cpu_threads"] == cpu_threads.describe()
    assert cpu_threads.describe().startswith(f"blas={cpu_threads.blas_threads()} cores=")
