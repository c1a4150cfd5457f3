"""Test configuration: quiet XLA logging, float64 and a project-local compilation cache before jax loads."""

import os
from pathlib import Path

os.environ.setdefault("ZOO_JAX_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".jax_cache"))

import zoo  # noqa: E402,F401  (configures jax)

# The longest files (cold, 2026-11-27; docs/performance.md#test-suite) are handed to the workers first, so that the
# two finish together instead of one running a long file alone at the end (xdist's loadfile follows this order).
LONGEST_FIRST = (
    "test_nonconjugate.py",
    "test_gpssm.py",
    "test_dagp.py",
    "test_approx.py",
    "test_multioutput.py",
    "test_exactness.py",
    "test_gp.py",
    "test_particle_em.py",
    "test_pf.py",
    "test_moments.py",
    "test_pilco.py",
    "test_own_model.py",
    "test_model_options_and_svi.py",
    "test_amogp.py",
    "test_pf_ml.py",
    "test_additive.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order otherwise unchanged
