"""Greedy structure search over the kernel grammar (Duvenaud 2014, sec. 3.3; docs/sources/duvenaud.md#search).

``search(X, y, depth=..., score="bic")`` returns a ``SearchResult`` (``result.py``): the best model over all depths
and the trace of every candidate. Modules: ``scales`` (data-scaled starting values), ``fit`` (one candidate by
ML-II through ``inference.run``), ``scores`` (BIC, Laplace, tempered-SMC evidence, the posterior over structures),
``search`` (the beam search), ``checkpoint`` (a search kept on disk and resumed); SMC over structures (Saad et al.
2023): ``tree_prior`` (the PCFG prior), ``structure_moves`` (Metropolis-Hastings moves), ``smc_program`` (every
particle's target in one compiled program), ``smc`` (the sampler), ``smc_result``.
"""

from inference.applications.structure_search import extrapolation
from inference.applications.structure_search.result import Fitted, SearchResult, Standardisation
from inference.applications.structure_search.scores import SCORES, structure_posterior
from inference.applications.structure_search.search import SearchError, search
from inference.applications.structure_search.smc import smc_search
from inference.applications.structure_search.smc_result import SMCResult

__all__ = [
    "SCORES",
    "Fitted",
    "extrapolation",
    "SearchError",
    "SMCResult",
    "SearchResult",
    "Standardisation",
    "search",
    "smc_search",
    "structure_posterior",
]
