"""SMC over structures (``inference.applications.structure_search.smc``; docs/sources/duvenaud.md#smc).

- The structure moves leave the tree prior invariant: with a flat likelihood, a chain of replace and grow/prune moves
  visits each ordered tree with its (truncated) PCFG probability, enumerated exactly; tolerance 4.5 Monte Carlo
  standard errors from batch means. A wrong reverse probability (node counts, the height normaliser Z_r) shifts
  mass between depths and fails this.
- With the structure fixed, the log-evidence estimate agrees with the ``tsmc`` engine's on the same model and data
  (``gp/regression`` with that kernel, the same priors), within 4 combined standard errors of the runs' means plus
  the delta-method bias sd^2 / 2 of each (tests/test_smc.py's rule).
- On a series simulated from a known kernel the posterior's most probable structure is the simulating one, or one
  whose fixed-structure log evidence is higher (within the same tolerance).
"""

import collections
import dataclasses
import math

import jax
import numpy as np
import pytest

import inference
import zoo
from inference.applications.structure_search import search
from inference.applications.structure_search.result import Standardisation
from inference.applications.structure_search.smc import smc_search
from inference.applications.structure_search.smc_program import ParticleProgram
from inference.applications.structure_search.structure_moves import grow_or_prune, replace
from inference.applications.structure_search.tree_prior import TreePrior
from zoo import gp
from zoo.errors import OptionError
from zoo.kernels import parse, with_values


def test_structure_moves_leave_the_tree_prior_invariant():
    prior = TreePrior(base=("SE", "Per"), operators=("+", "CP"), max_depth=2, max_per_type=4)
    trees = list(prior.trees())
    exact = collections.Counter()
    for t in trees:
        exact[str(t)] += math.exp(prior.log_probability(t))
    total = sum(exact.values())
    rng = np.random.default_rng(0)
    tree, batches, per_batch = prior.draw(rng), 20, 500
    counts = np.zeros((batches, len(exact)))
    index = {name: i for i, name in enumerate(exact)}
    for b in range(batches):
        for _ in range(per_batch):
            for move in (replace, grow_or_prune):
                new, log_r = move(tree, prior, rng)
                if math.log(rng.random()) < log_r:
                    tree = new
            counts[b, index[str(tree)]] += 1
    freq = counts / per_batch
    mean, mcse = freq.mean(0), freq.std(0, ddof=1) / math.sqrt(batches)
    p = np.array([exact[name] / total for name in exact])
    # the most probable trees (each > 1 %), where batch means give a usable standard error
    big = p > 0.01
    assert big.sum() >= 6
    assert np.all(np.abs(mean[big] - p[big]) < 4.5 * np.maximum(mcse[big], 1e-3)), (mean[big], p[big], mcse[big])
    # and the mass by depth (height), where an error in Z_r would show
    heights = np.array([_height(parse(name)) for name in exact])
    for h in range(3):
        sel = heights == h
        per_batch_mass = freq[:, sel].sum(1)
        se = per_batch_mass.std(ddof=1) / math.sqrt(batches)
        assert abs(per_batch_mass.mean() - p[sel].sum()) < 4.5 * max(se, 1e-3), (h, per_batch_mass.mean(), p[sel].sum())


def _height(kernel) -> int:
    return 1 + max(_height(getattr(kernel, c)) for c in kernel.CHILDREN) if kernel.CHILDREN else 0


def test_smc_options_and_data_are_checked_before_anything_compiles():
    x, y = np.linspace(0, 1, 12), np.sin(np.linspace(0, 3, 12))
    with pytest.raises(OptionError, match="particles"):
        smc_search(x, y, particles=0)
    with pytest.raises(OptionError, match="unknown smc options"):
        smc_search(x, y, partciles=8)
    with pytest.raises(OptionError, match="operators"):
        smc_search(x, y, operators=("-",))
    with pytest.raises(OptionError, match="strategy"):
        search(x, y, strategy="annealing")


def _series(expression: str, values: dict, n: int, noise: float, seed: int):
    x = np.linspace(0.0, 10.0, n)
    kernel = with_values(parse(expression), values, 1)
    K = np.asarray(kernel(x[:, None])) + noise * np.eye(n)
    return x, np.linalg.cholesky(K) @ np.random.default_rng(seed).standard_normal(n)


def _tsmc_log_evidences(expression: str, x, y, runs: int) -> np.ndarray:
    scale = Standardisation.of(x[:, None], y)
    data = {"X": scale.inputs(x[:, None]), "y": scale.targets(y)}
    spec = zoo.get("gp/regression", kernel=expression)
    idata = inference.run(spec, data, engine="tsmc", seed=0, num_chains=runs, num_particles=256)
    trace = idata.optimization["log_evidence"].values
    return np.array([row[np.isfinite(row)][-1] for row in trace])


