"""docs/gym.md#symmetry: the exact symmetries models declare (``ModelSpec.symmetry``) and the random permutation
sampler's step that certified references apply to their draws (Fruhwirth-Schnatter 2001).

Invariance is checked where NUTS sees the posterior: the potential energy on NumPyro's unconstrained space (the
log-Jacobian included) through ``inference.mcmc.gym_common.logdensity``, at prior draws of every latent site, moved by
random group elements; the deterministic sites must move as declared. The same check of a transform that is not a
symmetry (one entry of W, of a slope, of a mode's f, negated) must see the density change, so the check has power.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import Predictive
from numpyro.infer.util import constrain_fn, unconstrain_fn

import zoo
from inference.core.program import conditioned_program, latent_sites, observed_args
from inference.mcmc.gym_common import logdensity
from inference.results import diagnostics
from inference.results import references as refs
from zoo.symmetry import symmetrise

# model, options, size (small: the invariance does not depend on it), a site whose first entry alone negated is not
# a symmetry (the check's power)
MODELS = [
    ("gp/icm", {}, {"n": 6}, "W"),
    ("gp/icm", {"rank": 2}, {"n": 6}, "W"),
    ("deep_gp/linear", {"num_layers": 4}, {"n": 6}, "slope_2"),
    ("dagp/exact", {"num_modes": 3}, {"n": 5}, "f_white"),
]
POINTS = 4  # prior draws per model, each moved by its own random element


def _invariance(spec, size, wrong: str):
    """At POINTS prior draws x (fixed keys), each moved by a random element g: (log density at x, at g . x, at x with
    the first entry of site ``wrong`` negated), g . x's sites as declared and as the program computes them from g's
    sampled sites, and whether g moved x. One compiled program per model."""
    dataset = spec.simulate(jax.random.key(0), **size)
    observed = observed_args(dataset)
    sampled = sorted(latent_sites(spec, dataset))
    model = conditioned_program(spec)
    density = logdensity(model, {}, observed)
    symmetry = spec.symmetry

    def at(values):
        z = unconstrain_fn(model, ({},), observed, {k: values[k] for k in sampled})
        return density(z), constrain_fn(model, ({},), observed, z, return_deterministic=True)

    def one(values, key):
        base, sites = at(values)
        moved = symmetry.act(symmetry.random_element(key), sites)
        value, recomputed = at(moved)
        wrong_value, _ = at(
            dict(values, **{wrong: values[wrong].ravel().at[0].multiply(-1.0).reshape(values[wrong].shape)})
        )
        changed = jnp.any(jnp.stack([jnp.any(moved[k] != sites[k]) for k in symmetry.sites]))
        return base, value, wrong_value, moved, recomputed, changed

    @jax.jit
    def run(key):
        k_prior, k_group = jax.random.split(key)
        prior = Predictive(spec.program, num_samples=POINTS, return_sites=sampled)(k_prior, **observed)
        return jax.vmap(one)({k: prior[k] for k in sampled}, jax.random.split(k_group, POINTS))

    return run(jax.random.key(1))


def _check(spec, size, wrong):
    base, value, wrong_value, moved, recomputed, changed = _invariance(spec, size, wrong)
    assert np.any(changed), "the fixed keys drew only the identity: no check made"
    np.testing.assert_allclose(value, base, rtol=1e-10, atol=1e-10)
    assert set(spec.symmetry.sites) <= set(recomputed), "the group moves only the model's latent sites"
    for k in recomputed:  # the deterministic sites follow the declared action
        np.testing.assert_allclose(recomputed[k], moved[k], rtol=1e-10, atol=1e-12)
    # a transform outside the group (one entry of W, one slope, one entry of a mode's f) changes the density
    assert np.all(np.abs(wrong_value - base) > 1e-6)


def test_deep_linear_sign_flips_leave_the_log_density_unchanged():
    _check(zoo.get("deep_gp/linear"), {"n": 6}, "slope_1")


@pytest.mark.slow  # one compilation per model: about 25 s together cold on a shared core
@pytest.mark.parametrize(("name", "options", "size", "wrong"), MODELS, ids=lambda v: str(v))
def test_declared_symmetry_leaves_the_log_density_unchanged(name, options, size, wrong):
    _check(zoo.get(name, **options), size, wrong)


def _two_mirror_modes(chains=8, per_chain=500, seed=0):
    """gp/icm-shaped draws, W (3, 1) around +w in half the chains and around -w in the others; kappa unmoved."""
    rng = np.random.default_rng(seed)
    w = np.array([[1.0], [-0.5], [0.8]])
    sign = np.where(np.arange(chains) < chains // 2, 1.0, -1.0)[:, None, None, None]
    W = sign * (w + 0.1 * rng.standard_normal((chains, per_chain, 3, 1)))
    return {"W": W, "kappa": np.exp(rng.standard_normal((chains, per_chain, 3)) - 2)}, w


def test_symmetrised_moments_of_two_mirror_modes():
    """Chains split between W's two mirror modes: R-hat refuses them; the symmetrised draws have R-hat near 1, E[W]
    = 0 within 4 MCSE, Var[W] = w^2 + 0.01 within 4 MCSE, and E[W^2] and kappa exactly as before (a sign flip)."""
    draws, w = _two_mirror_modes()
    assert diagnostics.array_diagnostics(draws["W"])["r_hat"].max() > 1.5
    symmetry = zoo.get("gp/icm").symmetry
    moved = symmetrise(symmetry, draws, jax.random.key(3))
    assert diagnostics.array_diagnostics(moved["W"])["r_hat"].max() < 1.01
    q = refs.from_draws(moved)["W"]
    assert np.all(np.abs(q.mean) < 4 * q.mean_mcse)
    assert np.all(np.abs(q.var - (w**2 + 0.01)) < 4 * q.var_mcse)
    np.testing.assert_array_equal(moved["W"] ** 2, draws["W"] ** 2)
    np.testing.assert_array_equal(moved["kappa"], draws["kappa"])
    # independent elements per draw: about half the draws flipped, and a chain's flips are not all alike
    flipped = np.sign(moved["W"][..., 0, 0]) != np.sign(draws["W"][..., 0, 0])
    assert 0.45 < flipped.mean() < 0.55 and 0 < flipped[0].mean() < 1


@pytest.mark.slow  # a second compiled symmetry step: about 1.5 s cold
def test_relabelling_averages_the_modes_and_keeps_each_draw_a_relabelling():
    """Two modes with lengthscales near 1 and 3, always in that order: symmetrised, each mode's mean is 2 within 4
    MCSE, and every draw is a permutation of the original one (f moved with the same permutation)."""
    rng = np.random.default_rng(1)
    ls = np.array([1.0, 3.0]) + 0.1 * rng.standard_normal((4, 400, 2))
    f = rng.standard_normal((4, 400, 2, 5))
    draws = {"lengthscale": ls, "f": f, "other": rng.standard_normal((4, 400))}
    moved = symmetrise(zoo.get("dagp/exact").symmetry, draws, jax.random.key(4))
    q = refs.from_draws(moved)["lengthscale"]
    assert np.all(np.abs(q.mean - 2.0) < 4 * q.mean_mcse)
    swapped = moved["lengthscale"][..., 0] != ls[..., 0]
    np.testing.assert_array_equal(np.sort(moved["lengthscale"], -1), np.sort(ls, -1))
    np.testing.assert_array_equal(np.where(swapped[..., None, None], f[..., ::-1, :], f), moved["f"])
    np.testing.assert_array_equal(moved["other"], draws["other"])


def test_bench_moves_a_run_like_its_symmetrised_reference():
    """``zoo bench`` compares a run with a symmetrised reference after the same step (keys from the cell's seed), and
    leaves a run alone when its reference was not symmetrised."""
    import arviz as az

    from benchmarks.runner import symmetrised
    from benchmarks.suites import Cell

    draws, _ = _two_mirror_modes()  # the shapes of the test above: its compiled step is reused
    run = az.from_dict(posterior={"W": np.abs(draws["W"]), "kappa": draws["kappa"]})
    cell = Cell("gp/icm", "nuts", "nuts", 0, {}, {"n": 20}, 0, "stored")
    plain = refs.StoredReference("gp/icm", {}, {"n": 20}, 0, {}, "", "certified", {}, {})
    assert symmetrised(run, cell, plain) == (run, False)
    stored = refs.StoredReference("gp/icm", {}, {"n": 20}, 0, {}, "", "certified", {}, {"symmetry": {"applied": True}})
    moved, done = symmetrised(run, cell, stored)
    flipped = np.asarray(moved.posterior["W"].values < 0)[..., 0, 0]
    assert done and 0.4 < flipped.mean() < 0.6
    np.testing.assert_array_equal(np.abs(moved.posterior["W"].values), run.posterior["W"].values)
    np.testing.assert_array_equal(moved.posterior["kappa"].values, run.posterior["kappa"].values)
    assert np.all(run.posterior["W"].values > 0), "the run itself is not changed"
