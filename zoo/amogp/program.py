"""AMO-GP's NumPyro programs: the NVC bound as a factor (engine ``nvc``) and DSVI (engine ``svi``, guide="model").

Data: X (N, K) inputs, out (N,) the output index of each point (integers 0..D-1 stored as floats), Z (M, K) initial
inducing inputs of every alignment and, per output, of the shared layer (M D inducing points, labelled by output),
y (N,). Both programs share the hyperparameter sites and their priors (``hyper_sites``; config.PRIORS):
    align_lengthscale_d (K,), align_variance_d, align_noise_d       (free alignments d)
    cp_variance (1, D), cp_lengthscale (1, D, K)                     (one latent process, as AMO-GP)
    cp_noise                                                         (when some warping is free)
    warp_lengthscale_d (1,), warp_variance_d                         (free warpings d)
    noise (D,)                                                       (likelihood)
and name the variational parameters alike: ``align_Z_d``, ``align_q_mean_d`` (K, M), ``align_q_tril_d``;
``cp_Z`` (D M, K), ``cp_q_mean`` (D M,), ``cp_q_tril``; ``warp_Z_d`` (Mg, 1), ``warp_q_mean_d`` (1, Mg),
``warp_q_tril_d``. q means start at 0, i.e. at the identity alignments and warpings and f = 0.
"""

import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo.amogp import config
from zoo.amogp.bound import bound_pieces
from zoo.amogp.layers import AMOGP, CPLayer, SELayer
from zoo.amogp.sampling import cp_projection, se_projection
from zoo.errors import DataError, OptionError
from zoo.kernels import SquaredExponential
from zoo.multioutput.convolution import ConvolutionProcess

Array = Any
# Floor on the diagonal of every q(v) Cholesky factor under DSVI (as zoo/deep_gp.py's Q_SCALE_FLOOR, same reason).
Q_SCALE_FLOOR = 1e-6


DEFAULT_WARP_PRIOR = (config.PRIORS["warp_variance"][0], config.PRIORS["warp_lengthscale"][0])


class Structure(NamedTuple):
    """Which layers exist: D outputs; the outputs whose alignment / warping is learnt (the others are identities);
    the medians (variance, lengthscale) of the warpings' priors (option ``warp_prior``)."""

    num_outputs: int
    free_alignments: tuple[int, ...]
    free_warpings: tuple[int, ...]
    warp_prior: tuple[float, float] = DEFAULT_WARP_PRIOR


def structure_from(num_outputs: int, fixed_alignments, fixed_warpings, warp_prior=DEFAULT_WARP_PRIOR) -> Structure:
    """The Structure of the options, or OptionError: D >= 2, indices in range, at least one fixed alignment and one
    fixed warping (identifiability, sec. 4.2), two positive warping prior medians."""
    D = int(num_outputs)
    if D < 2:
        raise OptionError(f"amogp: AMO-GP aligns several outputs; num_outputs must be >= 2, got {D}.")
    for name, fixed in (("fixed_alignments", fixed_alignments), ("fixed_warpings", fixed_warpings)):
        bad = [i for i in fixed if not 0 <= i < D]
        if bad:
            raise OptionError(f"amogp: {name} {bad} are not outputs 0..{D - 1}.")
        if not fixed:
            raise OptionError(f"amogp: {name} must name at least one output (identifiability, Kaiser sec. 4.2).")
    if len(warp_prior) != 2 or min(warp_prior) <= 0:
        raise OptionError(f"amogp: warp_prior must be two positive medians (variance, lengthscale), got {warp_prior}.")
    free = lambda fixed: tuple(d for d in range(D) if d not in set(fixed))  # noqa: E731
    return Structure(D, free(fixed_alignments), free(fixed_warpings), tuple(float(w) for w in warp_prior))


def hyper_sites(structure: Structure, K: int) -> list[tuple[str, str, tuple[int, ...]]]:
    """(site name, prior key, shape) of every hyperparameter site."""
    D = structure.num_outputs
    sites = []
    for d in structure.free_alignments:
        sites += [(f"align_lengthscale_{d}", "align_lengthscale", (K,))]
        sites += [(f"align_variance_{d}", "align_variance", ()), (f"align_noise_{d}", "align_noise", ())]
    sites += [("cp_variance", "cp_variance", (1, D)), ("cp_lengthscale", "cp_lengthscale", (1, D, K))]
    if structure.free_warpings:
        sites += [("cp_noise", "cp_noise", ())]
    for d in structure.free_warpings:
        sites += [(f"warp_lengthscale_{d}", "warp_lengthscale", (1,)), (f"warp_variance_{d}", "warp_variance", ())]
    return sites + [("noise", "noise", (D,))]


