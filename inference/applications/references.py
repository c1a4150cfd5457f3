"""Building reference posteriors (``zoo reference``; the format: inference/results/references.py,
docs/gym.md#references).

- ``exact``: models with a conjugate view (``blr``, ``gp/regression-latent``): the Gaussian posterior's moments in
  closed form (``gym_metrics.exact_moments``); MCSE 0.
- ``kalman``: linear-Gaussian state-space models (``lgssm``): the RTS smoother's marginal means and variances, from
  the ``kalman`` engine's point estimates; MCSE 0.
- ``nuts``: any other model with a continuous latent space: a long NUTS run (posteriordb's default: 10 chains,
  10 000 warm-up and 10 000 sampling iterations each, thinned by 10 to 1000 draws per chain), certified by
  posteriordb's criteria (``references.certify``); a run that fails a check is not stored (``NotCertifiedError``).
  When the model declares an exact symmetry (``ModelSpec.symmetry``: mirror modes the chains do not cross), each
  retained draw is first moved by a uniformly random element of the group (the random permutation sampler,
  docs/gym.md#symmetry), so the checks and the moments are of the symmetric posterior.

Any other engine, or an engine that does not fit the model (``exact`` on a non-conjugate model, a model without a
continuous latent space for ``nuts``), is refused before anything runs.
"""

import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from inference.core.progress import Heartbeat
from inference.results import references as refs
from zoo.errors import OptionError, ZooError

__all__ = ["DEFAULTS", "REFERENCE_ENGINES", "NotCertifiedError", "build", "choose_engine"]

REFERENCE_ENGINES = ("exact", "kalman", "nuts")
# posteriordb's Stan defaults (doc/REFERENCE_POSTERIOR_DEFINITION.md): 10 chains, thinning 10, 20 000 iterations of
# which 10 000 warm-up; seed 4711 as in its reference-posterior info files.
DEFAULTS = {"chains": 10, "draws": 1000, "thin": 10, "warmup": 10_000, "seed": 4711}


SYMMETRISED = (
    ", each retained draw then moved by a uniformly random element of the posterior's exact symmetry group (the "
    "random permutation sampler, Fruhwirth-Schnatter 2001)"
)


class NotCertifiedError(ZooError):
    """A long run that failed posteriordb's criteria: not a reference."""


def choose_engine(spec, engine: str | None = None) -> str:
    """The engine that makes ``spec``'s reference: ``engine`` when given and able to, else exact > kalman > nuts.
    Raises OptionError (before anything runs) for an engine that cannot make a reference of this model."""
    able = {
        "exact": "conjugate" in spec.capabilities,
        "kalman": {"state_space", "linear_gaussian"} <= set(spec.capabilities),
        "nuts": "continuous" in spec.capabilities,
    }
    if engine is None:
        for name in REFERENCE_ENGINES:
            if able[name]:
                return name
        raise OptionError(
            f"model {spec.name!r} has no engine that can make a reference: no closed form (conjugate or Kalman) and no "
            "continuous latent space for a certified NUTS run (its latents are discrete or it has no density)"
        )
    if engine not in REFERENCE_ENGINES:
        raise OptionError(
            f"engine {engine!r} cannot make a reference: only {', '.join(REFERENCE_ENGINES)} do (exact answers, or "
            "NUTS certified by posteriordb's criteria); an approximate or unadjusted engine would make the truth "
            "biased"
        )
    if not able[engine]:
        need = {
            "exact": "a conjugate view",
            "kalman": "a linear-Gaussian state-space view",
            "nuts": "a continuous latent space",
        }
        raise OptionError(f"engine {engine!r} cannot make a reference of {spec.name!r}: it needs {need[engine]}")
    return engine


