"""Markov chain Monte Carlo engines: NUTS and HMC on BlackJAX (``nuts``), NumPyro's NUTS (``numpyro_nuts``),
tempered SMC (``smc``: ``tsmc``), elliptical slice sampling of a latent GP (``ess``) and the infinite warped
mixture's collapsed Gibbs sampler (``iwmm``)."""

from inference.mcmc import ess, iwmm, numpyro_nuts, nuts, smc

__all__ = ["ess", "iwmm", "numpyro_nuts", "nuts", "smc"]
