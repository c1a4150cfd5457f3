"""The inference gym's metric: gradient evaluations until the bias of the second moments stays small
(docs/gym.md#metric). Runs are ArviZ InferenceData (``"InferenceData"`` below).

For a run's draws x^(1..n) of every scalar quantity i (each element of each latent site), against a reference that
knows E[x_i^2] and Var[x_i^2]:

    b^2(n) = max_i (E_n[x_i^2] - E[x_i^2])^2 / Var[x_i^2],   E_n[x_i^2] = (1/n) sum_{k<=n} (x_i^(k))^2

(Robnik, De Luca, Silverstein & Seljak 2023, sec. 4; Robnik et al. 2025; TensorFlow's inference-gym). For n iid
exact draws each term has expectation exactly 1/n, so b^2 = 0.01 is the error of about 100 independent draws.
Per chain, n counts that chain's draws; pooled, the chains' running averages are averaged at the same n (what a
lockstep run of C chains knows after n steps), against the gradients all chains spent by then.
``gradients_to_threshold``: the gradient count from which b^2 stays below the threshold to the end of the run.

Gradients per draw come from the engine's ``grad_evals`` sample statistic (its chain's gradients up to and including
that draw, warm-up included; the gym's engines record it); for NUTS and HMC from their ``n_steps`` (leapfrog steps,
one gradient each) after the warm-up's gradients split evenly over the chains; for any other engine the run's total
``num_grad_evals`` is spread evenly over the draws (warm-up amortised). The result says which (``grads_source``).

References: exact where the model has a conjugate view (``exact_reference``), else a ``Reference`` the caller
holds; a model with neither is refused (``NoReferenceError``) before anything is computed.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from inference.results import diagnostics
from zoo.errors import ZooError

if TYPE_CHECKING:
    from arviz import InferenceData


__all__ = [
    "NoReferenceError",
    "Reference",
    "exact_moments",
    "exact_reference",
    "gradient_counts",
    "gradients_to_threshold",
    "gym_metrics",
    "second_moment_bias",
]


class NoReferenceError(ZooError):
    """b^2 was asked of a model for which no reference (true second moments) is known."""


@dataclass(frozen=True)
class Reference:
    """True E[x^2] and Var[x^2] of every latent site's elements, keyed by site name (arrays of the site's shape)."""

    second_moment: Mapping[str, np.ndarray]
    var_second_moment: Mapping[str, np.ndarray]

    @classmethod
    def gaussian(cls, mean: Mapping[str, np.ndarray], sd: Mapping[str, np.ndarray]) -> "Reference":
        """For x ~ N(m, s^2): E[x^2] = m^2 + s^2 and Var[x^2] = 2 s^4 + 4 m^2 s^2."""
        second = {k: np.asarray(mean[k]) ** 2 + np.asarray(sd[k]) ** 2 for k in mean}
        var = {k: 2 * np.asarray(sd[k]) ** 4 + 4 * np.asarray(mean[k]) ** 2 * np.asarray(sd[k]) ** 2 for k in mean}
        return cls(second, var)


def exact_moments(spec, dataset, params) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """({site: mean}, {site: sd}) of the exact posterior of a model with a conjugate view at ``params`` (e.g.
    ``blr``, ``gp/regression-latent``); NoReferenceError for any other model."""
    if "conjugate" not in spec.capabilities:
        raise NoReferenceError(
            f"model {spec.name!r} has no reference for b^2: it needs the true E[x^2] and Var[x^2] of every latent "
            "quantity, which only models with a conjugate view have exactly here; pass a Reference built from a "
            "certified run instead"
        )
    import jax
    import jax.numpy as jnp

    from inference.core.program import resolve_params

    dataset = spec.validate(dataset)
    post = spec.views["conjugate"](resolve_params(spec, dataset, params), **dataset.observed)
    # Sites are linear (affine) in the latent vector v: push the mean and the covariance's columns through.
    zero = post.to_sites(jnp.zeros_like(post.mean))
    means, cols = post.to_sites(post.mean), jax.vmap(post.to_sites)(jnp.linalg.cholesky(post.cov).T)
    sds = {k: np.sqrt(np.asarray(jnp.sum((cols[k] - zero[k]) ** 2, axis=0))) for k in means}
    return {k: np.asarray(v) for k, v in means.items()}, sds


def exact_reference(spec, dataset, params) -> Reference:
    """The b^2 reference of a model with a conjugate view at ``params``; NoReferenceError for any other model."""
    return Reference.gaussian(*exact_moments(spec, dataset, params))


def _stacked(idata: "InferenceData", reference: Reference) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draws of the reference's sites as (C, S, I), with E[x^2] and Var[x^2] as (I,)."""
    missing = [k for k in reference.second_moment if k not in idata.posterior]
    if missing:
        raise NoReferenceError(f"the run has no draws of the reference's sites {missing}")
    post = idata.posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    x = np.concatenate([post[k].values.reshape(chains, draws, -1) for k in reference.second_moment], axis=-1)
    second = np.concatenate([np.ravel(reference.second_moment[k]) for k in reference.second_moment])
    var = np.concatenate([np.ravel(reference.var_second_moment[k]) for k in reference.second_moment])
    return x, second, var