def build(
    model: str,
    model_options: Mapping[str, Any] | None = None,
    size: Mapping[str, Any] | None = None,
    data_seed: int = 0,
    params: Mapping[str, Any] | None = None,
    engine: str | None = None,
    chains: int = DEFAULTS["chains"],
    draws: int = DEFAULTS["draws"],
    thin: int = DEFAULTS["thin"],
    warmup: int = DEFAULTS["warmup"],
    seed: int = DEFAULTS["seed"],
    engine_options: Mapping[str, Any] | None = None,
    log=lambda line: print(line, file=sys.stderr, flush=True),
) -> refs.StoredReference:
    """The reference of ``model`` (with ``model_options``) on data simulated with ``size`` and ``data_seed``, with
    ``params`` held fixed (None: every parameter sampled, except for exact engines, which fix the model's defaults).
    ``draws`` per chain after thinning by ``thin``; ``engine_options`` only ``target_accept`` (NUTS's, Stan's
    adapt_delta). Raises NotCertifiedError for a run that fails the checks."""
    import jax

    import inference
    import zoo

    model_options, size, params = dict(model_options or {}), dict(size or {}), params
    spec = zoo.get(model, **model_options)
    engine = choose_engine(spec, engine)
    unknown = set(engine_options or {}) - {"target_accept"}
    if unknown:  # the stored command must regenerate the run, and `zoo reference` has only --target-accept
        raise OptionError(f"engine_options {sorted(unknown)}: a reference run takes only target_accept")
    for name, value, low in (("chains", chains, 1), ("draws", draws, 1), ("thin", thin, 1), ("warmup", warmup, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise OptionError(f"{name} must be an integer >= {low}, got {value!r}")
    dataset = spec.simulate(jax.random.key(data_seed), **size)
    # the data preparation ``inference.run`` would do (the GP-SSMs' pseudo-inputs, from an AR1-GP fit): done once
    # here so that the site count below sees the program's real data and the provenance records what was chosen;
    # data_sha256 stays that of the simulated arrays, which the benchmark's staleness check recomputes
    from inference.applications import ar1

    prepared = ar1.prepare(spec, dataset)
    common = {"params": dict(params)} if params is not None else {}
    started = time.perf_counter()
    if engine == "exact":
        from inference.results.gym_metrics import exact_moments

        idata = inference.run(spec, dataset, engine="exact", seed=seed, num_samples=2, **common)
        fixed = _fixed(idata)
        quantities = refs.from_gaussian(*exact_moments(spec, dataset, fixed))
        provenance = {"method": "exact: the conjugate Gaussian posterior in closed form"}
    elif engine == "kalman":
        idata = inference.run(spec, dataset, engine="kalman", seed=seed, num_samples=2, **common)
        fixed = _fixed(idata)
        estimates = idata.point_estimates
        mean = np.asarray(estimates["states_mean"].values[0])
        sd = np.sqrt(np.diagonal(np.asarray(estimates["states_cov"].values[0]), axis1=-2, axis2=-1))
        quantities = refs.from_gaussian({"states": mean}, {"states": sd})
        provenance = {"method": "exact: Kalman filter and RTS smoother marginals"}
    else:
        options = {
            **dict(engine_options or {}),
            "num_chains": chains,
            "num_warmup": warmup,
            "num_samples": draws * thin,
        }
        _check_quantities(spec, prepared, params)
        log(f"zoo reference: nuts on {spec.name}, {chains} chains x {warmup} + {draws * thin} iterations, thin {thin}")
        # one compiled program with no per-draw progress: a sign of life each minute of a run that can take hours
        with Heartbeat(f"zoo reference: nuts on {spec.name}", every=60.0, out=log):
            idata = inference.run(spec, prepared, engine="nuts", seed=seed, **options, **common)
        fixed = _fixed(idata)
        post = {
            name: np.asarray(idata.posterior[name].values)[:, thin - 1 :: thin] for name in idata.posterior.data_vars
        }
        post, symmetry = _symmetrised(spec, post, fixed, seed)
        if symmetry.get("applied"):
            log(
                f"zoo reference: draws symmetrised ({symmetry['group']}); max R-hat of the moved sites before: "
                f"{symmetry['moved_max_r_hat_before']:.4g}"
            )
        stats = idata.sample_stats
        from inference.results.health import bfmi

        checks, diag = refs.certify(
            post,
            divergences=int(np.asarray(stats["diverging"]).sum()),
            efmi=bfmi(np.asarray(stats["energy"])[:, thin - 1 :: thin]),
            iterations=chains * draws * thin,
        )
        failed = [name for name, ok in checks.items() if not ok]
        if failed:
            raise NotCertifiedError(
                f"the NUTS run on {spec.name} fails posteriordb's criteria {failed} ({_short(diag)}"
                + (", draws symmetrised" if symmetry.get("applied") else "")
                + "): not stored; "
                "run longer (--warmup, --draws, --thin) or choose another parameterisation"
            )
        quantities = refs.from_draws(post)
        provenance = {
            "method": "certified: long NUTS run meeting posteriordb's reference-posterior criteria"
            + (SYMMETRISED if symmetry.get("applied") else ""),
            "engine_options": options,
            **({"symmetry": symmetry} if symmetry else {}),
            "diagnostics": diag,
            "checks_made": checks,
            **_prepared_record(dataset, prepared),
        }
    from inference.core.api import package_versions

    provenance.update(
        {
            "command": refs.build_command(model, model_options, size, data_seed, fixed)
            + (f" --engine {engine}" if engine == "nuts" else "")
            + _counts_flags(engine, chains=chains, draws=draws, thin=thin, warmup=warmup, seed=seed)
            + (
                "".join(f" --target-accept {v}" for v in dict(engine_options or {}).values())
                if engine == "nuts"
                else ""
            ),
            "engine": engine,
            "chains": chains if engine == "nuts" else None,
            "draws_per_chain": draws if engine == "nuts" else None,
            "thin": thin if engine == "nuts" else None,
            "warmup": warmup if engine == "nuts" else None,
            "seed": seed,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "versions": package_versions(),
            "wall_s": round(time.perf_counter() - started, 1),
        }
    )
    return refs.StoredReference(
        model=model,
        model_options=refs.canonical_model_options(model, model_options),
        size=size,
        data_seed=int(data_seed),
        params=fixed,
        data_sha256=refs.data_digest(dataset.observed),
        kind="exact" if engine in ("exact", "kalman") else "certified",
        quantities=quantities,
        provenance=provenance,
    )


def _symmetrised(spec, post, fixed, seed: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The random permutation sampler's step (Fruhwirth-Schnatter 2001, sec. 3.2; docs/gym.md#symmetry) on the
    retained draws when the model declares an exact symmetry, and what was done for the provenance ({} when it
    declares none). A symmetry whose moved sites are held fixed is not one of the conditional posterior: not
    applied, and the provenance says why."""
    symmetry = spec.symmetry
    if symmetry is None:
        return post, {}
    record = {"group": symmetry.description, "order": symmetry.order}
    held = sorted(symmetry.sites & set(fixed))
    if held:
        return post, {**record, "applied": False, "why": f"{', '.join(held)} held fixed"}
    from inference.results import diagnostics
    from zoo.symmetry import STEP_STREAM, step_key, symmetrise

    keys = f"jax.random.split(jax.random.fold_in(jax.random.key({seed}), {STEP_STREAM}), chains * draws)"
    # the moved sites' R-hat before the step: how far apart the chains' mirror modes were (recorded, not a check)
    before = [np.max(diagnostics.array_diagnostics(post[name])["r_hat"]) for name in sorted(symmetry.sites & set(post))]
    record = {**record, "applied": True, "keys": keys, "moved_max_r_hat_before": float(np.max(before))}
    return symmetrise(symmetry, post, step_key(seed)), record


def _prepared_record(dataset, prepared) -> dict[str, Any]:
    """The arrays the preparation step added to the simulated data (the GP-SSMs' ``pseudo_inputs``), as nested lists
    under ``prepared_data``; {} when it added none."""
    added = {
        name: np.asarray(value).tolist() for name, value in prepared.observed.items() if name not in dataset.observed
    }
    return {"prepared_data": added} if added else {}


def _counts_flags(engine: str, **counts: int) -> str:
    """The ``zoo reference`` flags of the counts that differ from DEFAULTS (so the command regenerates this run)."""
    if engine != "nuts":
        return ""
    return "".join(f" --{name} {value}" for name, value in counts.items() if value != DEFAULTS[name])


def _check_quantities(spec, dataset, params) -> None:
    """Refuse before running a model whose sampled quantities are more than the ESS bound can bound (its
    deterministic sites, known only after the run, can still push a run over)."""
    from inference.core.program import latent_sites

    sampled = {name: site for name, site in latent_sites(spec, dataset).items() if name not in (params or {})}
    count = sum(int(np.prod(site.shape)) for site in sampled.values())
    if count > refs.max_quantities():
        raise OptionError(
            f"{spec.name} samples {count} quantities; posteriordb's ESS bound over them needs a longer null table "
            f"(at most {refs.max_quantities()} now: benchmarks/ess_null_quantiles.py --quantities)"
        )


def _fixed(idata) -> dict[str, Any]:
    """The parameters the run held fixed, as plain JSON data (``fixed_params`` of its attributes)."""
    import json

    return json.loads(idata.posterior.attrs.get("fixed_params", "{}"))


def _short(diag: Mapping[str, Any]) -> str:
    keys = ("max_r_hat", "min_ess_bulk", "min_ess_tail", "divergent_transitions", "min_efmi")
    return ", ".join(f"{k} {diag[k]:.4g}" if isinstance(diag[k], float) else f"{k} {diag[k]}" for k in keys)
