"""The variational GP-SSM's transition under its fitted guide (``zoo.gpssm.q_transition_predictor``): the predictive
of f with F~ integrated over q(F~), against the same formula written out with dense solves."""

import jax
import numpy as np

from zoo import gp, gpssm, moments


def test_q_transition_predictor_integrates_over_q_of_the_pseudo_targets():
    rng = np.random.default_rng(0)
    Xt = np.linspace(-2.0, 5.0, 6)[:, None]
    sf2, ell = 1.7, 0.8
    L = np.tril(rng.normal(size=(6, 6))) * 0.3
    params = {
        "q_lengthscale": np.array([[ell]]),
        "q_signal_var": np.array([sf2]),
        "q_process_var": np.array([0.3]),
        "q_obs_var": np.array([0.1]),
        "q_F_loc": rng.normal(size=(1, 6)),
        "q_F_tril": L[None],
    }
    xs = np.array([-1.3, 0.4, 4.7])
    predict = jax.jit(
        lambda p: jax.vmap(lambda x: moments.predict_point(gpssm.q_transition_predictor(Xt, p), x))(xs[:, None])
    )
    mean, var = (np.asarray(v)[:, 0] for v in predict(params))
    K = np.asarray(gp.add_jitter(sf2 * np.exp(-0.5 * (Xt - Xt.T) ** 2 / ell**2)))
    k = sf2 * np.exp(-0.5 * (Xt - xs[None, :]) ** 2 / ell**2)  # (M, points)
    A = np.linalg.solve(K, k)
    spread = np.einsum("mp,mn,np->p", A, L @ L.T, A)
    np.testing.assert_allclose(mean, A.T @ params["q_F_loc"][0], rtol=1e-8)
    # B(x) (eq. 3.55) plus the spread of q(F~); without the second term the check fails by a^T L L^T a
    np.testing.assert_allclose(var, sf2 - np.einsum("mp,mp->p", k, A) + spread, rtol=1e-7)
    assert spread.min() > 1e-3
