"""Sequential Monte Carlo over kernel structures and their hyperparameters (Saad, Patton, Hoffmann, Saurous and
Mansinghka 2023, "Sequential Monte Carlo learning for time series structure discovery", ICML; AutoGP.jl):
``search(..., strategy="smc")`` and ``zoo search --strategy smc`` (docs/sources/duvenaud.md#smc).

Target after t annealing steps: p(T, theta | y_1..n_t) ∝ p(T) p(theta | T) p(y_1..n_t | T, theta), T a kernel tree
from the truncated PCFG prior (``tree_prior.py``), theta its hyperparameters and the noise variance under their
default priors, on the standardised series (``result.Standardisation``). The data are annealed in increments: the
observations enter in the input's order, n_t = ceil(t n / steps) (AutoGP's linear schedule).

One step, particles i = 1..P with normalised weights W_i:

1. Reweight: the incremental weight is the predictive density of the new observations,
   log w_i = log p(y_1..n_t | T_i, theta_i) - log p(y_1..n_{t-1} | T_i, theta_i); the log evidence grows by
   log sum_i W_i w_i (Del Moral, Doucet and Jasra 2006), and the weights become W_i w_i / sum_j W_j w_j.
2. Resample (systematic) when the effective sample size 1 / sum W_i^2 falls below ``ess_threshold`` P.
3. Rejuvenate with MCMC kernels that leave the current target invariant, ``rounds`` times: ``structure_moves``
   pairs of the structure moves of ``structure_moves.py`` (subtree replacement; grow or prune), each accepted by
   Metropolis-Hastings with the proposal's reverse probability (cheap: one batched likelihood each), then
   ``hmc_moves`` HMC moves of the hyperparameters given the structure
   (``smc_program.py``: all particles at once in one compiled program). Each structure has its own HMC step size
   (structures differ in their posterior's scales; one shared step size gave acceptance rates from 0.06 to 0.85
   between rounds), which follows the mean acceptance rate of that structure's particles multiplicatively towards
   ``target_accept`` between rounds (the ``tsmc`` engine's rule); a new structure starts at ``step_size``. The
   inverse mass matrix is the prior's (unit) covariance.

The log evidence estimate sums step 1's increments: unbiased for Z with fixed kernels (the step size is tuned from
the particles, as in ``tsmc``). With ``structure`` given, every particle keeps that structure and only its
hyperparameters move: the same sampler as an evidence estimate of one model, checked against the ``tsmc`` engine
(tests/test_structure_smc.py). The posterior over structures sums the final weights by canonical structure
(``zoo.structure.canonical.key``); forecasts average the particles' GP predictives (``smc_result.py``).
"""

import dataclasses
import math
import sys
import time
from collections.abc import Callable

import jax
import numpy as np
from blackjax.smc import resampling
from jax.scipy.special import logsumexp

from inference.applications.structure_search.checks import check_data
from inference.applications.structure_search.result import Standardisation
from inference.applications.structure_search.smc_program import ParticleProgram
from inference.applications.structure_search.smc_result import SMCResult
from inference.applications.structure_search.structure_moves import grow_or_prune, replace
from inference.applications.structure_search.tree_prior import TreePrior, draw_value
from zoo.errors import DataError, OptionError
from zoo.kernels import parse
from zoo.kernels.base import Kernel
from zoo.regression import default_priors
from zoo.structure.canonical import key
from zoo.structure.grammar import TIME_SERIES_BASE
from zoo.structure.program import NotEncodable, encode

__all__ = ["SMC_DEFAULTS", "smc_search"]

SMC_DEFAULTS = {
    "particles": 64,
    "steps": 10,
    "rounds": 2,
    "structure_moves": 5,
    "hmc_moves": 2,
    "integration_steps": 10,
    "step_size": 0.3,
    "target_accept": 0.8,
    "ess_threshold": 0.5,
    "operators": ("+", "x"),
    "p_leaf": 0.5,
    "max_depth": 2,
    "max_per_type": 2,
}


