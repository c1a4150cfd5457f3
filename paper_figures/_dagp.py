"""DAGP fits of the figure scripts through ``inference.run``: R restarts (chains of the ``svi`` engine with the
model's guide), an optional entropy warm-up, each restart scored by the many-sample bound (Kaiser 2021, eq. 3.7)."""

from typing import NamedTuple

import numpy as np

import inference
import zoo
from zoo import dagp

SCORE_PARTICLES = 256  # samples of the bound (3.7) that rank restarts, common random numbers for all


class Restart(NamedTuple):
    fit: dagp.DagpFit
    final_elbo: float | None  # the many-sample bound at the final params; None for a single, unscored fit
    elbo: np.ndarray  # (steps,) single-sample ELBO trace of the configured objective


def fit_restarts(config, observed: dict, seed: int, restarts: int, steps: int, lr: float, warmup: int = 0, init=None):
    """``restarts`` DAGP fits of ``config`` on ``observed`` (X, y, Z): Adam (cosine-decayed to 5 % of ``lr``).

    warmup > 0: first that many steps with the q(a_n) entropy added (``assignment_entropy=True``), then ``steps``
    of ``config``'s objective from where each restart ended (a continuation, not in the texts: without the entropy
    the paper's bound makes q(a_n) one-hot within the first steps). init: starting param values for every restart
    (e.g. ``{"assignment_logits": dagp.assignment_logits_from_labels(...)}``). A single restart is not scored.
    """
    common = {
        "engine": "svi",
        "seed": seed,
        "guide": "model",
        "num_chains": restarts,
        "learning_rate": lr,
        "final_lr_fraction": 0.05,
        "num_samples": 1,
    }
    init = dict(init or {})
    if warmup:
        entropy = zoo.get("dagp", **dagp.options_of(config._replace(assignment_entropy=True)))
        warm = inference.run(entropy, observed, num_steps=warmup, init_params=init, **common)
        init = {name: warm.point_estimates[name].values for name in warm.point_estimates.data_vars}
    spec = zoo.get("dagp", **dagp.options_of(config))
    scored = SCORE_PARTICLES if restarts > 1 else 0
    idata = inference.run(spec, observed, num_steps=steps, init_params=init, score_particles=scored, **common)
    finals = idata.point_estimates["final_elbo"].values if scored else [None]
    return [
        Restart(dagp.fit_from(idata, config, chain), None if final is None else float(final), elbo)
        for chain, (final, elbo) in enumerate(zip(finals, idata.optimization["elbo"].values, strict=True))
    ]


def best(restarts: list[Restart]) -> int:
    """Index of the restart with the highest final objective (the only one when unscored)."""
    return max(range(len(restarts)), key=lambda i: restarts[i].final_elbo or 0.0)
