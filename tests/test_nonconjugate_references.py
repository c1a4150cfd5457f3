"""Certified references of the non-conjugate variants that have model options (docs/gym.md#references): each stored
one agrees with a short fresh NUTS run within 4 combined MCSE on every component's mean and second moment
(``agree_within_mcse`` of ``tests/test_references.py``, which states why 4)."""

import jax
import pytest
from test_references import STORED, agree_within_mcse

import inference
import zoo

# (model, model options, the run's own options): the fresh run is NUTS as the reference's, shorter.
CASES = [
    ("gp/classification", {"link": "logit"}),
    ("gp/cox2d", {"grid": 6}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "options"), CASES, ids=[f"{m}-{o}" for m, o in CASES])
def test_a_certified_reference_with_options_agrees_with_a_short_fresh_nuts_run(model, options):
    """(slow: a NUTS compilation and 4 x 1500 iterations per model, 20-60 s on one loaded core.)"""
    matches = [r for r in STORED if r.model == model and r.kind == "certified" and r.model_options == options]
    assert matches, f"no certified reference of {model} {options} stored"
    ref = matches[0]
    spec = zoo.get(model, **options)
    data = spec.simulate(jax.random.key(ref.data_seed), **ref.size)
    idata = inference.run(
        spec, data, "nuts", seed=11, num_chains=4, num_warmup=500, num_samples=1000, params=ref.params
    )
    agree_within_mcse(ref, idata)