def _check(options: dict, n: int) -> None:
    for name in ("particles", "steps", "rounds", "structure_moves", "hmc_moves", "integration_steps"):
        value = options[name]
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < (0 if name == "rounds" else 1):
            raise OptionError(f"smc option {name} must be a positive integer, got {value!r}.")
    for name, low, high in (("ess_threshold", 0.0, 1.0), ("target_accept", 0.0, 1.0)):
        if not low < float(options[name]) <= high:
            raise OptionError(f"smc option {name} must lie in ({low}, {high}], got {options[name]!r}.")
    if not float(options["step_size"]) > 0:
        raise OptionError(f"smc option step_size must be positive, got {options['step_size']!r}.")
    if options["steps"] > n:
        raise OptionError(f"smc option steps ({options['steps']}) cannot exceed the number of observations ({n}).")


def _redraw(tree: Kernel, rng: np.random.Generator) -> Kernel:
    """``tree`` with every hyperparameter drawn from its default prior."""
    updates = {p: draw_value(p, rng) for p in tree.PARAMS}
    updates.update({c: _redraw(getattr(tree, c), rng) for c in tree.CHILDREN})
    return dataclasses.replace(tree, **updates)


def _noise_draws(rng: np.random.Generator, size: int) -> np.ndarray:
    prior = default_priors()["noise"]  # LogNormal(-2, 1): gp/regression's and gp/structure's
    return np.exp(float(prior.loc) + float(prior.scale) * rng.standard_normal(size))


def smc_search(
    X,
    y,
    base: tuple[str, ...] = TIME_SERIES_BASE,
    structure: str | Kernel | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    **options,
) -> SMCResult:
    """SMC over structures on a series X (n,) or (n, 1), y (n,) (module docstring). ``structure``: fix every
    particle's structure (only hyperparameters move). ``options``: ``SMC_DEFAULTS``'s names (particles, steps,
    rounds, structure_moves, hmc_moves, integration_steps, step_size, target_accept, ess_threshold, operators,
    p_leaf, max_depth, max_per_type)."""
    unknown = set(options) - set(SMC_DEFAULTS)
    if unknown:
        raise OptionError(f"unknown smc options {sorted(unknown)}; known: {sorted(SMC_DEFAULTS)}.")
    opts = {**SMC_DEFAULTS, **options}
    X, y = check_data(X, y)
    if X.shape[1] != 1:
        raise DataError(f"SMC over structures takes one input column (a series); these data have {X.shape[1]}.")
    _check(opts, X.shape[0])
    try:
        prior = TreePrior(
            tuple(base), tuple(opts["operators"]), float(opts["p_leaf"]), opts["max_depth"], opts["max_per_type"]
        )
    except ValueError as exc:
        raise OptionError(f"smc: {exc}") from None
    fixed = parse(structure) if isinstance(structure, str) else structure
    capacity = prior.capacity
    if fixed is not None:  # no structure moves: the structure's own capacity, the cheapest program
        try:
            capacity = encode(fixed, 1).capacity
        except NotEncodable as exc:
            raise OptionError(f"smc: structure {fixed}: {exc}") from None
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))

    start = time.perf_counter()
    scale = Standardisation.of(X, y)
    Xs, ys = scale.inputs(X), scale.targets(y)
    n, P = Xs.shape[0], int(opts["particles"])
    rng = np.random.default_rng(seed)
    key_ = jax.random.PRNGKey(seed)
    target = ParticleProgram(capacity, Xs, ys, int(opts["integration_steps"]))
    trees = [prior.draw(rng) if fixed is None else _redraw(fixed, rng) for _ in range(P)]
    noises = _noise_draws(rng, P)
    log_lik, log_w = np.zeros(P), np.full(P, -math.log(P))
    log_z, step_sizes = 0.0, {}  # HMC step size by structure (module docstring)
    records = []
    say("score: posterior probability of each structure (higher is better); log evidence log p(y_s), higher is better")
    for t in range(1, opts["steps"] + 1):
        n_t = math.ceil(t * n / opts["steps"])
        mask = np.arange(n) < n_t
        new = _finite(target.log_likelihoods(target.pack(trees, noises), mask))
        gain = np.where(np.isfinite(log_lik), new - log_lik, -np.inf)  # a particle at -inf stays at weight 0
        increment = float(logsumexp(log_w + gain))
        log_z += increment
        log_w = log_w + gain - increment
        log_lik = new
        ess = float(1.0 / np.sum(np.exp(2 * log_w)))
        resampled = ess < opts["ess_threshold"] * P
        if resampled:
            key_, k = jax.random.split(key_)
            idx = np.asarray(resampling.systematic(k, np.exp(log_w), P))
            trees, noises, log_lik = [trees[i] for i in idx], noises[idx], log_lik[idx]
            log_w = np.full(P, -math.log(P))
        accepted, proposed, rates = 0, 0, []
        for _ in range(opts["rounds"]):
            for move in (replace, grow_or_prune) * (0 if fixed is not None else opts["structure_moves"]):
                trees, log_lik, a = _structure_move(move, trees, noises, log_lik, prior, capacity, target, mask, rng)
                accepted, proposed = accepted + a, proposed + P
            key_, k = jax.random.split(key_)
            packed = target.pack(trees, noises)
            names = [key(tree) for tree in trees]
            sizes = np.array([step_sizes.get(name, float(opts["step_size"])) for name in names])
            z, rate = target.hmc(k, packed, mask, sizes, opts["hmc_moves"])
            trees, noises = target.unpack(trees, z)
            log_lik = _finite(target.log_likelihoods({**packed, "z": z}, mask))
            rates.append(float(np.mean(rate)))
            _tune(step_sizes, names, sizes, rate, opts["target_accept"])
        top, mass = _top(trees, log_w)
        record = {
            "step": t,
            "observations": n_t,
            "log_evidence": log_z,
            "ess": ess,
            "resampled": bool(resampled),
            "structure_acceptance": accepted / proposed if proposed else None,
            "hmc_acceptance": rates,
            "step_sizes": {name: step_sizes[name] for name in sorted(set(map(key, trees)))},
            "top": top,
            "top_mass": mass,
        }
        records.append(record)
        say(
            f"smc step {t}/{opts['steps']}: {n_t} points, log Z {log_z:.2f}, ESS {ess:.1f}"
            + (" (resampled)" if resampled else "")
            + (f", structure moves accepted {accepted}/{proposed}" if proposed else "")
            + f", HMC acceptance {np.mean(rates):.2f}; top {top} ({mass:.2f})"
        )
    options_out = {**opts, "operators": list(opts["operators"]), "base": list(prior.base), "seed": seed}
    options_out["structure"] = None if fixed is None else str(fixed)
    return SMCResult(
        trees, noises, log_w, log_z, records, X, y, scale, options_out, time.perf_counter() - start, "posterior"
    )


