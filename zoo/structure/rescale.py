"""A fitted kernel moved between standardised and data units, exactly: the same covariance in other coordinates.

A search or a fit works on x_std = (x - shift) / scale and y_std = (y - offset) / y_scale (unit-sized inputs keep the
default hyperparameters and priors sensible); descriptions and reports speak in data units ("a period of 1.0 years").
``rescale_inputs(k, shift, scale)`` returns k' with k'(x, x') = k((x - shift) / scale, (x' - shift) / scale), and
``scale_output(k, c)`` returns k'' = c k, each by changing hyperparameters only (no new nodes), so the structure and
its description are unchanged. One input column (the time axis of ch. 3-4); ``tests/test_describe.py`` checks both
against the Gram matrices they must equal.
"""

import dataclasses
from typing import Any

import jax.numpy as jnp

from zoo.kernels import (
    ActiveDims,
    Changepoint,
    ChangeWindow,
    Constant,
    Cosine,
    Kernel,
    KernelError,
    Linear,
    Periodic,
    Product,
    Stationary,
    Sum,
    White,
    ZeroMeanPeriodic,
)

Array = Any


def rescale_inputs(kernel: Kernel, shift: float, scale: float) -> Kernel:
    """k' with k'(x, x') = k((x - shift) / scale, (x' - shift) / scale) for one input column; scale > 0.

    Lengthscales, periods, changepoint widths and window durations are multiplied by ``scale``; locations (Lin's c,
    CP's location, CW's start) map to shift + scale * location; Lin's slope variance is divided by scale^2.
    """
    if not scale > 0:
        raise KernelError(f"the input scale must be positive, got {scale}.")
    if isinstance(kernel, Sum | Product):
        return type(kernel)(rescale_inputs(kernel.left, shift, scale), rescale_inputs(kernel.right, shift, scale))
    if isinstance(kernel, ActiveDims):
        return ActiveDims(rescale_inputs(kernel.kernel, shift, scale), kernel.dims)
    if isinstance(kernel, Changepoint):
        return dataclasses.replace(
            kernel,
            first=rescale_inputs(kernel.first, shift, scale),
            second=rescale_inputs(kernel.second, shift, scale),
            location=shift + scale * kernel.location,
            width=scale * kernel.width,
        )
    if isinstance(kernel, ChangeWindow):
        return dataclasses.replace(
            kernel,
            inside=rescale_inputs(kernel.inside, shift, scale),
            outside=rescale_inputs(kernel.outside, shift, scale),
            start=shift + scale * kernel.start,
            duration=scale * kernel.duration,
            width=scale * kernel.width,
        )
    if isinstance(kernel, Linear):
        return dataclasses.replace(
            kernel, variance=kernel.variance / scale**2, location=shift + scale * kernel.location
        )
    if isinstance(kernel, Stationary):
        return dataclasses.replace(kernel, lengthscale=scale * jnp.asarray(kernel.lengthscale))
    if isinstance(kernel, Periodic | ZeroMeanPeriodic | Cosine):
        # Per's and ZPer's lengthscale multiplies sin(pi r / p): dimensionless, unchanged.
        return dataclasses.replace(kernel, period=scale * kernel.period)
    if isinstance(kernel, Constant | White):
        return kernel
    raise KernelError(f"cannot rescale the inputs of {type(kernel).__name__} ({kernel}).")


def scale_output(kernel: Kernel, factor: float) -> Kernel:
    """The kernel times ``factor`` > 0 (e.g. y_scale^2), by scaling one variance per product."""
    if not factor > 0:
        raise KernelError(f"the output factor must be positive, got {factor}.")
    if isinstance(kernel, Sum):
        return Sum(scale_output(kernel.left, factor), scale_output(kernel.right, factor))
    if isinstance(kernel, Product):
        return Product(scale_output(kernel.left, factor), kernel.right)
    if isinstance(kernel, ActiveDims):
        return ActiveDims(scale_output(kernel.kernel, factor), kernel.dims)
    if isinstance(kernel, Changepoint):
        return dataclasses.replace(
            kernel, first=scale_output(kernel.first, factor), second=scale_output(kernel.second, factor)
        )
    if isinstance(kernel, ChangeWindow):
        return dataclasses.replace(
            kernel, inside=scale_output(kernel.inside, factor), outside=scale_output(kernel.outside, factor)
        )
    if isinstance(kernel, Linear):
        return dataclasses.replace(kernel, variance=kernel.variance * factor, offset=kernel.offset * factor**0.5)
    if "variance" in kernel.PARAMS:
        return dataclasses.replace(kernel, variance=kernel.variance * factor)
    raise KernelError(f"cannot scale the output of {type(kernel).__name__} ({kernel}).")
