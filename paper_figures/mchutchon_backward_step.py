"""McHutchon (2014) Figs 3.23 and 3.24 (sec. 3.6.2): the first backward smoothing step of sampling EP and of
moment-matching EP on a 2-D system; docs/sources/mchutchon.md#backward-step.

The model is exactly a random 2-D GP system (``zoo.data.ssm_systems.random_gp_system``: a GP on 10 random pairs
with its own kernel noise, docs/sources/mchutchon.md#random-systems), plugged into the GP-SSM as
``mchutchon_random_estep`` does (``system_theta``); one observed trajectory of T = 20 steps. No learning.

* alpha_{T-1}: the GP-ADF filter at T-1 (``inference.gaussian.moment_matching.adf_forward``; the forward message of
  the first EP sweep).
* Fig 3.23: on a grid over x_{T-1}, left alpha_{T-1}; middle p(y_T | x_{T-1}) = N(y_T; m_f(x), diag(s_f(x) +
  sigma_eps^2 + sigma_nu^2)) (beta_T = 1 at the first backward step), normalised over the grid; right their product,
  the smoothing posterior p(x_{T-1} | y_{1:T}) under the filter approximation, which sampling EP moment-matches. Its
  moments by quadrature on the grid (401^2 points over alpha's mean +- 7 sd; the thesis used samples) and by
  importance sampling with 10,000 draws from alpha (the thesis's estimator; MC-EP's weights).
* Fig 3.24: top, the forward push of alpha through the transition (10,000 samples of x_T), its moment-matched
  Gaussian (eq. 3.129, the GP-ADF time update) and the distribution on x_T from y_T alone, N(y_T, Sigma_nu); bottom,
  alpha, the moment-matching (ADS = MM-EP) posterior on x_{T-1} (one RTS step, eqs. 3.95-3.96) and the grid posterior
  of Fig 3.23.
* Non-Gaussianity of a density on the grid: the total-variation distance to its moment-matched Gaussian (0: Gaussian).
  The forward push's by a 60 x 60 histogram of its samples, beside the same histogram of as many Gaussian draws (the
  histogram's own noise floor).
* The example: the first of the systems (seeds 0, 1, ...) whose exact smoothed covariance has a marginal variance
  above alpha's (the thesis's example of eq. 3.187 shows one; the thesis does not say how it chose it). How often
  that happens, and how often the backward message q / alpha is then not positive definite, is counted over
  ``num_systems`` systems (quick 20, full 200), by quadrature.

The thesis's numbers (eqs. 3.187-3.188) belong to its own random system; ours are compared in kind (the claims), and
the thesis's matrices are in mchutchon_backward_step_published.csv for reference.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from inference.files.tables import markdown_table
from inference.gaussian.moment_matching import adf_forward, time_update
from paper_figures._claims import pyplot, write_results
from paper_figures.mchutchon_random_estep import system_theta
from zoo import moments
from zoo.data import ssm_systems

DESCRIPTION = (
    "McHutchon 2014 Figs 3.23-3.24: the first backward smoothing step of sampling and moment-matching EP (2-D)"
)

T, D, GRID, SAMPLES, WIDTH = 20, 2, 401, 10_000, 7.0


def settings(quick: bool) -> dict:
    return {"num_systems": 20 if quick else 200}


def last_step(seed: int):
    """(theta, y_T (D,), alpha_{T-1} (mean, cov), q_time (mean, cov), Cov[x_{T-1}, x_T]) of one system's first
    backward step."""
    data = ssm_systems.random_gp_system(jax.random.key(seed), D, num_train=1, num_test=1, num_steps=T)
    theta = system_theta(data.truth, D)
    y = jnp.asarray(data.observed["y"][0])
    alpha, q_time, cross = filter_to_last_step(theta["gpssm"], theta["predictor"], theta["mean_fn"], y)
    return theta, y[T - 1], alpha, q_time, cross


@jax.jit
def filter_to_last_step(g, predictor, mean_fn, y):
    """alpha_{T-1} (the GP-ADF filter at T-1), the time update to T and Cov[x_{T-1}, x_T]. One compiled program for
    every system: called op by op, the filter's scan compiled anew for each system (its closure is new), and after
    ~150 systems XLA crashed (a segmentation fault inside the scan's compilation, twice)."""
    forward = adf_forward(g, predictor, mean_fn, y, jnp.ones(T, bool), jnp.zeros((T, 0)))
    alpha = (forward.filt_mean[T - 2], forward.filt_cov[T - 2])
    pred_mean, pred_cov, cross = time_update(g, predictor, mean_fn, *alpha, jnp.zeros(0))[:3]
    return alpha, (pred_mean, pred_cov), cross


def transition(theta, x):
    """The transition's mean (D,) and variance (D,) at x (D,): the GP's predictive plus the process noise."""
    mean, var = moments.predict_point(theta["predictor"], x, theta["mean_fn"])
    return mean, var + theta["gpssm"].process_var


def grid_over(mean, cov, width: float = WIDTH, size: int = GRID):
    """A square grid over mean +- width sd per axis: axes ((size,), (size,)), points (size^2, D), cell area."""
    sd = np.sqrt(np.diag(np.asarray(cov)))
    axes = [np.linspace(m - width * s, m + width * s, size) for m, s in zip(np.asarray(mean), sd, strict=True)]
    xx, yy = np.meshgrid(*axes, indexing="ij")
    return axes, np.stack([xx.ravel(), yy.ravel()], 1), (axes[0][1] - axes[0][0]) * (axes[1][1] - axes[1][0])


def log_gauss(x, mean, cov):
    """log N(x; mean, cov) for x (n, D)."""
    return jax.scipy.stats.multivariate_normal.logpdf(x, mean, cov)


def log_likelihood_of_prev(theta, y_T, points):
    """log p(y_T | x_{T-1}) at points (n, D) (C = I, beta_T = 1)."""

    def one(x):
        mean, var = transition(theta, x)
        return jnp.sum(jax.scipy.stats.norm.logpdf(y_T, mean, jnp.sqrt(var + theta["gpssm"].obs_var)))

    return jax.vmap(one)(jnp.asarray(points))


def normalise(log_density, area):
    w = np.exp(np.asarray(log_density) - np.max(log_density))
    return w / (w.sum() * area)


def moments_on_grid(density, points, area):
    mean = (density * area) @ points
    centred = points - mean
    return mean, (density * area * centred.T) @ centred


def non_gaussianity(density, points, area) -> float:
    """Total-variation distance between a grid density and its moment-matched Gaussian."""
    mean, cov = moments_on_grid(density, points, area)
    gaussian = np.exp(np.asarray(log_gauss(jnp.asarray(points), mean, cov)))
    return 0.5 * float(np.sum(np.abs(density - gaussian)) * area)


@jax.jit
def grid_log_posterior(theta, y_T, alpha, points):
    """log alpha_{T-1}(x) + log p(y_T | x) at points (n, D): one compiled program for every system (op by op, each
    of the 401^2-point evaluations dispatched its operations one at a time)."""
    return log_gauss(points, *alpha) + log_likelihood_of_prev(theta, y_T, points)


def precision(cov) -> np.ndarray:
    """cov^-1 (D, D) by its Cholesky factor."""
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(np.asarray(cov)), np.eye(len(cov)))


