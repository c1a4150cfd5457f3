"""XLA's C++ log lines stay off the terminal whatever the import order (zoo/quiet.py): a script that imports ``jax``
before ``zoo`` prints none on a second run, when its programs load from a warm compilation cache."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# absl's C++ log prefix: severity letter, date, time, thread, file:line]
XLA_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.]+:\d+\]", re.MULTILINE)

SCRIPT = """
import jax
import jax.numpy as jnp
import zoo  # noqa: F401
{after_zoo}
print(float(jax.jit(lambda x: jnp.sin(x) @ x)(jnp.ones(3))))
"""
# the control: the level back at jax's default after zoo, so cache hits log as they would without zoo/quiet.py
LOUD = "from jax._src.lib import utils\nutils.absl_set_min_log_level(1)"


def _run(tmp_path: Path, after_zoo: str = "") -> str:
    script = SCRIPT.format(after_zoo=after_zoo)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(ZOO_JAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_jax_imported_before_zoo_prints_no_xla_lines_with_a_warm_cache(tmp_path):
    _run(tmp_path)  # fills the cache
    quiet = _run(tmp_path)
    assert XLA_LINE.findall(quiet) == [], quiet[:2000]
    loud = _run(tmp_path, after_zoo=LOUD)
    if not XLA_LINE.search(loud):
        pytest.skip("this jaxlib logs nothing when it loads cached executables: nothing to silence")
