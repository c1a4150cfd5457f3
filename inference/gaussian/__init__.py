"""Engines that work with Gaussians in closed form or by moment matching: conjugate posteriors (``exact``), the
Kalman filter and smoother (``kalman``), the GP-SSM moment-matching engines (``moment_matching``: ``direct``,
``ads``, ``analytic-em``), sampling EP (``sampling_ep``: ``is-ep``, ``is-ep-em``; ``mcmc_ep``: ``mcmc-ep``), and the
Gaussian approximations of a latent GP under a non-Gaussian likelihood (``laplace``, ``ep``; their shared algebra in
``latent_gaussian``)."""

from inference.gaussian import ep, exact, kalman, laplace, latent_gaussian, mcmc_ep, moment_matching, sampling_ep

__all__ = ["ep", "exact", "kalman", "laplace", "latent_gaussian", "mcmc_ep", "moment_matching", "sampling_ep"]
