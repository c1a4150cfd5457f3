"""DAGP's NumPyro program and guide (Kaiser 2021, eqs. 3.1-3.12): the SVGP modes, the assignment GPs, the
Concrete-relaxed assignments and the deep modes' inner layers."""

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo import deep_gp, gp
from zoo import sparse as sp
from zoo.dagp.config import NOISE_SEPARATION, DagpConfig
from zoo.dagp.objective import concrete_sample, expected_log_lik, relaxed_objective, sampled_logits
from zoo.errors import DataError
from zoo.kernels import SquaredExponential

Array = Any
TRIMMED_LOGIT = 4.0  # assignments started from labels: q(a_n) starts at softmax(+-4), 0.9997 on the labelled mode
INITIAL_KERNEL = SquaredExponential(1.0, 1.0)  # the guide's starting variance and lengthscale of every GP
Q_SCALE_INIT = 0.1  # initial Cholesky factor of every q(v): S = 0.01 I


def _positive(name, value, shape):
    return numpyro.param(
        f"{name}_map", jnp.broadcast_to(jnp.asarray(value, float), shape), constraint=constraints.positive
    )


def _hyper_sites(config: DagpConfig, D: int):
    """Sites: ``lengthscale`` (S P, D), ``variance`` (S P,) of the S signal modes' P output GPs (index j P + p);
    ``alpha_lengthscale`` (K, D), ``alpha_variance`` (K,); ``noise`` (K P,) (index k P + p) with per-mode LogNormal
    priors (config.noise_prior); heteroscedastic: ``noise_lengthscale`` (K P, D), ``noise_variance`` (K P,) of the
    log-noise GPs g_kp."""
    S, K, P = len(config.signal_modes), config.num_modes, config.outputs
    sites = {
        "lengthscale": numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([S * P, D]).to_event(2)),
        "variance": numpyro.sample("variance", dist.LogNormal(0.0, 1.0).expand([S * P]).to_event(1)),
        "alpha_lengthscale": numpyro.sample("alpha_lengthscale", dist.LogNormal(0.0, 1.0).expand([K, D]).to_event(2)),
        "alpha_variance": numpyro.sample("alpha_variance", dist.LogNormal(0.0, 1.0).expand([K]).to_event(1)),
    }
    loc, scale = (jnp.repeat(jnp.array(p), P) for p in zip(*config.noise_prior, strict=True))
    sites["noise"] = numpyro.sample("noise", dist.LogNormal(loc, scale).to_event(1))
    if config.heteroscedastic:
        prior = dist.LogNormal(0.0, 1.0)
        sites["noise_lengthscale"] = numpyro.sample("noise_lengthscale", prior.expand([K * P, D]).to_event(2))
        sites["noise_variance"] = numpyro.sample("noise_variance", prior.expand([K * P]).to_event(1))
    return sites


def check_targets(config: DagpConfig, X, y, Z) -> None:
    """DataError for shapes that do not fit: y (N,) for one output, (N, P) for P > 1 (shapes only: runs on tracers)."""
    if config.outputs == 1:
        sp.check_sparse_data(X, y, Z)
        return
    sp.check_sparse_data(X, None, Z)
    expected = (jnp.shape(X)[0], config.outputs)
    if y is not None and jnp.shape(y) != expected:
        raise DataError(f"dagp: with outputs = {config.outputs}, y must be (N, P) = {expected}; got {jnp.shape(y)}.")


