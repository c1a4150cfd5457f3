"""Particle engines for state-space models: the particle filter (``pf``: ``pf``, ``pf-ml``), particle Gibbs with
ancestor sampling (``pgas``, with the non-Markov ``pgas_marginal``), particle marginal Metropolis-Hastings
(``pmcmc``) and particle EM (``particle_em``: ``pgas-em``, ``psaem``)."""

from inference.particles import particle_em, pf, pgas, pgas_marginal, pmcmc

__all__ = ["particle_em", "pf", "pgas", "pgas_marginal", "pmcmc"]
