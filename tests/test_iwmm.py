"""Exact checks of the iWMM (Duvenaud 2014, ch. 7, App. E): the NIW predictive against its marginal-likelihood ratio
and a Monte Carlo integral, the GP-LVM likelihood against a dense MVN, and invariance of the exact posterior over
partitions under one collapsed Gibbs sweep of the ``iwmm`` engine (all 52 partitions of 5 points enumerated)."""

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density
from scipy import stats
from scipy.spatial.distance import cdist

import inference  # noqa: F401
import zoo  # noqa: F401  (float64 before jax)
from inference.mcmc.iwmm import gibbs_sweep, split_merge_moves
from zoo.errors import DataError, OptionError
from zoo.iwmm import data, gplvm, metrics, niw


def _partitions(n):
    """Every set partition of range(n) as a canonical label tuple (first appearance order): Bell(n) of them."""
    out = [[0]]
    for _ in range(1, n):
        out = [p + [k] for p in out for k in range(max(p) + 2)]
    return [tuple(p) for p in out]


def _canonical(labels):
    seen = {}
    return tuple(seen.setdefault(int(v), len(seen)) for v in labels)


def test_predictive_is_the_marginal_ratio_and_the_monte_carlo_integral():
    rng = np.random.default_rng(0)
    prior = niw.NIWPrior(jnp.array([0.3, -0.2]), jnp.array(1.5), jnp.array([[1.2, 0.3], [0.3, 0.8]]), jnp.array(3.0))
    Xc = jnp.asarray(rng.normal(size=(6, 2)))
    s = niw.stats_of(Xc, jnp.zeros(6, jnp.int32), 1)
    one = jax.tree.map(lambda a: a[0], s)
    x = jnp.array([0.5, 1.0])
    # E.10 is the ratio of E.4 with and without x: the Student-t form must equal it to rounding.
    with_x = niw.stats_of(jnp.vstack([Xc, x]), jnp.zeros(7, jnp.int32), 1)
    ratio = niw.log_marginal(prior, jax.tree.map(lambda a: a[0], with_x)) - niw.log_marginal(prior, one)
    np.testing.assert_allclose(niw.log_predictive(prior, one, x), ratio, rtol=1e-10)
    # Monte Carlo over the posterior (R ~ W(S_c^-1, nu_c), mu ~ N(u_c, (r_c R)^-1)) of N(x | mu, R^-1).
    post = niw.posterior(prior, one)
    M = 200_000
    R = stats.wishart(df=float(post.nu), scale=np.linalg.inv(np.asarray(post.S))).rvs(M, random_state=rng)
    cov = np.linalg.inv(R)
    mu = np.asarray(post.u) + np.einsum("mij,mj->mi", np.linalg.cholesky(cov / float(post.r)), rng.normal(size=(M, 2)))
    d = np.asarray(x) - mu
    quad = np.einsum("mi,mij,mj->m", d, R, d)
    dens = np.exp(-0.5 * quad) * np.sqrt(np.linalg.det(R)) / (2 * np.pi)
    # the MC mean is within 5 standard errors (sample sd / sqrt(M)) of the exact value: fails with p < 1e-6
    se = dens.std() / np.sqrt(M)
    assert abs(dens.mean() - np.exp(float(niw.log_predictive(prior, one, x)))) < 5 * se


def test_gplvm_likelihood_is_the_dense_mvn():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(12, 2)), rng.normal(size=(12, 3))
    theta = gplvm.WarpParams(jnp.array([0.7, 1.3]), jnp.array(1.4), jnp.array(0.05))
    K = np.asarray(gplvm.noisy_gram(jnp.asarray(X), theta))
    sq = ((X[:, None, :] - X[None]) / np.array([0.7, 1.3])) ** 2
    np.testing.assert_allclose(K, 1.4 * np.exp(-0.5 * sq.sum(-1)) + 0.05 * np.eye(12), rtol=1e-12)
    dense = sum(stats.multivariate_normal(np.zeros(12), K).logpdf(Y[:, d]) for d in range(3))
    value, jitter = gplvm.log_likelihood(jnp.asarray(Y), jnp.asarray(X), theta)
    np.testing.assert_allclose(value, dense, rtol=1e-10)
    assert float(jitter) == 0.0


