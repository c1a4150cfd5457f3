"""Markov chain Monte Carlo engines: NUTS and HMC on BlackJAX (``nuts``), NumPyro's NUTS (``numpyro_nuts``),
tempered SMC (``smc``: ``tsmc``), elliptical slice sampling of a latent GP (``ess``), the infinite warped mixture's
collapsed Gibbs sampler (``iwmm``), and the gym's BlackJAX samplers (docs/gym.md): ``mclmc``, ``mams``, ``chees``,
``mala`` and ``pathfinder``."""

from inference.mcmc import chees, ess, iwmm, mala, mams, mclmc, numpyro_nuts, nuts, pathfinder, smc

__all__ = ["chees", "ess", "iwmm", "mala", "mams", "mclmc", "numpyro_nuts", "nuts", "pathfinder", "smc"]
