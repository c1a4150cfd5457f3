"""``ess``: elliptical slice sampling of the latent f of a latent GP under its Gaussian prior (Murray, Adams & MacKay
2010; BlackJAX's ``elliptical_slice``; docs/sources/nonconjugate.md#ess), at fixed hyperparameters or, with
``hyperparameters="gibbs"``, alternating with a Metropolis update of the hyperparameters in whitened coordinates
(Murray & Adams 2010).

Each ESS step draws nu ~ N(0, K), a slice height under the current likelihood, and shrinks an angle bracket on the
ellipse f' = m + (f - m) cos t + nu sin t until the likelihood exceeds the height. It needs no step size and no
gradients, and leaves N(m, K) x p(y|f) invariant (MAM 2010, sec. 2). With ``hyperparameters="fixed"`` (default) the
hyperparameters theta are ``params``, else the model's defaults. With ``"gibbs"`` each sweep follows the ESS step
with one random-walk Metropolis step (BlackJAX's ``additive_step_random_walk``) on the unconstrained theta given the
whitened latent v = L_theta^-1 (f - m_theta), target log p(theta) (the program's priors with log-Jacobian) +
sum_i log p(y_i | m_theta + L_theta v); f moves with theta. ``params`` (else the defaults) then only starts theta.
The random-walk scale adapts during warm-up only (Robbins-Monro on the log scale towards acceptance 0.3, Andrieu &
Thoms 2008), so the kept draws come from a fixed Metropolis kernel.

Chains start from independent prior draws of f (over-dispersed relative to the posterior, so R-hat can flag a chain
that has not mixed); the first ``num_warmup`` steps are discarded; every ``thinning``-th draw is kept.
"""

import blackjax
import jax
import jax.numpy as jnp
from blackjax.mcmc import random_walk
from jax.scipy.linalg import solve_triangular
from numpyro import handlers
from numpyro.infer.util import constrain_fn, potential_energy, unconstrain_fn

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.fixed import conditions_unless_gibbs
from zoo.options import Option

__all__ = ["ess"]

HYPERPARAMETERS = ("fixed", "gibbs")
TARGET_ACCEPT = 0.3  # of the warm-up scale adaptation: near the 0.234 optimum in many dimensions, 0.44 in one


def ess_sampler(view, params, X, y):
    """BlackJAX's elliptical slice on f under N(m_theta, K_theta) x p(y | f, theta) at theta = ``params``."""
    m, K = view.prior(params, X)
    return blackjax.elliptical_slice(lambda f: view.log_likelihood(params, f, y).sum(), mean=m, cov=K)


@program_cache
def ess_runner(view, num_warmup: int, num_samples: int, thinning: int):
    def one_chain(key, params, X, y):
        m, K = view.prior(params, X)
        sampler = ess_sampler(view, params, X, y)
        k_init, k_run = jax.random.split(key)
        f0 = m + jnp.linalg.cholesky(K) @ jax.random.normal(k_init, m.shape)

        def step(state, k):
            state, info = sampler.step(k, state)
            return state, (state.position, info.subiter)

        state = sampler.init(f0)
        warm_keys, keys = jnp.split(jax.random.split(k_run, num_warmup + num_samples * thinning), [num_warmup])
        state, (_, warm_subiter) = jax.lax.scan(step, state, warm_keys)
        _, (f, subiter) = jax.lax.scan(step, state, keys)
        f, subiter = f[thinning - 1 :: thinning], subiter.reshape(num_samples, thinning).sum(-1)
        sites = jax.vmap(lambda g: view.to_sites(params, X, g))(f)
        # each sub-iteration is one likelihood evaluation; + 1 for the first proposal of each step
        evals = jnp.sum(warm_subiter + 1) + jnp.sum(subiter + thinning)
        return sites, subiter, evals

    return vmapped_chains(one_chain)


def hyperprior(program, latent: str, N: int):
    """The program with the latent site (held at zeros so that it runs) and the observations hidden: its NumPyro
    potential at unconstrained theta is -(log p(theta) + log-Jacobian). Only those two are hidden: NumPyro adds the
    log-Jacobian as factor sites of its own names."""

    def model(X, y):
        hidden = handlers.block(hide_fn=lambda site: site["name"] in (latent, "y"))
        with hidden, handlers.condition(data={latent: jnp.zeros(N)}):
            program(X=X, y=y)

    return model


