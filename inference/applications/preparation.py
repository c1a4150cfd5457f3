"""``inference.run``: the preparation steps a model declares through its views, then the driver
(``inference.core.api.run``; docs/architecture.md#preparation).

A step fits another model, so it is an application of ``run``, never part of an engine or of the driver: the GP-SSMs'
pseudo-inputs (the ``"pseudo_inputs"`` view, ``ar1.prepare``) and the AR1-GP start of the engines that learn a GP-SSM
(the ``"gp_ssm"`` view's ``initial_params``, given to an engine that takes an ``init`` option, ``ar1.start``). Both
run before the engine, outside its timed call; data and options the model does not need them for pass unchanged.
"""

from collections.abc import Callable, Mapping
from typing import Any

from inference.applications import ar1
from inference.core.api import check_run, data_key, resolve_model
from inference.core.api import run as run_engine
from inference.core.program import observed_args, resolve_params
from zoo.registry import Dataset, ModelSpec


def run(
    model: "str | ModelSpec | Callable[..., Any]",
    data: "Dataset | Mapping[str, Any] | None" = None,
    engine: str = "nuts",
    seed: int = 0,
    **options: Any,
):
    """Run ``engine`` on ``model`` and return ``az.InferenceData`` (arguments as ``inference.core.api.run``), after
    the model's preparation steps. Unknown names, engines that do not fit and bad options fail before any step
    fits anything; simulated data are drawn with the key ``run`` would use."""
    spec, data = resolve_model(model, data)
    chosen, opts = check_run(spec, engine, seed, options)
    if "pseudo_inputs" not in spec.views and "gp_ssm" not in spec.views:
        return run_engine(spec, data, engine, seed, **options)
    data = ar1.prepare(spec, spec.simulate(data_key(seed)) if data is None else data)
    # only an ``init`` of parameter starts (a mapping); the MCMC engines' ``init`` is a string naming where chains start
    if "gp_ssm" in spec.views and "init" in chosen.options and chosen.options["init"].kind == "mapping":
        dataset = spec.validate(data)
        fixed = resolve_params(spec, dataset, opts["params"]) if "params" in opts else {}
        init = ar1.start(spec.views["gp_ssm"], observed_args(dataset), fixed, opts["init"])
        options = {**options, "init": init}
    return run_engine(spec, data, engine, seed, **options)