def exact_smoothing(seed: int):
    """The quadrature posterior of one system's first backward step and what the claims need."""
    theta, y_T, alpha, q_time, cross = last_step(seed)
    _, points, area = grid_over(*alpha)
    posterior = normalise(grid_log_posterior(theta, y_T, alpha, jnp.asarray(points)), area)
    mean, cov = moments_on_grid(posterior, points, area)
    message_precision = precision(cov) - precision(alpha[1])  # beta_{T-1} = q / alpha
    return {
        "theta": theta,
        "y_T": y_T,
        "alpha": alpha,
        "q_time": q_time,
        "cross": cross,
        "mean": mean,
        "cov": cov,
        "variance_up": bool(np.any(np.diag(cov) > np.diag(np.asarray(alpha[1])))),
        "message_not_pd": bool(np.any(np.linalg.eigvalsh(message_precision) <= 0)),
    }


def importance_moments(seed: int, theta, y_T, alpha):
    """Sampling EP's estimate: SAMPLES draws from alpha weighted by p(y_T | x) (self-normalised)."""
    x = jax.random.multivariate_normal(jax.random.key(seed), alpha[0], alpha[1], (SAMPLES,))
    w = jax.nn.softmax(log_likelihood_of_prev(theta, y_T, x))
    mean = w @ x
    centred = x - mean
    return np.asarray(mean), np.asarray((w * centred.T) @ centred), float(1.0 / jnp.sum(w**2))


def rts_step(alpha, q_time, cross, obs_var, y_T):
    """Moment-matching EP / ADS at T-1 (eqs. 3.95-3.96): the Kalman update at T, then one RTS step."""
    m_p, P_p = q_time
    gain = jnp.linalg.solve(P_p + jnp.diag(obs_var), P_p).T  # P_p (P_p + Sigma_nu)^-1, both symmetric
    m_T, P_T = m_p + gain @ (y_T - m_p), P_p - gain @ P_p
    J = jnp.linalg.solve(P_p, cross.T).T  # Cov[x_{T-1}, x_T] P_p^-1
    return np.asarray(alpha[0] + J @ (m_T - m_p)), np.asarray(alpha[1] + J @ (P_T - P_p) @ J.T)