def dagp_program(X, Z, y=None, batch_size=None, config: DagpConfig = NOISE_SEPARATION):
    """DAGP (eqs. 3.1-3.3, 3.7; with P outputs and heteroscedastic noise, eqs. 5.5-5.8): X (N, D), Z (M, D) initial
    inducing inputs of every GP, y (N,) or (N, P).

    Sites: hyperparameters (see ``_hyper_sites``), ``v`` (S P, M) and ``v_alpha`` (K, M) whitened inducing values
    (heteroscedastic: ``noise_v`` (K P, M) of the log-noise GPs); in the plate ``data``: ``alpha_eps`` (B, K),
    ``assignment_gumbel`` (B, K) (heteroscedastic: ``noise_eps`` (B, K P), the draw of g_kp(x_n)), and the
    likelihood/assignment factors (y observed) or ``y`` drawn from the mixture given v (y = None, prior predictive).
    ``v`` belongs to each signal mode's last layer; a deep mode adds its inner layers' sites (``inner_layer_sites``)
    and, in the plate, their ``mode{j}_eps_{l}`` (B, D): the last layer then sees the sampled inner output instead of
    x (eqs. 3.9-3.12). Params: ``inducing_inputs`` (S P, M, D), ``alpha_inducing_inputs`` (K, M, D),
    ``assignment_logits`` (N, K) (heteroscedastic: ``noise_inducing_inputs`` (K P, M, D)).
    """
    check_targets(config, X, y, Z)
    (N, D), M, K, S, P = X.shape, Z.shape[0], config.num_modes, len(config.signal_modes), config.outputs
    h = _hyper_sites(config, D)
    Zf = numpyro.param("inducing_inputs", jnp.broadcast_to(Z, (S * P, M, D)))
    Za = numpyro.param("alpha_inducing_inputs", jnp.broadcast_to(Z, (K, M, D)))
    v = numpyro.sample("v", dist.Normal(0.0, 1.0).expand([S * P, M]).to_event(2))
    v_alpha = numpyro.sample("v_alpha", dist.Normal(0.0, 1.0).expand([K, M]).to_event(2))
    if config.heteroscedastic:
        Zn = numpyro.param("noise_inducing_inputs", jnp.broadcast_to(Z, (K * P, M, D)))
        v_noise = numpyro.sample("noise_v", dist.Normal(0.0, 1.0).expand([K * P, M]).to_event(2))
    inner = [inner_layer_sites(j, config.depths[k] - 1, Z) for j, k in enumerate(config.signal_modes)]
    logits_all = numpyro.param("assignment_logits", jnp.zeros((N, K)))
    with numpyro.plate("data", N, subsample_size=batch_size) as idx:
        Xb = X[idx]
        inputs = [through_inner_layers(j, layers, Xb) for j, layers in enumerate(inner)]
        eps = numpyro.sample("alpha_eps", dist.Normal(0.0, 1.0).expand([K]).to_event(1))
        alpha = jnp.stack(
            [
                sampled_logits(
                    SquaredExponential(h["alpha_variance"][k], h["alpha_lengthscale"][k]),
                    Za[k],
                    v_alpha[k],
                    Xb,
                    eps[:, k],
                )
                for k in range(K)
            ],
            -1,
        )
        gumbel = numpyro.sample("assignment_gumbel", dist.Gumbel(0.0, 1.0).expand([K]).to_event(1))
        if config.heteroscedastic:
            noise_eps = numpyro.sample("noise_eps", dist.Normal(0.0, 1.0).expand([K * P]).to_event(1))
            log_scale = jnp.stack(
                [sampled_logits(noise_kernel(h, i), Zn[i], v_noise[i], Xb, noise_eps[:, i]) for i in range(K * P)],
                -1,
            )
            noise = h["noise"] * jnp.exp(log_scale) + config.noise_floor
        else:
            noise = jnp.broadcast_to(h["noise"] + config.noise_floor, (Xb.shape[0], K * P))
        if y is None:
            numpyro.sample("y", prior_predictive_mixture(config, h, Zf, v, inputs, alpha, noise))
            return
        log_lik = mode_log_liks(config, h, Zf, v, inputs, y[idx], noise)
        logits = logits_all[idx]
        assignment = concrete_sample(logits, gumbel, config.temperature)
        lik, assign = relaxed_objective(log_lik, alpha, assignment, logits, config.assignment_entropy)
        numpyro.factor("likelihood", lik)
        numpyro.factor("assignment", assign)


def noise_kernel(h, i):
    """The SE kernel of log-noise GP i = k P + p (heteroscedastic)."""
    return SquaredExponential(h["noise_variance"][i], h["noise_lengthscale"][i])


def inner_layer_sites(j: int, count: int, Z) -> list[tuple[SquaredExponential, Array, Array]]:
    """Signal mode j's inner deep-GP layers l = 1..count (DSVI, identity mean, width D) as (kernel, inducing inputs,
    whitened v): ``deep_gp.layer_sites`` with sites named ``mode{j}_lengthscale_{l}``, ``mode{j}_v_{l}`` etc."""
    return [deep_gp.layer_sites(layer, Z.shape[1], Z, prefix=f"mode{j}_") for layer in range(1, count + 1)]


def through_inner_layers(j: int, layers: list, H) -> Array:
    """The draw of mode j's inner layers at H (B, D) -> (B, D) (eq. 2.88), with auxiliary ``mode{j}_eps_{l}`` ~ N(0, 1)
    in model and guide (they cancel from the ELBO, as the other auxiliary noise here); H itself for a shallow mode."""
    for layer, (kernel, Zl, v) in enumerate(layers, start=1):
        eps = numpyro.sample(f"mode{j}_eps_{layer}", dist.Normal(0.0, 1.0).expand([H.shape[1]]).to_event(1))
        H = deep_gp.inner_layer_sample(kernel, Zl, v, H, eps)
    return H


