"""One posterior per comparison: every engine of a model in a suite must describe the same posterior.

An engine that conditions on the model's parameters (``params_role="conditions"``: ``exact``, ``kalman``, ...)
reports p(latents | y, theta) at the ``params`` it is given, or at the model's defaults when it is given none; a
sampler (``nuts``, ``svi``, ``tsmc``, ...) reports p(latents, theta | y) unless ``params`` fixes theta. Comparing the
two measures the difference between the posteriors, not the engines' errors (issue 39: ``blr`` in the quick suite
compared ``exact`` at noise = 0.25 with NUTS sampling the noise). So every engine of a model must hold the same
parameters fixed at the same values (docs/architecture.md#one-posterior):

- ``zoo bench`` refuses a suite that breaks this, naming the model, the engines and the parameters (``check``);
  ``tests/test_one_posterior.py`` walks every shipped suite;
- ``zoo compare`` fixes the model's defaults for every engine when one of them conditions on parameters and
  ``--params`` was not given, and says so (``align_params``); it refuses engines that cannot hold them fixed.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from inference.core.fixed import describe, same_values
from zoo.errors import OptionError

# A fixed-parameter set that cannot be known (unknown model or engine: the cell fails at run time with that error).
UNKNOWN = None


def cell_fixed(model: str, model_options: Mapping[str, Any], engine: str, options: Mapping[str, Any]):
    """The parameters a cell's run holds fixed, as ``{name: value}``; UNKNOWN when the model or engine does not exist
    (the cell then fails with that error when it runs)."""
    import inference
    import zoo
    from zoo.errors import ZooError

    try:
        spec = zoo.get(model, **dict(model_options))
        chosen = inference.get_engine(engine)
    except ZooError:
        return UNKNOWN
    if "params" not in chosen.options or chosen.role(options) == "starts":
        return {}
    given = options.get("params")
    if given is None:
        return dict(spec.default_params) if chosen.role(options) == "conditions" else {}
    return dict(given)


def check(cells: Sequence[Any]) -> list[str]:
    """One line per model of ``cells`` (``benchmarks.suites.Cell``) whose engines do not all hold the same parameters
    fixed at the same values as the model's reference engine; empty when every comparison is of one posterior."""
    groups: dict[tuple, list[Any]] = {}
    for cell in cells:
        key = (cell.variant, cell.data_seed, repr(sorted(dict(cell.size).items())), cell.data_file)
        groups.setdefault(key, []).append(cell)
    problems = []
    for group in groups.values():
        fixed = {}
        for cell in group:
            found = cell_fixed(cell.model, cell.model_options, cell.engine, cell.options)
            if found is not UNKNOWN:
                fixed.setdefault(cell.label, found)
        reference = group[0].reference
        if reference not in fixed:
            continue
        expected = fixed[reference]
        for label, found in fixed.items():
            if not same_values(found, expected):
                problems.append(f"{group[0].variant}: {_difference(label, found, reference, expected)}")
    return list(dict.fromkeys(problems))


def _difference(label: str, found: Mapping[str, Any], reference: str, expected: Mapping[str, Any]) -> str:
    sampled = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    if sampled:
        what = f"{label} samples {', '.join(sampled)}, which the reference {reference} fixes at {describe(expected)}"
    elif extra:
        what = f"{label} fixes {describe({k: found[k] for k in extra})}, which the reference {reference} samples"
    else:
        what = f"{label} fixes {describe(found)}, the reference {reference} {describe(expected)}"
    return (
        f"{what}: they describe different posteriors (give the model's engines the same params, e.g. "
        f"options = {{ params = {{ ... }} }} on the [[models]] table)"
    )


def align_params(spec: Any, engines: Sequence[str], per_engine: dict[str, dict[str, Any]]) -> list[str]:
    """For ``zoo compare``: when an engine conditions on parameters and none was given ``params``, give every engine
    the model's defaults (updating ``per_engine`` in place) and return a note saying so; raise OptionError for an
    engine that cannot hold them fixed."""
    import inference

    role = {engine: inference.get_engine(engine).role(per_engine[engine]) for engine in engines}
    conditioning = [e for e in engines if role[e] == "conditions" and per_engine[e].get("params") is None]
    if not conditioning or not spec.default_params or any("params" in per_engine[e] for e in engines):
        return []
    for engine in engines:
        if "params" not in inference.get_engine(engine).options or role[engine] == "starts":
            raise OptionError(
                f"{conditioning[0]} conditions on {spec.name}'s parameters ({', '.join(sorted(spec.default_params))}) "
                f"and {engine} cannot hold them fixed (it samples or learns them): the two describe different "
                "posteriors; compare them without one of the two."
            )
    for engine in engines:
        per_engine[engine]["params"] = {k: _plain(v) for k, v in spec.default_params.items()}
    return [
        f"parameters fixed for every engine at {spec.name}'s defaults: {describe(spec.default_params)} "
        f"({', '.join(conditioning)} conditions on them; pass --params NAME=VALUE to choose other values)"
    ]


def _plain(value: Any) -> Any:
    """A parameter value as plain JSON data (nested lists), as a suite file holds it."""
    import numpy as np

    array = np.asarray(value, dtype=float)
    return float(array) if array.ndim == 0 else array.tolist()
