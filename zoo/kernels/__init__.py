"""Covariance functions as values, and their algebra (Duvenaud 2014, ch. 2-3, App. B; Franzese 2024, ch. 5;
Kaiser 2021, sec. 2.4). See docs/sources/duvenaud.md#base-kernels and docs/sources/franzese.md#kernels.

- ``base``: the ``Kernel`` class, pytree registration, ``+``, ``*``, scalars, ``on(dims)``; Sum, Product, ActiveDims.
- ``stationary``: SE, RQ, Per, ZPer, Cos, C, WN, Matern 1/2, 3/2, 5/2.
- ``nonstationary``: Lin, the changepoint CP and the change window CW.
- ``grammar``: ``parse("SE x Per + RQ")`` and the printed notation.
- ``priors``: NumPyro sample sites with default priors, default values, BIC parameter counts.
- ``additive``: the additive kernel of all interaction orders (Duvenaud ch. 6) and its dropout reading.
- ``symmetric``: kernels invariant to a finite group of input transformations (Duvenaud sec. 2.7).
- ``manifold``: kernels of transformed inputs k(g(x), g(x')): cylinder, torus, Moebius strip (Duvenaud sec. 2.8).
- ``arccos``: the arc-cosine kernels of orders 0, 1, 2 (Cho & Saul 2009; Kaiser Fig. 2.6), AC0, AC1, AC2.
"""

from zoo.kernels.additive import Additive
from zoo.kernels.arccos import ArcCosine0, ArcCosine1, ArcCosine2, arc_cosine
from zoo.kernels.base import (
    ActiveDims,
    Constant,
    Kernel,
    KernelError,
    Product,
    Sum,
    as_inputs,
    is_scalar,
    safe_sqrt,
    scaled_sqdist,
)
from zoo.kernels.grammar import NAMES, parse
from zoo.kernels.manifold import Circular, Embedded, MoebiusMap, cylinder, moebius, torus
from zoo.kernels.nonstationary import Changepoint, ChangeWindow, Linear
from zoo.kernels.priors import (
    check_hyperparameters,
    default_priors,
    default_values,
    num_params,
    sample_sites,
    site_names,
    validate_inputs,
    with_values,
)
from zoo.kernels.stationary import (
    RBF,
    Cosine,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    RationalQuadratic,
    SquaredExponential,
    Stationary,
    White,
    ZeroMeanPeriodic,
)
from zoo.kernels.symmetric import (
    Group,
    SignedPermutation,
    Symmetrised,
    generate,
    project,
    reflection_group,
    shift_group,
    swap_group,
)

# The grammar's names (Duvenaud App. B) as aliases.
SE, RQ, Lin, Per, ZPer, Cos, Const, WN = (
    SquaredExponential,
    RationalQuadratic,
    Linear,
    Periodic,
    ZeroMeanPeriodic,
    Cosine,
    Constant,
    White,
)
CP, CW = Changepoint, ChangeWindow
M12, M32, M52 = Matern12, Matern32, Matern52

AC0, AC1, AC2 = ArcCosine0, ArcCosine1, ArcCosine2

__all__ = [
    "AC0",
    "AC1",
    "AC2",
    "ArcCosine0",
    "ArcCosine1",
    "ArcCosine2",
    "arc_cosine",
    "ActiveDims",
    "Additive",
    "as_inputs",
    "Changepoint",
    "ChangeWindow",
    "check_hyperparameters",
    "Circular",
    "Const",
    "Constant",
    "Cos",
    "Cosine",
    "CP",
    "CW",
    "cylinder",
    "default_priors",
    "default_values",
    "Embedded",
    "generate",
    "Group",
    "is_scalar",
    "Kernel",
    "KernelError",
    "Lin",
    "Linear",
    "M12",
    "M32",
    "M52",
    "Matern12",
    "Matern32",
    "Matern52",
    "moebius",
    "MoebiusMap",
    "NAMES",
    "num_params",
    "parse",
    "Per",
    "Periodic",
    "Product",
    "project",
    "RationalQuadratic",
    "RBF",
    "reflection_group",
    "RQ",
    "safe_sqrt",
    "sample_sites",
    "scaled_sqdist",
    "SE",
    "shift_group",
    "SignedPermutation",
    "site_names",
    "SquaredExponential",
    "Stationary",
    "Sum",
    "swap_group",
    "Symmetrised",
    "torus",
    "validate_inputs",
    "White",
    "with_values",
    "WN",
    "ZeroMeanPeriodic",
    "ZPer",
]