def mode_kernel(h, i):
    """The SE kernel of signal GP i = j P + p (signal mode j, output p)."""
    return SquaredExponential(h["variance"][i], h["lengthscale"][i])


def _columns(config: DagpConfig, y):
    """y as P columns (B,) each."""
    return [y] if config.outputs == 1 else [y[:, p] for p in range(config.outputs)]


def mode_log_liks(config, h, Zf, v, inputs, y, noise) -> Array:
    """(B, K) per-mode expected log-likelihoods given v, summed over the P outputs (one assignment per point);
    inputs: each signal mode's last-layer input (B, D); y (B,) or (B, P); noise: variances (B, K P)."""
    columns, j, P = [], 0, config.outputs
    for k, kind in enumerate(config.kernels):
        total = 0.0
        for p, y_p in enumerate(_columns(config, y)):
            s2 = noise[:, k * P + p]
            if kind == "se":
                i = j * P + p
                total = total + expected_log_lik(kind, mode_kernel(h, i), Zf[i], v[i], inputs[j], y_p, s2)
            else:
                total = total + expected_log_lik(kind, None, None, None, None, y_p, s2)
        j += kind == "se"
        columns.append(total)
    return jnp.stack(columns, -1)


def prior_predictive_mixture(config, h, Zf, v, inputs, alpha, noise):
    """y_n | v, alpha_n: sum_k softmax(alpha_n)_k N(a_n^T v^(k), k~_nn + s_k^2) per output (white modes:
    N(0, s_k^2)); noise (B, K P); one output: a scalar mixture, P outputs: a mixture of diagonal Gaussians."""
    B, P = alpha.shape[0], config.outputs
    means, variances, j = [], [], 0
    for k, kind in enumerate(config.kernels):
        for p in range(P):
            if kind == "se":
                i = j * P + p
                q = sp.WhitenedQ(v[i], jnp.zeros((v.shape[1],) * 2))
                pred = sp.sparse_predict(mode_kernel(h, i), Zf[i], q, inputs[j])
                means.append(pred.mean)
                variances.append(pred.cov + noise[:, k * P + p])
            else:
                means.append(jnp.zeros(B))
                variances.append(noise[:, k * P + p])
        j += kind == "se"
    shape = (B, config.num_modes) if P == 1 else (B, config.num_modes, P)
    mean, var = jnp.stack(means, -1).reshape(shape), jnp.stack(variances, -1).reshape(shape)
    components = dist.Normal(mean, jnp.sqrt(var))
    if P > 1:
        components = components.to_event(1)
    return dist.MixtureSameFamily(dist.Categorical(logits=alpha), components)


def initial_q_means(key, config: DagpConfig, Z, y=None) -> Array:
    """Initial whitened q(v^(k)) means (S P, M) of the S signal modes' P output GPs: N(0, init_spread^2) noise, plus
    for mode_init="levels" the constant function at the quantile (j + 1/2) / S of each output for signal mode j,
    v = L^-1 c 1 with L the Cholesky of the guide's initial kernel at Z (f(Z) = L v). Why "levels": identical modes
    started near zero both fit all the data at first, and SVI then settles in "crossing" optima where each mode
    follows one curve here and another there (tests/test_dagp.py, two curves: objective -127 ... -260 from 48 random
    starts, -103 from levels). They do not help when the modes' curves cross (kaiser_dagp_multimodal). Without y
    (prior predictive) the levels are skipped."""
    S, M, P = len(config.signal_modes), Z.shape[0], config.outputs
    noise = config.init_spread * jax.random.normal(key, (S * P, M))
    if config.mode_init != "levels" or y is None:
        return noise
    columns = jnp.asarray(y).reshape(jnp.shape(y)[0], P)
    levels = jnp.quantile(columns, (jnp.arange(S) + 0.5) / S, axis=0).reshape(S * P)  # index j P + p
    L = gp.cholesky(INITIAL_KERNEL(Z))
    return jax.scipy.linalg.solve_triangular(L, jnp.broadcast_to(levels[:, None], (S * P, M)).T, lower=True).T + noise