def prior_loc_scale(structure: Structure, key: str) -> tuple[float, float]:
    """(mu, sigma) of a site's LogNormal prior: config.PRIORS, the warpings' medians from the structure."""
    loc, scale = config.prior_loc_scale(key)
    if key in ("warp_variance", "warp_lengthscale"):
        loc = math.log(structure.warp_prior[0 if key == "warp_variance" else 1])
    return loc, scale


def prior_medians(structure: Structure, K: int) -> dict[str, np.ndarray]:
    """Every hyperparameter at its prior median (where the DSVI guide starts; ``nvc`` starts at the median of 15
    prior draws, inference/optimisation/nvc.py's ``PointGuide``)."""
    return {
        name: np.full(shape, np.exp(prior_loc_scale(structure, key)[0]))
        for name, key, shape in hyper_sites(structure, K)
    }


def _sample_hypers(structure: Structure, K: int) -> dict[str, Array]:
    values = {}
    for name, key, shape in hyper_sites(structure, K):
        loc, scale = prior_loc_scale(structure, key)
        values[name] = numpyro.sample(name, dist.LogNormal(loc, scale).expand(shape).to_event(len(shape)))
    return values


def check_data(X: Array, out: Array, Z: Array, y: Array | None, num_outputs: int, every_output: bool = True) -> None:
    """DataError for output indices that are not integers 0..D-1, outputs without points (``every_output``: the
    training data; a test set may hold some outputs only), or mismatched sizes (on concrete arrays;
    ``spec.validate`` runs it before anything is compiled)."""
    X, out, Z = np.asarray(X), np.asarray(out), np.asarray(Z)
    if out.shape != (X.shape[0],):
        raise DataError(f"amogp: out has shape {out.shape}; expected ({X.shape[0]},), one output index per row of X.")
    if y is not None and np.shape(y) != (X.shape[0],):
        raise DataError(f"amogp: y has shape {np.shape(y)}; expected ({X.shape[0]},).")
    if Z.ndim != 2 or Z.shape[1] != X.shape[1]:
        raise DataError(f"amogp: Z has shape {Z.shape}; expected (M, {X.shape[1]}) like X.")
    if not np.all(out == np.round(out)) or out.min() < 0 or out.max() > num_outputs - 1:
        raise DataError(
            f"amogp: out must hold output indices 0..{num_outputs - 1}; got values in [{out.min()}, {out.max()}]."
        )
    missing = sorted(set(range(num_outputs)) - set(np.round(out).astype(int).tolist()))
    if missing and every_output:
        raise DataError(f"amogp: outputs {missing} have no data points (num_outputs = {num_outputs}).")


def _warp_init(y: Array | None, num: int) -> Array:
    """Initial inducing inputs of a warping: quantiles of y (the warping's input f_d lives on y's scale)."""
    if y is None:
        return jnp.linspace(-1.5, 1.5, num)[:, None]
    return jnp.quantile(y, jnp.linspace(0.02, 0.98, num))[:, None]


def _tril_param(name: str, shape: tuple[int, ...], scale: float) -> Array:
    M = shape[-1]
    return numpyro.param(name, scale * jnp.broadcast_to(jnp.eye(M), shape), constraint=constraints.lower_cholesky)


