"""A kernel's hyperparameters as NumPyro sample sites, their default values, and the parameter count for BIC.

Site names: a kernel with one parametrised node (a plain SE) names its sites by hyperparameter (``lengthscale``,
``variance``), as ``gp/regression`` always has; otherwise each parametrised node, numbered in reading order, prefixes
its symbol and number: ``SE + SE`` has ``se0_lengthscale`` and ``se1_lengthscale``, ``CP(SE, Lin)`` has
``cp0_location``, ``se1_variance``, ``lin2_offset``.

Default priors (``default_priors``; docs/sources/duvenaud.md#kernel-priors): LogNormal(0, 1) on every positive
hyperparameter (variances, lengthscales, periods, RQ's alpha, Lin's offset, CP/CW widths, CW's duration), as
``gp/regression`` has always had on its lengthscales and signal variance (docs/sources/franzese.md#gp-priors);
Normal(0, 1) on locations (Lin's c, CP's location, CW's start), for inputs on a unit scale. Lengthscales and the
arc-cosine kernels' weight variances are ARD, one per input column the kernel sees; every other hyperparameter is a
scalar (``Kernel.param_shape``).
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo.kernels.base import ActiveDims, Kernel, KernelError, Product

Array = Any

LOCATIONS = frozenset({"location", "start"})
ARD = frozenset({"lengthscale"})
NON_NEGATIVE = frozenset({"offset"})  # Lin's sigma_0 enters squared: 0 is a valid fixed value


def default_priors() -> dict[str, dist.Distribution]:
    """Priors by hyperparameter name. A function, not a constant: NumPyro distributions cache derived values on first
    use, and a shared instance first used under a jit trace would leak tracers."""
    positive = ("variance", "lengthscale", "period", "alpha", "offset", "width", "duration")
    positive += ("weight_variance", "bias_variance")  # the arc-cosine kernels'
    priors = {name: dist.LogNormal(0.0, 1.0) for name in positive}
    priors.update({name: dist.Normal(0.0, 1.0) for name in LOCATIONS})
    return priors


def parametrised_nodes(kernel: Kernel) -> list[Kernel]:
    """The nodes with hyperparameters, in reading order (a node before its children, children left to right)."""
    own = [kernel] if kernel.PARAMS else []
    return own + [node for child in kernel.CHILDREN for node in parametrised_nodes(getattr(kernel, child))]


def _prefixes(kernel: Kernel) -> list[str]:
    nodes = parametrised_nodes(kernel)
    if len(nodes) == 1:
        return [""]
    return [f"{node.SYMBOL.lower()}{i}_" for i, node in enumerate(nodes)]


def site_names(kernel: Kernel, prefix: str = "") -> list[str]:
    """The sample-site names ``sample_sites`` creates, in order."""
    nodes = parametrised_nodes(kernel)
    return [prefix + p + name for node, p in zip(nodes, _prefixes(kernel), strict=True) for name in node.PARAMS]


def _rebuild(kernel: Kernel, D: int, leaf_value, counter: list[int]) -> Kernel:
    """``kernel`` with each hyperparameter replaced by ``leaf_value(node_index, node, name, D_seen)``."""
    updates = {}
    if kernel.PARAMS:
        index = counter[0]
        counter[0] += 1
        updates = {name: leaf_value(index, kernel, name, D) for name in kernel.PARAMS}
    D_child = kernel.input_dims(D)
    for child in kernel.CHILDREN:
        updates[child] = _rebuild(getattr(kernel, child), D_child, leaf_value, counter)
    return kernel.__class__(**{**_fields(kernel), **updates})


def _fields(kernel: Kernel) -> dict[str, Any]:
    return {f.name: getattr(kernel, f.name) for f in dataclasses.fields(kernel)}


def sample_sites(
    kernel: Kernel, D: int, priors: Mapping[str, dist.Distribution] | None = None, prefix: str = ""
) -> Kernel:
    """``kernel`` with every hyperparameter drawn from a NumPyro sample site (inside a NumPyro program).

    D: input columns of the data (a lengthscale under ``on(dims)`` has len(dims) entries). ``priors`` maps a site's
    full name or its hyperparameter name to a distribution (full name first), falling back to ``default_priors``.
    """
    given = dict(priors or {})
    defaults = default_priors()
    prefixes = _prefixes(kernel)

    def draw(index, node, name, D_seen):
        site = prefix + prefixes[index] + name
        prior = given.get(site, given.get(name, defaults[name]))
        shape = node.param_shape(name, D_seen)
        if shape:
            return numpyro.sample(site, prior.expand(list(shape)).to_event(len(shape)))
        return numpyro.sample(site, prior)

    return _rebuild(kernel, D, draw, [0])


def default_values(kernel: Kernel, prefix: str = "") -> dict[str, float]:
    """Constrained starting values by site name: the kernel's own hyperparameters where they are in the support of
    the default priors, else 1 (e.g. Lin's default offset 0 becomes 1, a LogNormal site)."""
    values = {}
    for node, p in zip(parametrised_nodes(kernel), _prefixes(kernel), strict=True):
        for name in node.PARAMS:
            value = np.asarray(getattr(node, name), dtype=float)
            if name not in LOCATIONS and not np.all(value > 0):
                value = np.ones_like(value)
            values[prefix + p + name] = float(value) if value.ndim == 0 else value
    return values


def with_values(kernel: Kernel, values: Mapping[str, Array], D: int, prefix: str = "") -> Kernel:
    """``kernel`` with hyperparameters read from ``values`` by site name (e.g. an ``ml2`` result's point estimates);
    missing names keep the kernel's own values."""
    prefixes = _prefixes(kernel)

    def read(index, node, name, D_seen):
        return values.get(prefix + prefixes[index] + name, getattr(node, name))

    return _rebuild(kernel, D, read, [0])


def check_hyperparameters(kernel: Kernel) -> Kernel:
    """``kernel`` if every concrete hyperparameter is finite and > 0 (locations: finite; Lin's offset: >= 0), else a
    ``KernelError`` naming it. For kernels built by hand with fixed values; sampled values are positive by their
    priors' support."""
    for node, p in zip(parametrised_nodes(kernel), _prefixes(kernel), strict=True):
        for name in node.PARAMS:
            try:
                value = np.asarray(getattr(node, name), dtype=float)
            except Exception:  # a tracer: checked by the prior's support instead
                continue
            if name in LOCATIONS:
                bad, need = ~np.isfinite(value), "finite"
            elif name in NON_NEGATIVE:
                bad, need = ~(np.isfinite(value) & (value >= 0)), "non-negative and finite"
            else:
                bad, need = ~(np.isfinite(value) & (value > 0)), "positive and finite"
            if np.any(bad):
                raise KernelError(
                    f"hyperparameter {p}{name} of {node.SYMBOL} in {kernel} must be {need}, got {value.tolist()}."
                )
    return kernel


def _factors(kernel: Kernel) -> list[Kernel]:
    if isinstance(kernel, Product):
        return _factors(kernel.left) + _factors(kernel.right)
    return [kernel]


def has_scale(kernel: Kernel) -> bool:
    """Whether multiplying the kernel by c > 0 can be absorbed into its own hyperparameters (an output variance)."""
    if isinstance(kernel, Product):
        return any(has_scale(f) for f in _factors(kernel))
    if isinstance(kernel, ActiveDims):
        return has_scale(kernel.kernel)
    if kernel.CHILDREN:  # sums, CP, CW: every branch must rescale
        return all(has_scale(getattr(kernel, c)) for c in kernel.CHILDREN)
    return "variance" in kernel.PARAMS


def num_params(kernel: Kernel, D: int = 1) -> int:
    """|M| of Duvenaud's BIC (eq. 3.3, sec. 3.4) for the kernel on D input columns: every hyperparameter counted
    (an ARD lengthscale once per column it sees, CP/CW locations and widths in full), minus the redundant output
    scales: a product of k factors that each carry a scale has k - 1 of them (docs/sources/duvenaud.md#bic-count).
    The noise variance of a regression model is not part of the kernel; add 1 for it."""
    D_seen = kernel.input_dims(D)
    own = sum(int(np.prod(kernel.param_shape(name, D_seen))) for name in kernel.PARAMS)
    if isinstance(kernel, Product):
        factors = _factors(kernel)
        total = sum(num_params(f, D) for f in factors)
        return total - max(0, sum(has_scale(f) for f in factors) - 1)
    return own + sum(num_params(getattr(kernel, c), D_seen) for c in kernel.CHILDREN)


def validate_inputs(kernel: Kernel, D: int) -> Kernel:
    """``kernel`` if it can act on inputs with D columns, else a ``KernelError`` (checked before any tracing)."""
    if isinstance(kernel, ActiveDims) and max(kernel.dims) >= D:
        raise KernelError(
            f"kernel {kernel} acts on input dimension {max(kernel.dims)}, but the data have {D} "
            f"(dimensions are counted from 0)."
        )
    one_d = {"ZPer", "Cos", "CP", "CW"}
    if kernel.SYMBOL in one_d and D != 1:
        raise KernelError(
            f"{kernel.SYMBOL} is one-dimensional but sees {D} input columns; restrict it, e.g. {kernel.SYMBOL}_0."
        )
    for child in kernel.CHILDREN:
        validate_inputs(getattr(kernel, child), kernel.input_dims(D))
    return kernel