@program_cache
def gibbs_runner(view, program, N: int, num_warmup: int, num_samples: int, thinning: int):
    latent = "f" if view.parameterisation == "centred" else "v"
    prior_model = hyperprior(program, latent, N)
    rwm = random_walk.build_additive_step()

    def one_chain(key, start, X, y):
        observed = {"X": X, "y": y}
        constrain = lambda z: constrain_fn(prior_model, (), observed, z)  # noqa: E731

        def log_target(z, v):
            theta = constrain(z)
            m, K = view.prior(theta, X)
            f = m + jnp.linalg.cholesky(K) @ v
            return -potential_energy(prior_model, (), observed, z) + view.log_likelihood(theta, f, y).sum()

        def whiten(theta, f):
            m, K = view.prior(theta, X)
            return solve_triangular(jnp.linalg.cholesky(K), f - m, lower=True)

        def colour(theta, v):
            m, K = view.prior(theta, X)
            return m + jnp.linalg.cholesky(K) @ v

        def sweep(carry, k, adapt):
            f, z, log_scale, t = carry
            k_ess, k_rwm = jax.random.split(k)
            theta = constrain(z)
            sampler = ess_sampler(view, theta, X, y)
            ess_state, info = sampler.step(k_ess, sampler.init(f))
            v = whiten(theta, ess_state.position)
            logdensity = lambda z_: log_target(z_, v)  # noqa: E731
            step = random_walk.normal(jnp.exp(log_scale))
            rw_state, rw_info = rwm(k_rwm, random_walk.init(z, logdensity), logdensity, step)
            z = rw_state.position
            f = colour(constrain(z), v)
            if adapt:
                rate = jnp.minimum(rw_info.acceptance_rate, 1.0)
                log_scale = log_scale + (rate - TARGET_ACCEPT) / (t + 1.0) ** 0.6
            return (f, z, log_scale, t + 1.0), (f, z, info.subiter, rw_info.is_accepted)

        k_init, k_run = jax.random.split(key)
        z0 = unconstrain_fn(prior_model, (), observed, start)
        f0 = colour(start, jax.random.normal(k_init, (N,)))
        dim = sum(jnp.size(a) for a in jax.tree.leaves(z0))
        # start below the Gaussian-target optimum 2.38 / sqrt(dim) (Roberts et al. 1997): warm-up grows it if needed
        carry = (f0, z0, jnp.log(2.38 / jnp.sqrt(dim)) - 1.0, 0.0)
        warm_keys, keys = jnp.split(jax.random.split(k_run, num_warmup + num_samples * thinning), [num_warmup])
        carry, (_, _, warm_subiter, _) = jax.lax.scan(lambda c, k: sweep(c, k, True), carry, warm_keys)
        _, (f, z, subiter, accepted) = jax.lax.scan(lambda c, k: sweep(c, k, False), carry, keys)
        f, z = f[thinning - 1 :: thinning], jax.tree.map(lambda a: a[thinning - 1 :: thinning], z)
        subiter = subiter.reshape(num_samples, thinning).sum(-1)
        accept = accepted.reshape(num_samples, thinning).mean(-1)

        def draw(f_, z_):
            theta = constrain(z_)
            return {**theta, **view.to_sites(theta, X, f_)}

        sites = jax.vmap(draw)(f, z)
        # per sweep: ESS re-initialised at the new theta (1), its first proposal (1) and sub-iterations; RWM
        # re-initialised at the new v (1) and its proposal (1)
        evals = jnp.sum(warm_subiter + 4) + jnp.sum(subiter + 4 * thinning)
        return sites, subiter, accept, evals

    return vmapped_chains(one_chain)


@register_engine(
    "ess",
    requires={"latent_gp"},
    options={
        "num_chains": opt.num_chains(4),
        "num_warmup": opt.num_warmup(500),
        "num_samples": opt.num_samples(1000),
        "thinning": Option("int", 1, "keep every k-th draw", minimum=1),
        "params": opt.params(),
        "hyperparameters": opt.choice(
            "fixed", HYPERPARAMETERS, "fixed (params, else defaults) or gibbs: whitened random-walk Metropolis on them"
        ),
    },
    summary="Elliptical slice sampling of latent f under the GP prior (BlackJAX); fixed or Gibbs-sampled hypers",
    params_role=conditions_unless_gibbs,
)
def ess(spec, dataset, key, timer, **options) -> EngineOutput:
    view = spec.views["latent_gp"]
    keys = jax.random.split(key, options["num_chains"])
    X, y = jnp.asarray(dataset.observed["X"]), jnp.asarray(dataset.observed["y"])
    sizes = (options["num_warmup"], options["num_samples"], options["thinning"])
    if options["hyperparameters"] == "fixed":
        sites, subiter, evals = ess_runner(view, *sizes).run(timer, keys, options["params"], X, y)
        return EngineOutput(posterior=sites, sample_stats={"n_steps": subiter}, num_lik_evals=int(jnp.sum(evals)))
    start = {**spec.default_params, **(options["params"] or {})}
    start = {name: jnp.asarray(value, dtype=float) for name, value in start.items()}
    runner = gibbs_runner(view, spec.program, X.shape[0], *sizes)
    sites, subiter, accept, evals = runner.run(timer, keys, start, X, y)
    stats = {"n_steps": subiter, "acceptance_rate": accept}
    return EngineOutput(posterior=sites, sample_stats=stats, num_lik_evals=int(jnp.sum(evals)))