def nvc_program(X, out, Z, y=None, num_layers=3, *, structure: Structure):
    """AMO-GP under NVC: log p(theta) + the bound (``bound.nvc_bound``): y ~ N(mean, s2_y) carries the data fit, the
    factor ``nvc_terms`` the trace penalties and KLs (as zoo/nvc.py). ``num_layers`` is the engine's option; AMO-GP
    is three layers deep by construction."""
    if num_layers != 3:
        raise OptionError(f"amogp: the model has three layers (alignment, shared, warping); num_layers={num_layers}.")
    K, M, D = X.shape[1], Z.shape[0], structure.num_outputs
    hyp = _sample_hypers(structure, K)
    alignments, warpings = [None] * D, [None] * D
    for d in structure.free_alignments:
        alignments[d] = SELayer(
            SquaredExponential(hyp[f"align_variance_{d}"], hyp[f"align_lengthscale_{d}"]),
            numpyro.param(f"align_Z_{d}", Z),
            numpyro.param(f"align_q_mean_{d}", jnp.zeros((K, M))),
            _tril_param(f"align_q_tril_{d}", (K, M, M), config.Q_SCALE["align"]),
            hyp[f"align_noise_{d}"],
        )
    shared = CPLayer(
        ConvolutionProcess.from_variance(hyp["cp_variance"], hyp["cp_lengthscale"]),
        numpyro.param("cp_Z", jnp.tile(Z, (D, 1))),
        jnp.repeat(jnp.arange(D), M),
        numpyro.param("cp_q_mean", jnp.zeros(D * M)),
        _tril_param("cp_q_tril", (D * M, D * M), config.Q_SCALE["cp"]),
        hyp.get("cp_noise", jnp.ones(())),
    )
    Mg = config.NUM_WARP_INDUCING
    for d in structure.free_warpings:
        warpings[d] = SELayer(
            SquaredExponential(hyp[f"warp_variance_{d}"], hyp[f"warp_lengthscale_{d}"]),
            numpyro.param(f"warp_Z_{d}", _warp_init(y, Mg)),
            numpyro.param(f"warp_q_mean_{d}", jnp.zeros((1, Mg))),
            _tril_param(f"warp_q_tril_{d}", (1, Mg, Mg), config.Q_SCALE["warp"]),
            jnp.ones(()),
        )
    model = AMOGP(tuple(alignments), shared, tuple(warpings), hyp["noise"])
    idx = out.astype(int)
    penalty, mean, c = bound_pieces(model, X, idx)
    noise = model.noise[idx]
    numpyro.sample("y", dist.Normal(mean, jnp.sqrt(noise)).to_event(1), obs=y)
    numpyro.factor("nvc_terms", penalty - 0.5 * jnp.sum(c / noise))


def dsvi_program(X, out, Z, y=None, *, structure: Structure):
    """AMO-GP under DSVI (eqs. 2.86-2.89 through eq. 4.2's layers): whitened ``align_v_d`` (K, M), ``cp_v`` (D M,),
    ``warp_v_d`` (1, Mg) ~ N(0, I); in the plate ``data``, ``eps_align`` (N, K) and ``eps_cp`` (N,) drive the
    locally reparameterised draws of the hidden layers (their guide is the same N(0, 1)); the last layer's
    expectation is analytic (log N(y | mean, s2) - k~ / (2 s2), as zoo/deep_gp.py)."""
    K, M, D = X.shape[1], Z.shape[0], structure.num_outputs
    N = X.shape[0]
    hyp = _sample_hypers(structure, K)
    idx = out.astype(int)
    masks = [idx == d for d in range(D)]
    Mg = config.NUM_WARP_INDUCING
    align = {}
    for d in structure.free_alignments:
        kernel = SquaredExponential(hyp[f"align_variance_{d}"], hyp[f"align_lengthscale_{d}"])
        layer = SELayer(kernel, numpyro.param(f"align_Z_{d}", Z), None, None, hyp[f"align_noise_{d}"])
        align[d] = layer, numpyro.sample(f"align_v_{d}", dist.Normal(0.0, 1.0).expand([K, M]).to_event(2))
    cp = CPLayer(
        ConvolutionProcess.from_variance(hyp["cp_variance"], hyp["cp_lengthscale"]),
        numpyro.param("cp_Z", jnp.tile(Z, (D, 1))),
        jnp.repeat(jnp.arange(D), M),
        None,
        None,
        hyp.get("cp_noise", jnp.ones(())),
    )
    v_cp = numpyro.sample("cp_v", dist.Normal(0.0, 1.0).expand([D * M]).to_event(1))
    warp = {}
    for d in structure.free_warpings:
        kernel = SquaredExponential(hyp[f"warp_variance_{d}"], hyp[f"warp_lengthscale_{d}"])
        Zg = numpyro.param(f"warp_Z_{d}", _warp_init(y, Mg))
        warp[d] = (
            SELayer(kernel, Zg, None, None, None),
            numpyro.sample(f"warp_v_{d}", dist.Normal(0.0, 1.0).expand([1, Mg]).to_event(2)),
        )
    with numpyro.plate("data", N):
        H = X
        if align:
            eps = numpyro.sample("eps_align", dist.Normal(0.0, 1.0).expand([K]).to_event(1))
            for d, (layer, v) in align.items():
                A, k_tilde = se_projection(layer, X)
                draw = X + (v @ A).T + jnp.sqrt(k_tilde + layer.noise)[:, None] * eps
                H = jnp.where(masks[d][:, None], draw, H)
        A, k_tilde = cp_projection(cp, H, idx)
        mean, var = A.T @ v_cp, k_tilde
        if warp:
            eps_f = numpyro.sample("eps_cp", dist.Normal(0.0, 1.0))
            f = mean + jnp.sqrt(k_tilde + cp.noise) * eps_f
            for d, (layer, v) in warp.items():
                A_g, k_g = se_projection(layer, f[:, None])
                mean = jnp.where(masks[d], f + A_g.T @ v[0], mean)
                var = jnp.where(masks[d], k_g, var)
        noise = hyp["noise"][idx]
        numpyro.sample("y", dist.Normal(mean, jnp.sqrt(noise)), obs=y)
        numpyro.factor("dsvi_trace", -0.5 * var / noise)


