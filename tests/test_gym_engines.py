"""docs/gym.md#engines: the gradient evaluations each gym engine reports are those its compiled program makes.

The model counts every gradient of its log density (``tests/gradient_counting.py``); the engines' own counts come
from the algorithm (integration steps, tuning schedules). Chains run one after another (``lax.map``), as
by default, so a ``lax.cond`` or ``while_loop`` evaluates only what the algorithm asks for.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gradient_counting import COUNTER, count_after_starts, counted_blr

import inference


def data():
    X = jax.random.normal(jax.random.key(0), (30, 3))
    y = X @ jnp.array([0.5, -1.0, 0.3]) + 0.5 * jax.random.normal(jax.random.key(1), (30,))
    return {"X": X, "y": y}


SMALL = {
    "mala": {"num_chains": 2, "num_warmup": 50, "num_samples": 60},
    "mclmc": {"num_chains": 2, "num_samples": 50},  # stage 2 of 5 steps: 5 % 3 == 2, where BlackJAX's count is off
    "mams": {"num_chains": 2, "num_samples": 60},
    "chees": {"num_chains": 4, "num_warmup": 40, "num_samples": 30},
    "pathfinder": {"num_paths": 3, "num_samples": 50, "draws_per_path": 40},
}
SLOW = {"mclmc", "mams", "chees", "pathfinder"}  # 10-15 s of compilation each


@pytest.mark.parametrize(
    "engine", [pytest.param(e, marks=pytest.mark.slow) if e in SLOW else e for e in SMALL], ids=list(SMALL)
)
def test_reported_gradient_evaluations_are_those_the_program_makes(monkeypatch, engine):
    count_after_starts(monkeypatch)
    idata = inference.run(counted_blr, data(), engine=engine, seed=5, **SMALL[engine])
    jax.effects_barrier()
    reported = idata.posterior.attrs["num_grad_evals"]
    assert reported == COUNTER.count, (engine, reported, COUNTER.count)
    # The per-draw counts end at each chain's share of the total.
    per_chain_last = np.asarray(idata.sample_stats["grad_evals"].values)[:, -1]
    assert per_chain_last.sum() == reported or engine == "pathfinder"
