"""The ``iwmm`` engine: collapsed Gibbs on the cluster labels alternating with HMC on the latent points and the
warp's hyperparameters (Duvenaud 2014, sec. 7.3 and App. E), for a model with the ``iwmm`` view.

One iteration: (1) a systematic-scan collapsed Gibbs sweep over the labels given X (E.9-E.10): point n leaves its
cluster and joins an occupied slot c with weight N_c p(x_n | X_c) or a new cluster (the first empty slot) with weight
eta p(x_n | prior), the predictives being the NIW Student-t; this step does not see Y. With ``num_split_merge`` > 0,
that many split-merge proposals on the labels follow (``split_merge``; ours, docs/sources/duvenaud.md#iwmm-split-merge;
0 is the thesis's sampler). (2) when the model warps, one
BlackJAX HMC trajectory on (X, log theta) given the labels, targeting log p(Y | X, theta) + log p(X | Z) +
log p(log theta) (E.11-E.14, gradients by autodiff). The labels are a fixed-size integer array over ``max_clusters``
slots, so a whole chain is one ``lax.scan``. The step size adapts by dual averaging during warm-up, then freezes
(docs/sources/duvenaud.md#iwmm-defaults); the mass matrix is the identity; the number of leapfrog steps is fixed
(25, the reference code's).
(3) with ``num_symmetry_moves`` > 0, that many Metropolis-Hastings rounds of a joint rescaling of X and the
lengthscales and a shift of X, maps the warp does not see, which move along ridges of p(X | Z) that HMC crosses by a
slow random walk (``symmetry_moves``; docs/sources/duvenaud.md#iwmm-mixing; 0 is the thesis's sampler).
Without a warp (the iGMM) steps (2) and (3) are skipped and X = Y.

Output: posterior ``labels`` (N,), ``num_clusters``, ``log_latent_density`` (log p(X | Z) + log p(Z): a rotation-
invariant summary for R-hat, docs/sources/duvenaud.md#iwmm-defaults), and when warped ``X`` (N, Q), ``lengthscale``
(Q,), ``variance``, ``noise``, ``log_joint``; with test data (``dataset.test["Y"]``) ``test_log_density`` (M,) per
draw (E.15, the model's estimator); sample_stats ``acceptance_rate``, ``diverging``, ``step_size``,
``symmetry_acceptance`` (step 3, when used), ``split_merge_acceptance`` (when used), ``full_slots`` (every slot
occupied at some point of the sweep: the truncation bit, so it is recorded, never silent).
"""

import blackjax
import jax
import jax.numpy as jnp
from blackjax.adaptation.step_size import dual_averaging_adaptation
from jax.scipy.special import gammaln

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from zoo.errors import DataError
from zoo.options import Option

__all__ = [
    "SCALE_STEP",
    "SHIFT_STEP",
    "gibbs_sweep",
    "iwmm",
    "iwmm_runner",
    "split_merge",
    "split_merge_moves",
    "summaries",
    "symmetry_moves",
]


def gibbs_sweep(key, labels, X, view):
    """One collapsed Gibbs sweep over points 0..N-1 (E.9). labels (N,) int32 in [0, K); X (N, Q).

    Returns (labels, full): ``full`` is True when some point found no empty slot for a new cluster."""
    stats = view.cluster_stats(X, labels)  # recomputed each sweep, so add/remove rounding cannot accumulate
    eta = view.concentration
    keys = jax.random.split(key, X.shape[0])

    def visit(n, carry):
        labels, stats, full = carry
        x = X[n]
        stats = view.with_point(stats, labels[n], x, -1.0)
        log_pred = view.slot_log_predictives(stats, x)
        occupied = stats.count > 0.5
        empty = ~occupied
        first_empty = empty & (jnp.cumsum(empty) == 1)
        log_w = jnp.where(
            occupied,
            jnp.log(jnp.where(occupied, stats.count, 1.0)) + log_pred,
            jnp.where(first_empty, jnp.log(eta) + log_pred, -jnp.inf),
        )
        new = jax.random.categorical(keys[n], log_w).astype(labels.dtype)
        stats = view.with_point(stats, new, x, 1.0)
        return labels.at[n].set(new), stats, full | ~jnp.any(empty)

    labels, _, full = jax.lax.fori_loop(0, X.shape[0], visit, (labels, stats, jnp.array(False)))
    return labels, full


