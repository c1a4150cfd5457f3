"""What SMC over structures returns (``smc.py``): weighted particles (structure and hyperparameters), the log
evidence, the posterior over structures, and forecasts that average over the particles
(docs/sources/duvenaud.md#smc)."""

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm

from inference.applications.structure_search.result import Standardisation, _finite, hyperparameters
from inference.files.atomic import atomic_write_text
from zoo import gp
from zoo.kernels.base import Kernel
from zoo.structure.canonical import key

__all__ = ["BestStructure", "SMCResult"]


@dataclasses.dataclass(frozen=True)
class BestStructure:
    """The structure with the most posterior mass, as ``zoo search`` prints it: ``expression`` (canonical text),
    ``score`` (its posterior probability), the heaviest particle of it (standardised units), and depth 0 (the SMC has
    no depths)."""

    expression: str
    score: float
    kernel: Kernel
    noise: float
    depth: int = 0


@dataclasses.dataclass
class SMCResult:
    """Particles i = 1..P: ``trees[i]`` (hyperparameters on the standardised data), ``noises[i]``, normalised
    ``log_weights[i]``. ``log_evidence``: the estimate of log p(y_s) (standardised data, the prior of
    ``tree_prior.py``) from the incremental weights; ``steps``: one record per annealing step."""

    trees: list[Kernel]
    noises: np.ndarray  # (P,)
    log_weights: np.ndarray  # (P,), logsumexp = 0
    log_evidence: float
    steps: list[dict]
    X: np.ndarray
    y: np.ndarray
    standardisation: Standardisation
    options: dict
    wall_s: float
    score: str = "posterior probability"
    interrupted: bool = False

    @property
    def weights(self) -> np.ndarray:
        return np.exp(self.log_weights)

    @property
    def log_evidence_data_units(self) -> float:
        """log p(y) in the data's units: log p(y_s) - n log y_scale (the inputs' scaling leaves it unchanged)."""
        return float(self.log_evidence - len(self.y) * math.log(self.standardisation.y_scale))

    def posterior(self) -> dict[str, float]:
        """p(structure | y): the particles' weights summed by canonical structure, most probable first."""
        mass: dict[str, float] = {}
        for tree, w in zip(self.trees, self.weights, strict=True):
            k = key(tree)
            mass[k] = mass.get(k, 0.0) + float(w)
        return dict(sorted(mass.items(), key=lambda kv: -kv[1]))

    @property
    def best(self) -> BestStructure:
        name, mass = next(iter(self.posterior().items()))
        heaviest = max((i for i, t in enumerate(self.trees) if key(t) == name), key=lambda i: self.log_weights[i])
        return BestStructure(name, mass, self.trees[heaviest], float(self.noises[heaviest]))

    @property
    def kernel(self) -> Kernel:
        """The heaviest particle of the most probable structure, in the data's units (one input column)."""
        return self.standardisation.kernel_in_data_units(self.best.kernel)

    @property
    def noise(self) -> float:
        return self.standardisation.noise_in_data_units(self.best.noise)

    @property
    def mean(self) -> float:
        return float(self.standardisation.y_shift)

    def _particle_predictions(self, X_new: np.ndarray, full_cov: bool):
        """Each particle's GP posterior at X_new (one computation per distinct particle: resampling duplicates share
        one tree object and noise)."""
        Xs = jnp.asarray(self.standardisation.inputs(self.X))
        ys = jnp.asarray(self.standardisation.targets(self.y))
        Xn = jnp.asarray(self.standardisation.inputs(np.asarray(X_new, float).reshape(-1, self.X.shape[1])))
        cache, out = {}, []
        for tree, noise in zip(self.trees, self.noises, strict=True):
            ident = (id(tree), float(noise))
            if ident not in cache:
                cache[ident] = gp.predict(tree, Xs, ys, float(noise), Xn, full_cov=full_cov)
            out.append(cache[ident])
        return out

    def predict(self, X_new) -> tuple[np.ndarray, np.ndarray]:
        """The model-averaged predictive of y at X_new (m, D) in data units: mean (m,) and variance (m,) of the
        mixture sum_i W_i N(m_i, v_i + noise_i)."""
        w = self.weights
        posts = self._particle_predictions(X_new, full_cov=False)
        means = np.stack([np.asarray(p.mean) for p in posts])
        variances = np.stack([np.asarray(p.cov) for p in posts]) + self.noises[:, None]
        mean = w @ means
        variance = w @ (variances + means**2) - mean**2
        s = self.standardisation
        return s.y_shift + s.y_scale * mean, s.y_scale**2 * np.maximum(variance, 0.0)

    def predictive_cdf(self, X_new, y_new) -> np.ndarray:
        """P(Y_j <= y_new[j] | y) (m,) under the model-averaged pointwise predictive, the mixture
        sum_i W_i N(m_ij, v_ij + noise_i): the probability integral transform of each held-out point (the fraction
        with values in [0.025, 0.975] is the fraction inside the central 95 % band)."""
        s = self.standardisation
        r = s.targets(np.asarray(y_new, float))
        posts = self._particle_predictions(X_new, full_cov=False)
        means = np.stack([np.asarray(p.mean) for p in posts])
        sds = np.sqrt(np.maximum(np.stack([np.asarray(p.cov) for p in posts]), 0.0) + self.noises[:, None])
        return self.weights @ np.asarray(norm.cdf((r[None, :] - means) / sds))

    def log_predictive_density(self, X_new, y_new) -> float:
        """log p(y_new | y) of the held-out points jointly, averaged over the particles:
        log sum_i W_i N(y_new | m_i, S_i + noise_i I), in data units."""
        s = self.standardisation
        r = jnp.asarray(s.targets(np.asarray(y_new, float)))
        posts = self._particle_predictions(X_new, full_cov=True)
        logs = []
        for post, noise in zip(posts, self.noises, strict=True):
            cov = post.cov + noise * jnp.eye(r.shape[0])
            logs.append(float(gp.gaussian_log_evidence(r - post.mean, cov)[0]))
        total = float(logsumexp(jnp.asarray(self.log_weights) + jnp.asarray(logs)))
        return total - r.shape[0] * math.log(s.y_scale)

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return _finite(
            {
                "strategy": "smc",
                "best": best.expression,
                "posterior": self.posterior(),
                "log_evidence": self.log_evidence,
                "log_evidence_data_units": self.log_evidence_data_units,
                "hyperparameters_data_units": hyperparameters(self.kernel) if self.X.shape[1] == 1 else None,
                "noise_data_units": self.noise,
                "mean_data_units": self.mean,
                "particles": [
                    {"structure": str(t), "weight": float(w), "noise": float(v), "hyperparameters": hyperparameters(t)}
                    for t, w, v in zip(self.trees, self.weights, self.noises, strict=True)
                ],
                "steps": self.steps,
                "options": self.options,
                "wall_s": self.wall_s,
                "interrupted": self.interrupted,
            }
        )

    def write_json(self, path: "str | Path") -> Path:
        """The result as JSON, written atomically."""
        path = Path(path)
        atomic_write_text(path, json.dumps(self.to_json(), indent=1))
        return path