def _tune(step_sizes: dict, names: list[str], sizes: np.ndarray, rates: np.ndarray, target_accept: float) -> None:
    """Each structure's step size times exp(its particles' mean acceptance rate - target_accept), the ``tsmc``
    engine's rule applied per structure: the step size depends on the structure, never on the hyperparameters
    being moved, so each HMC move still leaves p(theta | T, y) invariant."""
    for name in set(names):
        mine = [i for i, n in enumerate(names) if n == name]
        step_sizes[name] = float(sizes[mine[0]] * math.exp(float(np.mean(rates[mine])) - target_accept))


def _finite(values: np.ndarray) -> np.ndarray:
    """NaN log likelihoods (a failed factorisation) as -inf: the particle gets weight 0 / the move is rejected."""
    return np.where(np.isnan(values), -np.inf, values)


def _top(trees: list[Kernel], log_w: np.ndarray) -> tuple[str, float]:
    mass: dict[str, float] = {}
    for tree, lw in zip(trees, log_w, strict=True):
        mass[key(tree)] = mass.get(key(tree), 0.0) + math.exp(lw)
    name = max(mass, key=mass.get)
    return name, mass[name]


def _structure_move(move, trees, noises, log_lik, prior, capacity, target, mask, rng):
    """One Metropolis-Hastings structure move of every particle: (trees, log likelihoods, accepted count)."""
    proposals = [move(tree, prior, rng) for tree in trees]
    possible = [math.isfinite(log_r) and prior.in_support(new, capacity) for new, log_r in proposals]
    candidates = [new if ok else old for (new, _), ok, old in zip(proposals, possible, trees, strict=True)]
    proposed = _finite(target.log_likelihoods(target.pack(candidates, noises), mask))
    out, lik, accepted = list(trees), log_lik.copy(), 0
    for i, ((_, log_r), ok) in enumerate(zip(proposals, possible, strict=True)):
        if ok and math.log(rng.random()) < proposed[i] - log_lik[i] + log_r:
            out[i], lik[i] = candidates[i], proposed[i]
            accepted += 1
    return out, lik, accepted
