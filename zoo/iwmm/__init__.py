"""The infinite warped mixture model (Duvenaud 2014, ch. 7 and App. E): a Dirichlet-process mixture of Gaussians in a
latent space, warped into data space by a GP-LVM; with the identity warp, the iGMM baseline.

``zoo.get("iwmm")`` is the iWMM, ``zoo.get("iwmm", warping="identity")`` the iGMM, ``max_clusters=1`` the fully
Bayesian GP-LVM of Fig 7.6. Sampled by the ``iwmm`` engine (inference/mcmc/iwmm.py) through the model's ``iwmm`` view.
"""

from functools import partial

import jax
import numpy as np

from zoo.iwmm import data, gplvm, metrics, niw, prior
from zoo.iwmm.config import OPTIONS
from zoo.iwmm.program import IwmmView, iwmm_program
from zoo.registry import Dataset, ModelSpec, frozen, register_family

SOURCE = "Duvenaud 2014, ch. 7 (eqs. 7.1-7.6) and App. E (E.1-E.15)"


def simulate_two_curve(key, n: int = 100) -> Dataset:
    """The 2-curve set (n points, half per curve), standardised, with the true labels in ``truth``."""
    seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
    Y, labels = data.two_curve(np.random.default_rng(seed), per_curve=max(n // 2, 1))
    (Y,) = data.standardise(Y)
    return Dataset(observed={"Y": Y}, truth={"labels": labels})


@register_family(
    "iwmm",
    OPTIONS,
    summary="Infinite warped mixture model: DP mixture of Gaussians (NIW, collapsed) warped by a GP-LVM; iGMM baseline",
    source=SOURCE,
)
def _iwmm(**options) -> ModelSpec:
    view = IwmmView(
        warped=options["warping"] == "gp",
        latent_dim=options["latent_dim"],
        max_clusters=options["max_clusters"],
        concentration=float(options["concentration"]),
        prior_r=float(options["prior_r"]),
        prior_nu=None if options["prior_nu"] is None else float(options["prior_nu"]),
    )
    kind = "iWMM" if view.warped else "iGMM (identity warp)"
    return ModelSpec(
        name="iwmm",
        summary=f"{kind}, up to {view.max_clusters} clusters",
        source=SOURCE,
        program=partial(iwmm_program, view=view),
        simulate=simulate_two_curve,
        data_shapes=frozen({"Y": ("N", "D")}),
        capabilities=frozenset({"iwmm"}),
        views=frozen({"iwmm": view}),
        notes="the labels z are discrete: sampled by collapsed Gibbs in the iwmm engine",
    )


__all__ = ["IwmmView", "data", "gplvm", "iwmm_program", "metrics", "niw", "prior", "simulate_two_curve"]