def dsvi_guide(X, out, Z, y=None, *, structure: Structure):
    """Point masses on the hyperparameters (``<site>_map``, starting at the prior medians), q(v) = N(m, R R^T) per
    layer (params named as in ``nvc_program``, R floored by Q_SCALE_FLOOR), eps ~ N(0, 1) as in the model."""
    K, M, D = X.shape[1], Z.shape[0], structure.num_outputs
    for name, value in prior_medians(structure, K).items():
        v = numpyro.param(f"{name}_map", jnp.asarray(value), constraint=constraints.positive)
        numpyro.sample(name, dist.Delta(v, event_dim=v.ndim))

    def q(prefix: str, site: str, shape: tuple[int, ...], scale: float, event: int):
        mean = numpyro.param(f"{prefix}_q_mean{site}", jnp.zeros(shape))
        tril = _tril_param(f"{prefix}_q_tril{site}", (*shape, shape[-1]), scale)
        floored = tril + Q_SCALE_FLOOR * jnp.eye(shape[-1])
        d = dist.MultivariateNormal(mean, scale_tril=floored)
        numpyro.sample(f"{prefix}_v{site}", d.to_event(event) if event else d)

    for d in structure.free_alignments:
        q("align", f"_{d}", (K, M), config.Q_SCALE["align"], 1)
    q("cp", "", (D * M,), config.Q_SCALE["cp"], 0)
    for d in structure.free_warpings:
        q("warp", f"_{d}", (1, config.NUM_WARP_INDUCING), config.Q_SCALE["warp"], 1)
    with numpyro.plate("data", X.shape[0]):
        if structure.free_alignments:
            numpyro.sample("eps_align", dist.Normal(0.0, 1.0).expand([K]).to_event(1))
        if structure.free_warpings:
            numpyro.sample("eps_cp", dist.Normal(0.0, 1.0))


def model_from_values(values: dict, structure: Structure, q_floor: float = 0.0) -> AMOGP:
    """The AMOGP of constrained values: hyperparameters by site name (a DSVI guide's ``<site>_map`` also works) and
    the variational params (names above). ``q_floor``: the guide's Cholesky floor (Q_SCALE_FLOOR for DSVI fits)."""
    v = {k.removesuffix("_map"): jnp.asarray(x) for k, x in values.items()}
    D = structure.num_outputs
    missing = [name for name in ("cp_variance", "cp_lengthscale", "cp_q_mean", "noise") if name not in v]
    if missing:
        raise DataError(f"amogp: values lack {missing}.")

    def tril(name):
        R = v[name]
        return R + q_floor * jnp.eye(R.shape[-1])

    alignments, warpings = [None] * D, [None] * D
    for d in structure.free_alignments:
        alignments[d] = SELayer(
            SquaredExponential(v[f"align_variance_{d}"], v[f"align_lengthscale_{d}"]),
            v[f"align_Z_{d}"],
            v[f"align_q_mean_{d}"],
            tril(f"align_q_tril_{d}"),
            v[f"align_noise_{d}"],
        )
    M = v["cp_q_mean"].shape[0] // D
    shared = CPLayer(
        ConvolutionProcess.from_variance(v["cp_variance"], v["cp_lengthscale"]),
        v["cp_Z"],
        jnp.repeat(jnp.arange(D), M),
        v["cp_q_mean"],
        tril("cp_q_tril"),
        v.get("cp_noise", jnp.ones(())),
    )
    for d in structure.free_warpings:
        warpings[d] = SELayer(
            SquaredExponential(v[f"warp_variance_{d}"], v[f"warp_lengthscale_{d}"]),
            v[f"warp_Z_{d}"],
            v[f"warp_q_mean_{d}"],
            tril(f"warp_q_tril_{d}"),
            jnp.ones(()),
        )
    return AMOGP(tuple(alignments), shared, tuple(warpings), v["noise"])