def second_moment_bias(draws: np.ndarray, second_moment: np.ndarray, var_second_moment: np.ndarray) -> dict:
    """b^2 after every draw. draws (C, S, I); second_moment, var_second_moment (I,).

    Returns ``per_chain`` (C, S): each chain's own running average; ``pooled`` (S,): the chains' running averages
    averaged at each n."""
    draws = np.asarray(draws, dtype=float)
    n = np.arange(1, draws.shape[1] + 1)[None, :, None]
    running = np.cumsum(draws**2, axis=1) / n  # (C, S, I)

    def b2(estimate):
        return np.max((estimate - second_moment) ** 2 / var_second_moment, axis=-1)

    return {"per_chain": b2(running), "pooled": b2(running.mean(axis=0))}


def gradients_to_threshold(b2: np.ndarray, grads: np.ndarray, threshold: float = 0.01) -> float:
    """The gradient count at the first draw from which b^2 stays below ``threshold`` to the end of the run;
    ``inf`` if it is not below at the last draw (the run was too short to tell)."""
    b2, grads = np.asarray(b2), np.asarray(grads)
    above = np.flatnonzero(b2 >= threshold)
    if above.size == 0:
        return float(grads[0])
    if above[-1] == b2.size - 1:
        return float("inf")
    return float(grads[above[-1] + 1])


def gradient_counts(idata: "InferenceData") -> tuple[np.ndarray, str]:
    """Each chain's gradients up to and including each draw (C, S), and where they came from."""
    post = idata.posterior
    if "sample_stats" in idata.groups() and "grad_evals" in idata.sample_stats:
        return np.asarray(idata.sample_stats["grad_evals"].values, dtype=float), "engine"
    total = float(post.attrs.get("num_grad_evals", -1))
    if total <= 0:
        raise ValueError(f"engine {post.attrs.get('engine', '?')} recorded no gradient evaluations")
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    if "sample_stats" in idata.groups() and "n_steps" in idata.sample_stats:
        # HMC/NUTS: one gradient per leapfrog step of each draw; the warm-up's gradients (the rest of the run's
        # total) come first, split evenly over the chains, so the count is not flattered by amortising them.
        steps = np.asarray(idata.sample_stats["n_steps"].values, dtype=float)
        warmup = max(total - steps.sum(), 0.0) / chains
        return warmup + np.cumsum(steps, axis=1), "n_steps"
    per_draw = total / (chains * draws)
    return np.broadcast_to(per_draw * np.arange(1, draws + 1), (chains, draws)).astype(float), "amortised"


def gym_metrics(idata: "InferenceData", reference: Reference | None, threshold: float = 0.01) -> dict:
    """The gym's numbers for one run: gradients until b^2 stays below ``threshold`` (pooled over chains, and the
    median over chains of each chain's own), the b^2 traces against gradients, and ESS per gradient (ArviZ's bulk
    ESS, the smallest over quantities, over all gradients of the run)."""
    if reference is None:
        raise NoReferenceError(
            f"no reference for model {idata.posterior.attrs.get('model', '?')!r}: b^2 needs the true second moments "
            "(exact_reference for conjugate models, or a Reference from a certified run)"
        )
    draws, second, var = _stacked(idata, reference)
    b2 = second_moment_bias(draws, second, var)
    grads, source = gradient_counts(idata)
    pooled_grads = grads.sum(axis=0)  # all chains' gradients by each step of the lockstep run
    per_chain = [gradients_to_threshold(b2["per_chain"][c], grads[c], threshold) for c in range(grads.shape[0])]
    total = float(idata.posterior.attrs.get("num_grad_evals", pooled_grads[-1]))
    # ArviZ through diagnostics, which holds every ArviZ call.
    min_ess = float(diagnostics.summary(idata, var_names=list(reference.second_moment))["ess_bulk"].min())
    return {
        "grads_to_b2_pooled": gradients_to_threshold(b2["pooled"], pooled_grads, threshold),
        "grads_to_b2_chain_median": float(np.median(per_chain)),
        "grads_to_b2_per_chain": per_chain,
        "b2_final_pooled": float(b2["pooled"][-1]),
        "ess_per_grad": min_ess / total,
        "b2_pooled": b2["pooled"],
        "b2_per_chain": b2["per_chain"],
        "grads_pooled": pooled_grads,
        "grads_per_chain": grads,
        "grads_source": source,
    }