def forward_push(seed: int, theta, alpha):
    """SAMPLES draws of x_T from the transition at draws of x_{T-1} ~ alpha."""
    k1, k2 = jax.random.split(jax.random.key(seed + 1))
    x = jax.random.multivariate_normal(k1, alpha[0], alpha[1], (SAMPLES,))
    mean, var = jax.vmap(lambda xi: transition(theta, xi))(x)
    return np.asarray(mean + jnp.sqrt(var) * jax.random.normal(k2, mean.shape))


def histogram_non_gaussianity(samples, mean, cov, bins: int = 60) -> float:
    """TV distance between a 2-D histogram of samples (over their mean +- 4 sd) and their Gaussian fit."""
    axes, points, area = grid_over(mean, cov, 4.0, bins + 1)
    hist, _, _ = np.histogram2d(samples[:, 0], samples[:, 1], bins=axes)
    density = hist / (len(samples) * area)
    centres = [0.5 * (a[1:] + a[:-1]) for a in axes]
    cx, cy = np.meshgrid(*centres, indexing="ij")
    gaussian = np.exp(np.asarray(log_gauss(jnp.asarray(np.stack([cx.ravel(), cy.ravel()], 1)), mean, cov)))
    return 0.5 * float(np.sum(np.abs(density.ravel() - gaussian)) * area)


def compute(cfg: dict):
    cases = [exact_smoothing(seed) for seed in range(cfg["num_systems"])]
    example_seed = next((s for s, c in enumerate(cases) if c["variance_up"]), 0)
    ex = cases[example_seed]
    theta, y_T, alpha = ex["theta"], ex["y_T"], ex["alpha"]
    is_mean, is_cov, ess = importance_moments(example_seed, theta, y_T, alpha)
    ads_mean, ads_cov = rts_step(alpha, ex["q_time"], ex["cross"], theta["gpssm"].obs_var, y_T)
    pushed = forward_push(example_seed, theta, alpha)
    push_mean, push_cov = pushed.mean(0), np.cov(pushed.T)
    _, points, area = grid_over(*alpha)
    likelihood_axes, likelihood_points, likelihood_area = grid_over(np.zeros(D), 4.0 * np.eye(D), 3.0, 201)
    likelihood = normalise(log_likelihood_of_prev(theta, y_T, likelihood_points), likelihood_area)
    backward_tv = non_gaussianity(likelihood, likelihood_points, likelihood_area)
    forward_tv = histogram_non_gaussianity(pushed, push_mean, push_cov)
    gaussian_draws = np.random.default_rng(example_seed).multivariate_normal(push_mean, push_cov, SAMPLES)
    floor_tv = histogram_non_gaussianity(gaussian_draws, push_mean, push_cov)  # the histogram's own noise
    obs_cov = np.diag(np.asarray(theta["gpssm"].obs_var))
    up = sum(c["variance_up"] for c in cases)
    not_pd = sum(c["message_not_pd"] for c in cases)
    fmt = lambda a: np.array2string(np.asarray(a), precision=4, suppress_small=True).replace("\n", "")  # noqa: E731
    rows = [
        {"figure": "3.23", "claim": "conditioning on y_T gives a markedly non-Gaussian distribution on x_{T-1}, the "
         "forward push of alpha through the GP a nearly Gaussian one (Fig 3.24 top left)",
         "measured": f"TV distance to the moment-matched Gaussian: p(y_T | x_(T-1)) {backward_tv:.3f}, forward push "
         f"{forward_tv:.3f} (histogram of {SAMPLES} samples; the same histogram of Gaussian draws: {floor_tv:.3f})",
         "verdict": "PASS" if backward_tv > forward_tv else "FAIL"},
        {"figure": "3.23", "claim": "eq. 3.187: the smoothed (sampled) covariance can have a marginal variance above "
         "alpha_{T-1}'s, so the message beta_{T-1} = q / alpha is not positive definite",
         "measured": f"system {example_seed}: Sigma_alpha {fmt(alpha[1])}, exact smoothed {fmt(ex['cov'])}, "
         f"sampled ({SAMPLES}, ESS {ess:.0f}) {fmt(is_cov)}; over {len(cases)} systems the variance rises in {up}, "
         f"the message is not PD in {not_pd}",
         "verdict": "PASS" if up > 0 and not_pd > 0 else "FAIL"},
        {"figure": "3.24", "claim": "eq. 3.188: alpha_{T-1} is much tighter than the distribution on x_T from y_T",
         "measured": f"Sigma_alpha {fmt(alpha[1])}, Sigma_nu {fmt(obs_cov)}; det ratio "
         f"{np.linalg.det(np.asarray(alpha[1])) / np.linalg.det(obs_cov):.3g}",
         "verdict": "PASS" if np.all(np.linalg.eigvalsh(obs_cov - np.asarray(alpha[1])) > 0) else "FAIL"},
    ]  # fmt: skip
    numbers = {
        "example_system": example_seed,
        "systems": len(cases),
        "variance_rises": up,
        "message_not_pd": not_pd,
        "is_ess": ess,
        "tv_backward": backward_tv,
        "tv_forward": forward_tv,
        "tv_histogram_floor": floor_tv,
    }
    moments_table = [
        {"distribution": name, "mean": fmt(m), "cov": fmt(c)}
        for name, m, c in (
            ("alpha_{T-1} (GP-ADF filter)", *alpha),
            ("smoothed, quadrature", ex["mean"], ex["cov"]),
            (f"smoothed, {SAMPLES} importance samples", is_mean, is_cov),
            ("smoothed, moment-matching EP (ADS)", ads_mean, ads_cov),
            ("x_T: forward push, samples", push_mean, push_cov),
            ("x_T: moment-matched time update", *ex["q_time"]),
            ("x_T from y_T alone", y_T, obs_cov),
        )
    ]
    plot_data = (ex, points, area, likelihood_axes, likelihood, pushed, ads_mean, ads_cov)
    return rows, numbers, moments_table, plot_data