X5 = np.array([[-1.6], [-1.2], [0.1], [0.4], [2.2]])


def _exact_partition_posterior(view, X):
    parts = _partitions(len(X))
    prior = view.prior(X.shape[1])
    logp = np.array(
        [
            float(niw.log_mixture_marginal(prior, jnp.asarray(X), jnp.array(p), view.max_clusters))
            + float(view.log_crp(jnp.array(p)))
            for p in parts
        ]
    )
    return parts, np.exp(logp - logp.max()) / np.exp(logp - logp.max()).sum()


def test_gibbs_sweep_leaves_the_exact_partition_posterior_invariant():
    assert len(_partitions(5)) == 52  # Bell(5)
    view = zoo.get("iwmm", warping="identity", max_clusters=5).views["iwmm"]
    parts, post = _exact_partition_posterior(view, X5)
    rng = np.random.default_rng(2)
    M = 20_000
    start = jnp.asarray([parts[i] for i in rng.choice(len(parts), M, p=post)], dtype=jnp.int32)
    keys = jax.random.split(jax.random.key(3), M)
    X = jnp.asarray(X5)
    after, full = jax.jit(jax.vmap(lambda k, z: gibbs_sweep(k, z, X, view)))(keys, start)
    assert not bool(full.any())  # K = N slots: the DP is never truncated
    _assert_partitions_follow(after, parts, post)


def _assert_partitions_follow(labels, parts, post):
    """Independent draws (M, 5) of labels follow the exact posterior ``post`` over ``parts``: their counts are then
    multinomial(M, post), Pearson's statistic chi^2 with 51 dof, and the threshold fails a correct sampler w.p. 1e-4.
    Power: the same counts against the posterior under another concentration (eta = 3) are rejected."""
    M = len(labels)
    index = {p: i for i, p in enumerate(parts)}
    counts = np.bincount([index[_canonical(z)] for z in np.asarray(labels)], minlength=len(parts))
    threshold = stats.chi2.ppf(1 - 1e-4, len(parts) - 1)
    assert np.sum((counts - M * post) ** 2 / (M * post)) < threshold
    other = zoo.get("iwmm", warping="identity", max_clusters=5, concentration=3.0).views["iwmm"]
    _, wrong = _exact_partition_posterior(other, X5)
    assert np.sum((counts - M * wrong) ** 2 / (M * wrong)) > threshold


def test_split_merge_moves_alone_reach_the_exact_partition_posterior_from_one_cluster():
    """All M chains start in the one-cluster partition, far from the posterior, and only split-merge moves act: after
    enough moves the partitions must follow the exact posterior (invariance and the moves' reach together)."""
    view = zoo.get("iwmm", warping="identity", max_clusters=5).views["iwmm"]
    parts, post = _exact_partition_posterior(view, X5)
    M, moves = 10_000, 40
    keys = jax.random.split(jax.random.key(5), M)
    start = jnp.zeros(len(X5), jnp.int32)
    X = jnp.asarray(X5)
    after, accepted = jax.jit(jax.vmap(lambda k: split_merge_moves(k, start, X, view, moves)))(keys)
    assert 0.05 < float(accepted.mean()) < 0.95  # the moves do move, and not blindly
    _assert_partitions_follow(after, parts, post)


def _random_data_and_position(rng, num_points):
    """Observations Y (num_points, 3) and an iWMM latent position with X (num_points, 2), drawn in that order."""
    Y = jnp.asarray(rng.normal(size=(num_points, 3)))
    position = {
        "X": jnp.asarray(rng.normal(size=(num_points, 2))),
        "log_lengthscale": jnp.array([0.2, -0.1]),
        "log_variance": jnp.array(0.3),
        "log_noise": jnp.array(-2.0),
    }
    return Y, position


