"""Engines that work with Gaussians in closed form or by moment matching: conjugate posteriors (``exact``), the
Kalman filter and smoother (``kalman``), the GP-SSM moment-matching engines (``moment_matching``: ``direct``,
``ads``, ``analytic-em``) and sampling EP (``sampling_ep``: ``is-ep``, ``is-ep-em``)."""

from inference.gaussian import exact, kalman, moment_matching, sampling_ep

__all__ = ["exact", "kalman", "moment_matching", "sampling_ep"]