def plot(out: Path, data) -> None:
    ex, points, area, likelihood_axes, likelihood, pushed, ads_mean, ads_cov = data
    plt = pyplot()
    alpha = ex["alpha"]
    axes_a, _, _ = grid_over(*alpha)
    alpha_density = np.exp(np.asarray(log_gauss(jnp.asarray(points), *alpha)))
    log_post = log_gauss(jnp.asarray(points), *alpha) + log_likelihood_of_prev(ex["theta"], ex["y_T"], points)
    posterior = normalise(log_post, area)
    fig, axes = plt.subplots(2, 3, figsize=(11, 7))
    shape = (GRID, GRID)
    top = axes[0]
    top[0].contour(*axes_a, alpha_density.reshape(shape).T, 8)
    top[0].set_title("Fig 3.23: alpha_{T-1} (filter)", fontsize=9)
    n = len(likelihood_axes[0])
    top[1].contour(*likelihood_axes, likelihood.reshape(n, n).T, 8)
    top[1].set_title("p(y_T | x_{T-1}), normalised", fontsize=9)
    top[2].contour(*axes_a, posterior.reshape(shape).T, 8)
    top[2].set_title("their product: p(x_{T-1} | y_{1:T})", fontsize=9)
    bottom = axes[1]
    bottom[0].hist2d(pushed[:, 0], pushed[:, 1], bins=60)
    bottom[0].set_title("Fig 3.24: forward push of alpha (x_T samples)", fontsize=9)
    q_axes, q_points, _ = grid_over(*ex["q_time"], 4.0, 101)
    bottom[1].contour(
        *q_axes, np.exp(np.asarray(log_gauss(jnp.asarray(q_points), *ex["q_time"]))).reshape(101, 101).T, 8
    )  # noqa: E501
    bottom[1].set_title("its moment-matched Gaussian (eq. 3.129)", fontsize=9)
    bottom[2].contour(*axes_a, posterior.reshape(shape).T, 8, colors="k", linewidths=0.6)
    bottom[2].contour(
        *axes_a,
        np.exp(np.asarray(log_gauss(jnp.asarray(points), ads_mean, ads_cov))).reshape(shape).T,
        8,
        colors="r",
        linewidths=0.6,
    )  # noqa: E501
    bottom[2].set_title("smoothed x_{T-1}: MM-EP (red) vs exact (black)", fontsize=9)
    for ax in axes.ravel():
        ax.set(xlabel="dim 1", ylabel="dim 2")
    fig.tight_layout()
    fig.savefig(out / "mchutchon_backward_step.png", dpi=100)
    plt.close(fig)


def main(quick: bool, out: Path) -> None:
    out = Path(out)
    rows, numbers, moments_table, data = compute(settings(quick))
    plot(out, data)
    extra = "\n\nThe example's moments:\n\n" + markdown_table(moments_table) + "\n"
    write_results(out, rows, numbers, __doc__, quick, extra)