def dagp_guide(X, Z, y=None, batch_size=None, config: DagpConfig = NOISE_SEPARATION):
    """Point masses on the hyperparameters; q(v) = N(m, LL^T) per signal GP (m from ``initial_q_means``) and
    q(v_alpha) = N(0 start, LL^T) (heteroscedastic: q(noise_v) likewise), all with L = 0.1 I at the start; the
    auxiliary alpha_eps ~ N(0, 1), Gumbel(0, 1) (and noise_eps ~ N(0, 1)) as in the model."""
    (N, D), M, K, S, P = X.shape, Z.shape[0], config.num_modes, len(config.signal_modes), config.outputs
    values = {
        "lengthscale": _positive("lengthscale", INITIAL_KERNEL.lengthscale, (S * P, D)),
        "variance": _positive("variance", INITIAL_KERNEL.variance, (S * P,)),
        "alpha_lengthscale": _positive("alpha_lengthscale", INITIAL_KERNEL.lengthscale, (K, D)),
        "alpha_variance": _positive("alpha_variance", INITIAL_KERNEL.variance, (K,)),
        "noise": _positive("noise", jnp.repeat(jnp.array(config.noise_init), P), (K * P,)),
    }
    if config.heteroscedastic:
        values["noise_lengthscale"] = _positive("noise_lengthscale", INITIAL_KERNEL.lengthscale, (K * P, D))
        values["noise_variance"] = _positive("noise_variance", INITIAL_KERNEL.variance, (K * P,))
    for name, value in values.items():
        numpyro.sample(name, dist.Delta(value, event_dim=value.ndim))
    m = numpyro.param("q_mean", lambda key: initial_q_means(key, config, Z, y))
    # Low initial covariance (docs/sources/kaiser.md#deep-gp-defaults): S = I would start every point with the
    # f-variance penalty k_nn / (2 s^2) of the prior and hand the data to the outlier mode before the signal can fit.
    L = numpyro.param(
        "q_scale_tril",
        Q_SCALE_INIT * jnp.broadcast_to(jnp.eye(M), (S * P, M, M)),
        constraint=constraints.lower_cholesky,
    )
    numpyro.sample("v", dist.MultivariateNormal(m, scale_tril=L).to_event(1))
    _zero_mean_q("alpha_q", "v_alpha", K, M)
    if config.heteroscedastic:
        _zero_mean_q("noise_q", "noise_v", K * P, M)
    inner_counts = [config.depths[k] - 1 for k in config.signal_modes]
    for j, count in enumerate(inner_counts):
        inner_layer_guide(j, count, M, D)
    with numpyro.plate("data", N, subsample_size=batch_size):
        numpyro.sample("alpha_eps", dist.Normal(0.0, 1.0).expand([K]).to_event(1))
        numpyro.sample("assignment_gumbel", dist.Gumbel(0.0, 1.0).expand([K]).to_event(1))
        if config.heteroscedastic:
            numpyro.sample("noise_eps", dist.Normal(0.0, 1.0).expand([K * P]).to_event(1))
        for j, count in enumerate(inner_counts):
            for layer in range(1, count + 1):
                numpyro.sample(f"mode{j}_eps_{layer}", dist.Normal(0.0, 1.0).expand([D]).to_event(1))


def _zero_mean_q(prefix: str, site: str, count: int, M: int) -> None:
    """q(site) = N(m, LL^T) per GP, m = 0 and L = 0.1 I at the start: params ``{prefix}_mean`` (count, M) and
    ``{prefix}_scale_tril`` (count, M, M)."""
    m = numpyro.param(f"{prefix}_mean", jnp.zeros((count, M)))
    L = numpyro.param(
        f"{prefix}_scale_tril",
        Q_SCALE_INIT * jnp.broadcast_to(jnp.eye(M), (count, M, M)),
        constraint=constraints.lower_cholesky,
    )
    numpyro.sample(site, dist.MultivariateNormal(m, scale_tril=L).to_event(1))


def inner_layer_guide(j: int, count: int, M: int, D: int) -> None:
    """q of mode j's inner layers as in ``deep_gp.dsvi_guide`` (``deep_gp.layer_guide``): point masses on their
    hyperparameters and q(v_l) = N(0, 1e-5 I) per output at the start (each inner layer starts as the identity map)."""
    for layer in range(1, count + 1):
        deep_gp.layer_guide(layer, D, M, D, math.sqrt(deep_gp.INNER_Q_VARIANCE), prefix=f"mode{j}_")


def assignment_logits_from_labels(labels, num_modes: int) -> Array:
    """Starting assignment logits (N, K) that put q(a_n) on mode labels[n] (0.9997 at K = 2): the ``svi`` engine's
    ``init_params={"assignment_logits": ...}`` for assignments from, e.g., trimmed GP fits
    (``inference.applications.trimmed.peel``)."""
    return TRIMMED_LOGIT * (2.0 * jax.nn.one_hot(jnp.asarray(labels), num_modes) - 1.0)