def split_merge(key, labels, X, view):
    """One sequentially allocated split-merge proposal (SAMS, Dahl 2003), a Metropolis-Hastings move on the
    partition that changes many labels at once where the one-point Gibbs sweep needs a long walk through unlikely
    partitions (docs/sources/duvenaud.md#iwmm-split-merge). labels (N,) int32 in [0, K); X (N, Q); N >= 2 (the
    view's check refuses fewer: a column of one point is constant).

    Two distinct points i, j are drawn. If they share a cluster, split it: i stays, j opens the first empty slot, and
    the cluster's other points, in a random order, join i's or j's part with probability proportional to the part's
    size times the point's predictive given the part so far (E.10). Otherwise merge their clusters, and the same
    allocation, run on the current parts, gives the probability of the reverse split. Accepted with
    p(Z', X) q(Z | Z') / (p(Z, X) q(Z' | Z)) under the CRP and the collapsed NIW marginals (E.4, E.7); a split with no
    empty slot is rejected (the truncation). Returns (labels, accepted)."""
    N = X.shape[0]
    k_i, k_j, k_order, k_alloc, k_accept = jax.random.split(key, 5)
    i = jax.random.randint(k_i, (), 0, N)
    j = jax.random.randint(k_j, (), 0, N - 1)
    j = j + (j >= i)
    c_i, c_j = labels[i], labels[j]
    split = c_i == c_j
    in_union = (labels == c_i) | (labels == c_j)
    part_of = jnp.zeros(N, jnp.int32).at[j].set(1)  # 0: i's part, 1: j's part
    parts = view.cluster_stats(X[jnp.stack([i, j])], jnp.array([0, 1]), num_slots=2)
    order = jax.random.permutation(k_order, N)

    def allocate(t, carry):
        part_of, parts, log_q = carry
        n = order[t]
        moves = in_union[n] & (n != i) & (n != j)
        log_w = jnp.log(jnp.maximum(parts.count, 1.0)) + view.slot_log_predictives(parts, X[n])
        log_p = log_w - jax.nn.logsumexp(log_w)
        drawn = jax.random.categorical(jax.random.fold_in(k_alloc, t), log_w)
        side = jnp.where(split, drawn, labels[n] != c_i).astype(part_of.dtype)
        parts = view.with_point(parts, side, X[n], jnp.where(moves, 1.0, 0.0))
        return part_of.at[n].set(jnp.where(moves, side, part_of[n])), parts, log_q + jnp.where(moves, log_p[side], 0.0)

    part_of, parts, log_q = jax.lax.fori_loop(0, N, allocate, (part_of, parts, jnp.zeros(())))
    merged = jax.tree.map(lambda a: a.sum(0, keepdims=True), parts)
    count_a, count_b = parts.count
    log_split_over_merged = (
        jnp.log(view.concentration)
        + gammaln(count_a)
        + gammaln(count_b)
        - gammaln(count_a + count_b)
        + jnp.sum(view.slot_log_marginals(parts))
        - view.slot_log_marginals(merged)[0]
    )
    log_ratio = jnp.where(split, log_split_over_merged - log_q, log_q - log_split_over_merged)
    empty = jnp.bincount(labels, length=view.max_clusters) == 0
    split_labels = jnp.where(in_union & (part_of == 1), jnp.argmax(empty), labels)  # j's part to the first empty slot
    proposed = jnp.where(split, split_labels, jnp.where(in_union, c_i, labels))
    accepted = (jnp.log(jax.random.uniform(k_accept)) < log_ratio) & (~split | jnp.any(empty))
    return jnp.where(accepted, proposed, labels).astype(labels.dtype), accepted


def split_merge_moves(key, labels, X, view, num_moves: int):
    """``num_moves`` split-merge proposals in a row; returns (labels, the fraction accepted)."""

    def one(labels, key):
        return split_merge(key, labels, X, view)

    labels, accepted = jax.lax.scan(one, labels, jax.random.split(key, num_moves))
    return labels, jnp.mean(accepted.astype(X.dtype))


SCALE_STEP = 0.3  # sd of the log scale factor s of a rescaling proposal
SHIFT_STEP = 0.5  # sd of each coordinate of a shift proposal (latent units; the data are standardised)


