"""``gp/structure``: GP regression whose kernel structure is data (``zoo.structure.program``), so that ``ml2`` fits
every structure within one capacity with one compiled program (docs/performance.md#shared-program).

The model is ``gp/regression`` (y ~ N(0, K + sigma_n^2 I), f integrated out) with K the encoded kernel's Gram
matrix; the options fix the capacity (slots per type, terms, factors per term), the data carry the structure
(``factor_index``, ``columns``: ``Encoding.arrays``). Sites: one vector per hyperparameter of each slot type,
``se_lengthscale`` (slots,), ``per_period`` (slots,), ..., with the default priors of ``zoo.kernels.priors``, and
``noise``. Slots the structure does not use do not enter the likelihood (their ML-II gradient is zero).
"""

from functools import partial

import jax.numpy as jnp
import numpyro

from zoo import gp
from zoo.errors import OptionError
from zoo.options import Option
from zoo.registry import Dataset, ModelSpec, frozen, register_family
from zoo.regression import GP_SOURCE, default_priors, simulate_regression
from zoo.structure import program as structure


def structure_regression(X, factor_index, columns, y=None, capacity: structure.Capacity = None):
    """GP regression with the encoded kernel: X (N, D), factor_index (terms, factors), columns (slots,), y (N,)."""
    values = {name: numpyro.sample(name, prior) for name, prior in structure.priors(capacity).items()}
    noise = numpyro.sample("noise", default_priors()["noise"])
    K = structure.gram(X, values, factor_index, jnp.asarray(columns).astype(jnp.int32), capacity)
    numpyro.sample("y", gp.GaussianEvidence(K + noise * jnp.eye(X.shape[0])), obs=y)


def _simulate(capacity: structure.Capacity):
    """The noisy sine of ``gp/regression`` with the capacity's first base slot alone as the structure."""
    kernel = structure.NAMES[next(t for t in structure.BASES if capacity.counts().get(t))]()

    def simulate(key, n: int = 40) -> Dataset:
        data = simulate_regression(key, n=n, d=1)
        arrays = structure.encode(kernel, 1).arrays(capacity)
        return Dataset(observed={**data.observed, **arrays}, truth=data.truth, test={})

    return simulate


@register_family(
    "gp/structure",
    {
        "slots": Option("str", "SE:1", "slots per kernel type, e.g. 'SE:2,Per:1,CP:1' (zoo.structure.program.TYPES)"),
        "terms": Option("int", 1, "terms of the sum of products", minimum=1),
        "factors": Option("int", 1, "factors per term", minimum=1),
    },
    "GP regression with the kernel structure as data: one compiled program for every structure within a capacity",
    GP_SOURCE,
)
def _gp_structure(slots: str, terms: int, factors: int) -> ModelSpec:
    try:
        capacity = structure.Capacity.parse(slots, terms, factors)
    except ValueError as exc:
        raise OptionError(f"gp/structure: {exc}") from None
    if not any(capacity.counts().get(t) for t in structure.BASES):
        raise OptionError(f"gp/structure: slots {slots!r} hold no base kernel.")
    shapes = {
        "X": ("N", "D"),
        "y": ("N",),
        "factor_index": (terms, factors),
        "columns": (sum(capacity.slots),),
    }
    return ModelSpec(
        name="gp/structure",
        summary=f"GP regression, kernel structure as data within capacity {capacity.text()}, {terms} x {factors}",
        source=GP_SOURCE,
        program=partial(structure_regression, capacity=capacity),
        simulate=_simulate(capacity),
        data_shapes=frozen(shapes),
        capabilities=frozenset({"continuous", "collapsed"}),
    )
