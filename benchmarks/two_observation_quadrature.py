"""EP and Laplace against 2-D quadrature on two probit observations (issue 41; docs/sources/nonconjugate.md#two).

On one observation EP is exact (tests/test_nonconjugate.py); on two it is not, and neither is Laplace. Here the
posterior p(f1, f2 | y) ~ Phi(s1 f1) Phi(s2 f2) N(f | 0, K) (s = 2y - 1, K the model's SE Gram at two inputs, jitter
included) is integrated on a tensor Gauss-Hermite grid in whitened coordinates (f = L z, z ~ N(0, I)), which gives
log p(y), E[f] and Cov[f] to rounding (checked: the grid of ``points`` and of 3/2 as many agree). The errors of
``laplace`` and ``ep`` (sequential, undamped) against it are reported, not asserted to vanish: both approximations
are biased here, and how much is the result.

Usage: ``python -m benchmarks.two_observation_quadrature [--points 200]``; prints a markdown table.
"""

import argparse

import jax.numpy as jnp
import numpy as np
import scipy.special

import zoo
from inference.gaussian import ep, laplace

# (inputs, labels, signal variance): same and opposite labels, near and far inputs, weak and strong prior.
CASES = [
    ((0.0, 0.5), (1.0, 1.0), 1.0),
    ((0.0, 0.5), (1.0, 0.0), 1.0),
    ((0.0, 2.0), (1.0, 0.0), 1.0),
    ((0.0, 0.5), (1.0, 1.0), 10.0),
    ((0.0, 0.5), (1.0, 0.0), 10.0),
    ((0.0, 2.0), (1.0, 0.0), 10.0),
]


def quadrature(K: np.ndarray, y: np.ndarray, points: int):
    """log p(y), E[f | y], Cov[f | y] of two probit observations under N(0, K), by a points x points probabilists'
    Gauss-Hermite grid in z with f = L z."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(points)
    weights = weights / np.sqrt(2 * np.pi)
    z = np.stack(np.meshgrid(nodes, nodes, indexing="ij"), -1).reshape(-1, 2)
    w = np.outer(weights, weights).reshape(-1)
    f = z @ np.linalg.cholesky(K).T
    lik = np.exp(scipy.special.log_ndtr((2 * y - 1) * f).sum(-1))
    z_y = w @ lik
    mean = (w * lik) @ f / z_y
    centred = f - mean
    cov = (centred * (w * lik)[:, None]).T @ centred / z_y
    return float(np.log(z_y)), mean, cov


def compare(X, y, variance: float, points: int = 200) -> dict:
    """Errors of laplace and ep against quadrature on one case: log evidence, the posterior means and variances
    (largest absolute error over the two points), and the quadrature's own error (grid of points against 3/2 x)."""
    spec = zoo.get("gp/classification", link="probit")
    view = spec.views["latent_gp"]
    params = {"lengthscale": jnp.asarray(1.0), "variance": jnp.asarray(float(variance))}
    Xj, yj = jnp.asarray(np.asarray(X, dtype=float)[:, None]), jnp.asarray(np.asarray(y, dtype=float))
    _, K = view.prior(params, Xj)
    K, y = np.asarray(K), np.asarray(yj)
    log_z, mean, cov = quadrature(K, y, points)
    finer = quadrature(K, y, points * 3 // 2)
    row = {
        "X": tuple(X),
        "y": tuple(y),
        "variance": variance,
        "log_z": log_z,
        "mean": mean,
        "var": np.diag(cov),
        "quadrature_error": max(abs(finer[0] - log_z), np.max(np.abs(finer[1] - mean))),
    }
    none = jnp.zeros((0, 1))
    fits = {
        "laplace": laplace.fit(view, params, Xj, yj, none, False, True, 100, 1e-12),
        "ep": ep.fit(view, params, Xj, yj, none, "sequential", 0.0, 500, 1e-12),
    }
    for name, fit in fits.items():
        L = np.asarray(fit.L_K) @ np.linalg.inv(np.asarray(fit.L_C)).T
        row[f"{name}_log_z_err"] = float(fit.log_evidence) - log_z
        row[f"{name}_mean_err"] = float(np.max(np.abs(np.asarray(fit.mean) - mean)))
        row[f"{name}_var_err"] = float(np.max(np.abs(np.diag(L @ L.T) - np.diag(cov))))
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| x | y | variance | log p(y) | Laplace: log Z err, max mean err, max var err | EP: same | quadrature err |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            f"{r['X']}",
            f"{tuple(int(v) for v in r['y'])}",
            f"{r['variance']:g}",
            f"{r['log_z']:.6f}",
            *(
                f"{r[f'{n}_log_z_err']:+.2e}, {r[f'{n}_mean_err']:.2e}, {r[f'{n}_var_err']:.2e}"
                for n in ("laplace", "ep")
            ),
            f"{r['quadrature_error']:.0e}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200, help="Gauss-Hermite points per dimension")
    args = parser.parse_args(argv)
    print(table([compare(X, y, v, args.points) for X, y, v in CASES]))


if __name__ == "__main__":
    main()
