"""Markov chain Monte Carlo engines: NUTS and HMC on BlackJAX (``nuts``), NumPyro's NUTS (``numpyro_nuts``),
tempered SMC (``smc``: ``tsmc``) and the infinite warped mixture's collapsed Gibbs sampler (``iwmm``)."""

from inference.mcmc import iwmm, numpyro_nuts, nuts, smc

__all__ = ["iwmm", "numpyro_nuts", "nuts", "smc"]
