"""The iWMM as a NumPyro program, and the view the ``iwmm`` engine samples it through.

Duvenaud 2014, sec. 7.3 and App. E (E.8): p(Y, X, Z | theta) = p(Y | X, theta) p(X | Z) p(Z | eta), with the
cluster parameters integrated out (E.4) and, for the iGMM baseline, the identity warp X = Y. The labels Z are a
fixed-size integer array (N,) in [0, K): a point joining a new cluster takes an empty slot.

Kernel hyperparameters are sampled on the log scale under wide normal priors (the thesis puts improper uniform
priors on them; docs/sources/duvenaud.md#iwmm-defaults).
"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo.errors import DataError, OptionError
from zoo.iwmm import gplvm, niw

Array = jax.Array

# log-scale priors (mean, sd) of the warp's hyperparameters, on standardised Y.
LOG_PRIORS = {"log_lengthscale": (0.0, 2.0), "log_variance": (0.0, 2.0), "log_noise": (-3.0, 2.0)}


@dataclass(frozen=True)
class IwmmView:
    """What the ``iwmm`` engine needs: the model's pieces for a collapsed Gibbs sweep (NIW statistics and
    predictives) and the continuous log density of (X, log theta) given the labels.

    warped: False for the iGMM (no continuous variables: X = Y). Sizes: Y (N, D), X (N, Q), labels (N,).
    """

    warped: bool
    latent_dim: int | None
    max_clusters: int
    concentration: float
    prior_r: float
    prior_nu: float | None

    def Q(self, Y: Array) -> int:
        return Y.shape[1] if self.latent_dim is None else self.latent_dim

    def prior(self, Q: int) -> niw.NIWPrior:
        return niw.default_prior(Q, self.prior_r, self.prior_nu)

    def check(self, Y) -> None:
        """Bad data or a latent dimension that does not fit it: an error before anything is compiled."""
        N, D = Y.shape
        Q = self.Q(Y)
        if not self.warped and Q != D:
            raise OptionError(f"iwmm with warping='identity' has X = Y, so latent_dim must be D = {D}, got {Q}")
        if self.prior_nu is not None and self.prior_nu <= Q - 1:
            raise OptionError(f"iwmm: prior_nu must exceed Q - 1 = {Q - 1}, got {self.prior_nu}")
        scale = jnp.std(jnp.asarray(Y), axis=0)
        if bool(jnp.any(scale <= 0.0)):
            raise DataError(f"iwmm: column(s) {jnp.flatnonzero(scale <= 0.0).tolist()} of Y are constant")

    def initial(self, Y: Array) -> tuple[dict, Array]:
        """Start (docs/sources/duvenaud.md#iwmm-defaults): X = Y when Q = D, else Y's leading Q principal
        components; log theta = (0, 0, log 0.1); one cluster."""
        Q = self.Q(Y)
        labels = jnp.zeros(Y.shape[0], dtype=jnp.int32)
        if not self.warped:
            return {}, labels
        if Y.shape[1] == Q:
            X = Y
        else:
            _, _, Vt = jnp.linalg.svd(Y - Y.mean(0), full_matrices=False)
            X = (Y - Y.mean(0)) @ Vt[:Q].T
            X = X / X.std(0)
        position = {
            "X": X,
            "log_lengthscale": jnp.zeros(Q),
            "log_variance": jnp.zeros(()),
            "log_noise": jnp.log(0.1) * jnp.ones(()),
        }
        return position, labels

    def cluster_stats(self, X: Array, labels: Array, num_slots: int | None = None) -> niw.ClusterStats:
        """NIW sufficient statistics of the K slots (or ``num_slots``): count (K,), total (K, Q), scatter (K, Q, Q)."""
        return niw.stats_of(X, labels, self.max_clusters if num_slots is None else num_slots)

    @staticmethod
    def with_point(stats: niw.ClusterStats, k: Array, x: Array, sign: float) -> niw.ClusterStats:
        return niw.with_point(stats, k, x, sign)

    def slot_log_predictives(self, stats: niw.ClusterStats, x: Array) -> Array:
        """log p(x | X_k) (K,) for every slot (E.10); the prior predictive for an empty one."""
        return niw.slot_log_predictives(self.prior(x.shape[0]), stats, x)

    def slot_log_marginals(self, stats: niw.ClusterStats) -> Array:
        """log p(X_k) (K,) of every slot's points, cluster parameters integrated out (E.4); 0 for an empty slot."""
        return jax.vmap(lambda s: niw.log_marginal(self.prior(s.total.shape[0]), s))(stats)

    def log_crp(self, labels: Array) -> Array:
        return niw.log_crp(labels, self.concentration, self.max_clusters)

    def log_latent_density(self, X: Array, labels: Array) -> Array:
        """log p(X | Z) + log p(Z) (E.4, E.7)."""
        return niw.log_mixture_marginal(self.prior(X.shape[1]), X, labels, self.max_clusters) + self.log_crp(labels)

    def latent(self, position: dict, Y: Array) -> Array:
        return position["X"] if self.warped else Y

    @staticmethod
    def warp_params(position: dict) -> gplvm.WarpParams:
        return gplvm.WarpParams(
            jnp.exp(position["log_lengthscale"]), jnp.exp(position["log_variance"]), jnp.exp(position["log_noise"])
        )

    @staticmethod
    def rescaled(position: dict, log_factor: Array) -> tuple[dict, Array]:
        """(X e^s, log lengthscale + s) and log |Jacobian| = s N Q: the SE-ARD warp sees only X / lengthscale, so
        this moves along a ridge of the posterior the HMC step crosses slowly (docs/sources/duvenaud.md#iwmm-mixing)."""
        X = position["X"]
        moved = position | {"X": X * jnp.exp(log_factor), "log_lengthscale": position["log_lengthscale"] + log_factor}
        return moved, log_factor * X.size

    @staticmethod
    def shifted(position: dict, shift: Array) -> dict:
        """X + shift (Q,) for every point: the stationary warp does not see it (Jacobian 1)."""
        return position | {"X": position["X"] + shift}

    def log_density(self, position: dict, labels: Array, Y: Array) -> Array:
        """log p(Y | X, theta) + log p(X | Z) + log p(log theta): the target of the HMC step given Z."""
        X = self.latent(position, Y)
        value = niw.log_mixture_marginal(self.prior(X.shape[1]), X, labels, self.max_clusters)
        if self.warped:
            value += gplvm.log_likelihood(Y, X, self.warp_params(position))[0]
            for name, (mean, sd) in LOG_PRIORS.items():
                value += jnp.sum(jax.scipy.stats.norm.logpdf(position[name], mean, sd))
        return value

    def test_log_density(self, key: Array, position: dict, labels: Array, Y: Array, Y_test: Array, num: int) -> Array:
        """log p(y* | X, Z, theta) (M,) at test points Y_test (M, D) for one posterior draw (E.15).

        iWMM: ``num`` draws of z* from the CRP's predictive weights and x* from that cluster's Student-t predictive
        (steps 1-4), then the mean of the GP predictive Gaussians N(y* | m(x*), v(x*) I) (step 5). iGMM: y* = x*, so
        the same mixture is evaluated exactly (a mixture of Student-t densities)."""
        X = self.latent(position, Y)
        N, Q = X.shape
        prior = self.prior(Q)
        stats = niw.stats_of(X, labels, self.max_clusters)
        weights = _predictive_weights(stats.count, self.concentration)  # (K,), a new cluster in the first empty slot
        if not self.warped:
            log_t = jax.vmap(lambda y: niw.slot_log_predictives(prior, stats, y))(Y_test)  # (M, K)
            return jax.nn.logsumexp(log_t + jnp.log(weights), axis=1)
        k_z, k_x = jax.random.split(key)
        z = jax.random.choice(k_z, self.max_clusters, (num,), p=weights)
        keys = jax.random.split(k_x, num)
        x_star = jax.vmap(lambda k, c: niw.sample_predictive(k, prior, jax.tree.map(lambda s: s[c], stats), 1)[0])(
            keys, z
        )
        mean, var = gplvm.predictive(Y, X, self.warp_params(position), x_star)  # (num, D), (num,)
        D = Y.shape[1]
        sq = jnp.sum((Y_test[:, None, :] - mean[None]) ** 2, -1)  # (M, num)
        log_g = -0.5 * (D * jnp.log(2.0 * jnp.pi * var)[None] + sq / var[None])
        return jax.nn.logsumexp(log_g, axis=1) - jnp.log(num)


def _predictive_weights(counts: Array, eta: float) -> Array:
    """CRP predictive weights (K,): N_c / (N + eta) per occupied slot, eta / (N + eta) on the first empty slot (E.15
    step 1); with no empty slot the new-cluster mass is dropped and the rest renormalised (truncation)."""
    empty = counts == 0
    first_empty = empty & (jnp.cumsum(empty) == 1)
    w = counts + eta * first_empty
    return w / jnp.sum(w)


def iwmm_program(Y: Array, *, view: IwmmView) -> None:
    """The iWMM (or iGMM) joint E.8 as a NumPyro program: z (N,) over K slots with the CRP prior (E.7) as a factor,
    X (N, Q) and the log hyperparameters as sites, p(X | Z) (E.4) and p(Y | X, theta) (7.5) as factors.

    Y (N, D) must be given: prior draws come from ``simulate``."""
    if Y is None:
        raise DataError("iwmm: the program needs Y; draw from the prior with the model's simulate")
    N, D = Y.shape
    Q = view.Q(Y)
    K = view.max_clusters
    # z is a site with a sampleable (uniform) base, so NumPyro's HMCGibbs can initialise it; the factor replaces the
    # uniform's log N log(1/K) by the CRP's log p(Z | eta) (E.7), so the joint is exactly E.8.
    z = numpyro.sample("z", dist.Categorical(probs=jnp.full(K, 1.0 / K)).expand([N]).to_event(1))
    numpyro.factor("crp", niw.log_crp(z, view.concentration, K) + N * jnp.log(K))
    if not view.warped:
        numpyro.factor("latent_mixture", niw.log_mixture_marginal(view.prior(Q), Y, z, K))
        return
    X = numpyro.sample("X", dist.ImproperUniform(constraints.real, (), (N, Q)))
    position = {"X": X}
    for name, (mean, sd) in LOG_PRIORS.items():
        shape = (Q,) if name == "log_lengthscale" else ()
        position[name] = numpyro.sample(name, dist.Normal(mean, sd).expand(shape).to_event(len(shape)))
    numpyro.factor("latent_mixture", niw.log_mixture_marginal(view.prior(Q), X, z, K))
    numpyro.factor("warp", gplvm.log_likelihood(Y, X, view.warp_params(position))[0])