def test_program_and_view_give_the_same_log_density():
    spec = zoo.get("iwmm", latent_dim=2, max_clusters=4)
    view = spec.views["iwmm"]
    Y, position = _random_data_and_position(np.random.default_rng(4), num_points=8)
    z = jnp.array([0, 0, 1, 1, 3, 3, 0, 1])
    program_value = jax.jit(lambda p: log_density(spec.program, (), {"Y": Y}, p)[0])(position | {"z": z})
    np.testing.assert_allclose(program_value, view.log_density(position, z, Y) + view.log_crp(z), rtol=1e-10)


def test_rand_index():
    assert metrics.rand_index([0, 0, 1, 1], [5, 5, 2, 2]) == 1.0
    # pairs (01 02 03 12 13 23): same in a = (1,0,0,0,0,1), in b = (1,1,0,1,0,0): agree on 01, 03, 13
    assert metrics.rand_index([0, 0, 1, 1], [0, 0, 0, 1]) == 0.5


def test_three_semi_arcs_are_separated():
    """Noiseless 3-semi points lie on their arcs, so no two classes come closer than the arcs do: the two upper arcs
    end to end, 2 (spacing - 1) = 0.4 apart (the lower arc is 0.46 from each). The old spacing 1 made them touch."""
    Y, labels = data.load("3-semi")
    assert Y.shape == (300, 2) and np.bincount(labels).tolist() == [100, 100, 100]
    Y, labels = data.three_semi(np.random.default_rng(0), noise=0.0)
    closest = min(cdist(Y[labels == a], Y[labels == b]).min() for a, b in ((0, 1), (0, 2), (1, 2)))
    assert closest >= 2.0 * (data.SEMI_SPACING - 1.0) - 1e-12


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(OptionError):
        zoo.get("iwmm", latent_dim=0)
    Y = np.random.default_rng(5).normal(size=(10, 2))
    Y[:, 1] = 3.0
    with pytest.raises(DataError, match="constant"):
        inference.run(zoo.get("iwmm"), {"Y": Y}, engine="iwmm", num_warmup=1, num_samples=1)
    with pytest.raises(OptionError, match="latent_dim"):
        inference.run(zoo.get("iwmm", warping="identity", latent_dim=1), {"Y": Y + np.eye(10, 2)}, engine="iwmm")


def test_symmetry_moves_use_the_exact_jacobian_and_the_warp_does_not_see_them():
    """The rescaling MH move accepts with pi(T x) |det T'(x)| / pi(x): its log Jacobian must be log|det| of the map on
    the flattened (X, log theta) (here by forward-mode autodiff), the shift's 0; and the GP-LVM likelihood must not
    change under either (the reason the moves are cheap to accept), to rounding."""
    view = zoo.get("iwmm", latent_dim=2, max_clusters=4).views["iwmm"]
    Y, position = _random_data_and_position(np.random.default_rng(6), num_points=7)
    flat, unflatten = jax.flatten_util.ravel_pytree(position)
    s, shift = 0.37, jnp.array([0.4, -1.1])
    moved, log_jacobian = view.rescaled(position, s)
    rescale_flat = lambda v: jax.flatten_util.ravel_pytree(view.rescaled(unflatten(v), s)[0])[0]  # noqa: E731
    shift_flat = lambda v: jax.flatten_util.ravel_pytree(view.shifted(unflatten(v), shift))[0]  # noqa: E731
    np.testing.assert_allclose(log_jacobian, np.linalg.slogdet(jax.jacfwd(rescale_flat)(flat))[1], rtol=1e-12)
    np.testing.assert_allclose(np.linalg.slogdet(jax.jacfwd(shift_flat)(flat))[1], 0.0, atol=1e-12)
    warp = lambda p: gplvm.log_likelihood(Y, p["X"], view.warp_params(p))[0]  # noqa: E731
    np.testing.assert_allclose(warp(moved), warp(position), rtol=1e-10)
    np.testing.assert_allclose(warp(view.shifted(position, shift)), warp(position), rtol=1e-10)