def symmetry_moves(key, position, labels, Y, view, num_moves: int):
    """``num_moves`` Metropolis-Hastings rounds, each a rescaling (X e^s, lengthscale e^s) then a shift (X + t),
    s ~ N(0, SCALE_STEP^2), t ~ N(0, SHIFT_STEP^2 I). Both maps form groups whose symmetric proposals give the ratio
    pi(T x) |det T'| / pi(x) (Liu & Sabatti 2000); the warp is invariant under both, so they move along the ridges
    of p(X | Z) p(log theta) that HMC crosses by a slow random walk (docs/sources/duvenaud.md#iwmm-mixing). The full
    log density is evaluated, so exactness does not rest on that invariance. Returns (position, acceptance rate)."""

    def logp(p):
        return view.log_density(p, labels, Y)

    def accept(key, current, current_lp, proposal, log_jacobian):
        proposal_lp = logp(proposal)
        ok = jnp.log(jax.random.uniform(key)) < proposal_lp - current_lp + log_jacobian  # NaN: rejected
        chosen = jax.tree.map(lambda a, b: jnp.where(ok, a, b), proposal, current)
        return chosen, jnp.where(ok, proposal_lp, current_lp), ok

    def one_round(carry, key):
        position, lp = carry
        k_s, k_t, u_s, u_t = jax.random.split(key, 4)
        scaled, log_jacobian = view.rescaled(position, SCALE_STEP * jax.random.normal(k_s))
        position, lp, ok_s = accept(u_s, position, lp, scaled, log_jacobian)
        shift = SHIFT_STEP * jax.random.normal(k_t, position["X"].shape[1:])
        position, lp, ok_t = accept(u_t, position, lp, view.shifted(position, shift), 0.0)
        return (position, lp), 0.5 * (ok_s.astype(float) + ok_t.astype(float))

    (position, _), accepted = jax.lax.scan(one_round, (position, logp(position)), jax.random.split(key, num_moves))
    return position, jnp.mean(accepted)


@program_cache
def iwmm_runner(
    view,
    num_warmup: int,
    num_samples: int,
    num_leapfrog: int,
    target: float,
    num_predictive: int,
    num_symmetry_moves: int = 0,
    num_split_merge: int = 0,
):
    """One chain ``(key, Y, Y_test) -> (draws, stats)`` for a view and static options, as a vmapped program."""
    total = num_warmup + num_samples
    kernel = blackjax.hmc.build_kernel()
    da_init, da_update, _ = dual_averaging_adaptation(target)

    def one_chain(key, Y, Y_test):
        k_init, k_loop, k_test = jax.random.split(key, 3)
        position, labels = view.initial(Y)
        if view.warped:  # chains start apart, so R-hat compares them (the reference code starts every run at X = Y)
            position["X"] = position["X"] + 0.05 * jax.random.normal(k_init, position["X"].shape)
        da = da_init(
            0.001 * jnp.sqrt(Y.shape[0])
        )  # the reference code's 0.001 sqrt(N), docs/sources/duvenaud.md#iwmm-defaults

        def iteration(carry, inputs):
            position, labels, da = carry
            key, i = inputs
            k_gibbs, k_hmc, k_sym = jax.random.split(key, 3)
            k_split = jax.random.fold_in(key, 3)  # not a 4th split: the thesis's sampler keeps its stream
            X = view.latent(position, Y)
            labels, full = gibbs_sweep(k_gibbs, labels, X, view)
            if num_split_merge:
                labels, split_merge_accepted = split_merge_moves(k_split, labels, X, view, num_split_merge)
            acceptance, diverging, step_size = jnp.ones(()), jnp.array(False), jnp.zeros(())
            if view.warped:

                def logdensity(p):
                    return view.log_density(p, labels, Y)

                warm = i < num_warmup
                step_size = jnp.exp(jnp.where(warm, da.log_step_size, da.log_step_size_avg))
                state = blackjax.hmc.init(position, logdensity)
                flat_size = sum(leaf.size for leaf in jax.tree.leaves(position))
                state, info = kernel(k_hmc, state, logdensity, step_size, jnp.ones(flat_size), num_leapfrog)
                position = state.position
                acceptance, diverging = info.acceptance_rate, info.is_divergent
                updated = da_update(da, jnp.nan_to_num(acceptance))
                da = jax.tree.map(lambda new, old: jnp.where(warm, new, old), updated, da)
                if num_symmetry_moves:
                    position, symmetry_acceptance = symmetry_moves(k_sym, position, labels, Y, view, num_symmetry_moves)
            stats = {"acceptance_rate": acceptance, "diverging": diverging, "step_size": step_size, "full_slots": full}
            if view.warped and num_symmetry_moves:
                stats["symmetry_acceptance"] = symmetry_acceptance
            if num_split_merge:
                stats["split_merge_acceptance"] = split_merge_accepted
            return (position, labels, da), ((position, labels), stats)

        keys = jax.random.split(k_loop, total)
        _, ((positions, labelss), stats) = jax.lax.scan(iteration, (position, labels, da), (keys, jnp.arange(total)))
        keep = slice(num_warmup, total)
        positions = jax.tree.map(lambda a: a[keep], positions)
        labelss = labelss[keep]
        stats = jax.tree.map(lambda a: a[keep], stats)
        draws = jax.vmap(lambda p, z: summaries(view, p, z, Y))(positions, labelss)
        if Y_test is not None:
            test_keys = jax.random.split(k_test, num_samples)
            draws["test_log_density"] = jax.lax.map(
                lambda a: view.test_log_density(a[0], a[1], a[2], Y, Y_test, num_predictive),
                (test_keys, positions, labelss),
            )
        return draws, stats

    return vmapped_chains(one_chain)