def _ours(expression: str, x, y, runs: int, particles: int) -> np.ndarray:
    return np.array(
        [
            smc_search(x, y, structure=expression, seed=s, particles=particles, progress=lambda _: None).log_evidence
            for s in range(runs)
        ]
    )


def _agree(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(difference of the means, its tolerance: 4 combined standard errors + each estimator's sd^2 / 2)."""
    sa, sb = a.std(ddof=1), b.std(ddof=1)
    tol = 4 * math.sqrt(sa**2 / len(a) + sb**2 / len(b)) + (sa**2 + sb**2) / 2
    return float(a.mean() - b.mean()), tol


@pytest.mark.slow
def test_fixed_structure_evidence_agrees_with_tempered_smc():
    x, y = _series("SE", {"lengthscale": np.array([2.0]), "variance": 1.0}, n=25, noise=0.1, seed=1)
    ours = _ours("SE", x, y, runs=6, particles=256)
    theirs = _tsmc_log_evidences("SE", x, y, runs=6)
    diff, tol = _agree(ours, theirs)
    assert abs(diff) < tol, (ours, theirs)


@pytest.mark.slow
def test_posterior_over_structures_favours_the_simulating_kernel():
    truth = "Lin + Per"
    values = {"lin0_variance": 0.1, "lin0_offset": 0.1, "lin0_location": 0.0}
    values |= {"per1_variance": 1.0, "per1_lengthscale": 1.0, "per1_period": 2.0}
    x, y = _series(truth, values, n=50, noise=0.05, seed=0)
    result = smc_search(x, y, base=("SE", "Lin", "Per"), seed=0, particles=64, steps=10, progress=lambda _: None)
    posterior = result.posterior()
    assert math.isclose(sum(posterior.values()), 1.0)
    top = next(iter(posterior))
    mean, var = result.predict(np.array([10.5, 11.0]))
    assert mean.shape == (2,) and np.all(var > 0)
    if top != str(parse(truth)):  # then the top structure must have the better evidence, shown
        ours_top = _ours(top, x, y, runs=4, particles=128)
        ours_truth = _ours(truth, x, y, runs=4, particles=128)
        diff, tol = _agree(ours_top, ours_truth)
        assert diff > -tol, (top, ours_top, ours_truth, posterior)


@pytest.mark.slow
def test_zoo_search_strategy_smc_writes_the_posterior(tmp_path):
    import json

    import zoo_cli

    x, y = _series("Lin + Per", {"per1_period": 2.0}, n=20, noise=0.05, seed=2)
    path = tmp_path / "series.csv"
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", header="t,v", comments="")
    out = tmp_path / "smc.json"
    args = ["search", str(path), "--map", "X=t", "--map", "y=v", "--strategy", "smc", "--particles", "8"]
    args += ["--smc-steps", "2", "--max-depth", "1", "--base", "SE,Lin", "--out", str(out)]
    assert zoo_cli.main(args) == 0
    written = json.loads(out.read_text())
    assert written["strategy"] == "smc" and math.isclose(sum(written["posterior"].values()), 1.0)
    assert len(written["particles"]) == 8 and len(written["steps"]) == 2
    assert np.isfinite(written["log_evidence"])
    jax.clear_caches()


def test_the_masked_likelihood_is_the_likelihood_of_the_observed_prefix():
    """smc_program's batched log likelihood of P structures (one program, the prefix as a mask) against
    ``zoo.gp.log_marginal_likelihood`` of each kernel on the prefix alone, to rounding."""
    prior = TreePrior(base=("SE", "Per", "Lin"), operators=("+", "x"), max_depth=2)
    rng = np.random.default_rng(3)
    trees = [_drawn(parse(e), rng, prior) for e in ("SE", "Lin + Per", "(SE + Per) x Lin")]
    noises = np.array([0.1, 0.05, 0.2])
    x = np.linspace(-1.5, 1.5, 17)[:, None]
    y = np.sin(3 * x[:, 0])
    target = ParticleProgram(prior.capacity, x, y)
    packed = target.pack(trees, noises)
    for n_obs in (5, 17):
        mask = np.arange(17) < n_obs
        got = target.log_likelihoods(packed, mask)
        want = [
            float(gp.log_marginal_likelihood(t, x[:n_obs], y[:n_obs], v)) for t, v in zip(trees, noises, strict=True)
        ]
        np.testing.assert_allclose(got, want, rtol=1e-10)
    back, back_noises = target.unpack(trees, packed["z"])  # constrained -> unconstrained -> constrained
    np.testing.assert_allclose(back_noises, noises, rtol=1e-12)
    assert [str(t) for t in back] == [str(t) for t in trees]


def _drawn(tree, rng, prior):
    """``tree`` with its base kernels redrawn from the prior (hyperparameters away from the defaults)."""
    if not tree.CHILDREN:
        return prior.leaf(tree.SYMBOL, rng)
    return dataclasses.replace(tree, **{c: _drawn(getattr(tree, c), rng, prior) for c in tree.CHILDREN})
