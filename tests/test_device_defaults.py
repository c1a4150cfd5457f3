"""docs/performance.md#device-defaults: chain_method="auto" resolves from the JAX backend before the engine runs."""

import inference
from inference.core.options import resolve_chain_method


def test_auto_is_sequential_on_a_cpu_and_vectorized_on_an_accelerator():
    assert resolve_chain_method("auto", "cpu") == "sequential"
    assert resolve_chain_method("auto", "gpu") == "vectorized" == resolve_chain_method("auto", "tpu")
    assert resolve_chain_method("vectorized", "cpu") == "vectorized"  # an explicit choice is kept
    for engine in ("nuts", "hmc", "mclmc", "mams", "mala"):
        assert inference.get_engine(engine).options["chain_method"].default == "auto", engine