def summaries(view, position, labels, Y):
    """The posterior sites of one draw (module docstring)."""
    X = view.latent(position, Y)
    out = {
        "labels": labels,
        "num_clusters": jnp.sum(view.cluster_stats(X, labels).count > 0.5),
        "log_latent_density": view.log_latent_density(X, labels),
    }
    if view.warped:
        theta = view.warp_params(position)
        out |= {"X": X, "lengthscale": theta.lengthscale, "variance": theta.variance, "noise": theta.noise}
        out["log_joint"] = view.log_density(position, labels, Y) + view.log_crp(labels)
    return out


@register_engine(
    "iwmm",
    requires={"iwmm"},
    options={
        "num_chains": opt.num_chains(2),
        "num_warmup": opt.num_warmup(500, minimum=1),
        "num_samples": opt.num_samples(500),
        "num_leapfrog": Option("int", 25, "leapfrog steps per HMC trajectory (reference code: 25)", minimum=1),
        "target_accept": opt.target_accept(0.65),
        "num_predictive": Option(
            "int", 200, "draws of the test latent x* per posterior draw in the predictive density (E.15)", minimum=1
        ),
        "num_symmetry_moves": Option(
            "int",
            0,
            "MH rounds per iteration of a rescaling and a shift of X that the warp does not see (0: the thesis's "
            "sampler; docs/sources/duvenaud.md#iwmm-mixing)",
            minimum=0,
        ),
        "num_split_merge": Option(
            "int",
            0,
            "split-merge proposals on the labels per iteration, after the Gibbs sweep (0: the thesis's sampler; "
            "docs/sources/duvenaud.md#iwmm-split-merge)",
            minimum=0,
        ),
    },
    summary="iWMM: collapsed Gibbs on CRP labels (NIW Student-t predictive) alternating with BlackJAX HMC on X, theta",
)
def iwmm(spec, dataset, key, timer, **options) -> EngineOutput:
    view = spec.views["iwmm"]
    Y = jnp.asarray(dataset.observed["Y"])
    view.check(Y)
    Y_test = dataset.test.get("Y")
    if Y_test is not None:
        Y_test = jnp.asarray(Y_test)
        if Y_test.shape[1] != Y.shape[1]:
            raise DataError(f"iwmm: test Y has {Y_test.shape[1]} columns, training Y {Y.shape[1]}")
    runner = iwmm_runner(
        view,
        options["num_warmup"],
        options["num_samples"],
        options["num_leapfrog"],
        float(options["target_accept"]),
        options["num_predictive"],
        options["num_symmetry_moves"],
        options["num_split_merge"],
    )
    keys = jax.random.split(key, options["num_chains"])
    draws, stats = runner.run(timer, keys, Y, Y_test, sequential=True)
    total = options["num_chains"] * (options["num_warmup"] + options["num_samples"])
    return EngineOutput(
        posterior=draws,
        sample_stats=stats,
        num_grad_evals=total * (options["num_leapfrog"] + 1) if view.warped else 0,
    )
