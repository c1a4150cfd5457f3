import inference
import zoo


def test_registry_lists_models_and_engines():
    assert {"blr", "gp/regression", "gp/regression-latent", "gp/hyperposterior"} <= set(zoo.names())
    assert {"nuts", "hmc", "numpyro-nuts", "svi", "exact"} <= set(inference.engine_names())
