"""The ``ml2`` engine: type-II maximum likelihood (or MAP) of a collapsed model's hyperparameters.

A ``collapsed`` model's program has only hyperparameters as latent sites: its likelihood term is already the
marginal likelihood p(y | theta) (GP regression, FITC) or a collapsed bound on it (VFE). ``objective="ml"``
maximises the sum of the observed sites and factors, log p(y | theta) (ML-II; the priors are ignored);
``objective="map"`` adds the log prior, log p(y | theta) + log p(theta), evaluated in the constrained space as
NumPyro's AutoDelta does (no Jacobian). The search runs over the unconstrained values of the sites, by L-BFGS
(optax, zoom line search; stops when the gradient norm falls below ``tolerance``) or by Adam for ``num_steps``, all
chains vmapped in one compiled program; or (``optimizer="host-lbfgs"``) by scipy's L-BFGS-B without bounds driven
from the host over one compiled value-and-gradient, chain after chain (``optimise.host_lbfgs``: stops when the
largest gradient component is below ``tolerance`` or an iteration gains less than ``ftol`` relative; a program
several times smaller, so it compiles in a fraction of the time, and no chain waits for the slowest).

Start: ``init`` (constrained values by site name) where given, else the model's default parameter values, else the
point whose unconstrained value is 0 (e.g. 1 for a positive site); chain c > 0 adds N(0, init_radius^2) noise to
the unconstrained start, so several chains are restarts that show whether the optimum is unique.

Output: point_estimates = the optimum's constrained values (chain, ...) plus ``log_likelihood`` (the maximised
log p(y | theta), i.e. the ML-II log evidence at theta for a collapsed model), ``log_prior`` and ``iterations``;
posterior = the optimum as one draw per chain, so every diagnostic reads it; traces = the objective per step.
"""

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to

from inference.core import options as opt
from inference.core.api import EngineOutput, register_engine
from inference.core.cache import program_cache
from inference.core.chains import vmapped_chains
from inference.core.program import conditioned_program, latent_sites, observed_args
from inference.optimisation import optimise
from zoo.errors import OptionError
from zoo.options import Option

__all__ = ["OBJECTIVES", "OPTIMIZERS", "host_program", "log_terms", "ml2", "ml2_runner", "supports"]

OBJECTIVES = ("ml", "map")
OPTIMIZERS = ("lbfgs", "adam", "host-lbfgs")


def log_terms(model, values, params, observed) -> tuple[jax.Array, jax.Array]:
    """(log-likelihood, log prior) of the program at constrained ``values``: observed sites and factors, and the
    unobserved sample sites. The sites fixed by ``params`` are conditioned, so they appear as observed; their prior
    terms are neither (a constant), so the log-likelihood is log p(y | theta) whatever is fixed."""
    trace = handlers.trace(handlers.substitute(model, data=values)).get_trace(params, **observed)
    likelihood, prior = jnp.zeros(()), jnp.zeros(())
    for name, site in trace.items():
        if site["type"] != "sample" or name in params:
            continue
        term = jnp.sum(site["fn"].log_prob(site["value"]))
        if site["scale"] is not None:
            term = site["scale"] * term
        if site["is_observed"]:
            likelihood = likelihood + term
        else:
            prior = prior + term
    return likelihood, prior


def supports(model, params, observed) -> dict:
    """The support of every unobserved sample site (one seeded trace)."""
    trace = handlers.trace(handlers.seed(model, 0)).get_trace(params, **observed)
    return {name: s["fn"].support for name, s in trace.items() if s["type"] == "sample" and not s["is_observed"]}


@program_cache
def ml2_runner(spec, objective: str, optimizer: str, num_steps: int, lr: float, tol: float):
    """Every chain's ``(z0, params, observed) -> (values, trace, iterations, log-likelihood, log prior)``: z0 (chain,
    ...) holds the free sites unconstrained; values are the optimum's constrained values."""
    model = conditioned_program(spec)

    def one_chain(z0, params, observed):
        support = supports(model, params, observed)

        def constrained(z):
            return {name: biject_to(support[name])(value) for name, value in z.items()}

        def negative_objective(z):
            likelihood, prior = log_terms(model, constrained(z), params, observed)
            return -(likelihood + prior) if objective == "map" else -likelihood

        if optimizer == "adam":
            z, trace, iterations = _adam(negative_objective, z0, num_steps, lr)
        else:
            z, trace, iterations = _lbfgs(negative_objective, z0, num_steps, tol)
        values = constrained(z)
        return (values, trace, iterations, *log_terms(model, values, params, observed))

    return vmapped_chains(one_chain)


@program_cache
def host_program(spec, objective: str, layout: tuple):
    """``jit((z, params, observed) -> ((loss, (values, log-likelihood, log prior)), grad))`` for one chain: z (k,)
    (and grad) the free sites unconstrained, flattened in the order of ``layout`` ((name, shape), ...); values
    constrained, by name. One flat array per call, split inside the program: the host loop calls it hundreds of
    times per chain, and a dict of small arrays cost one transfer per site per call (docs/performance.md)."""
    model = conditioned_program(spec)
    sizes = [int(np.prod(shape)) for _, shape in layout]
    ends = np.cumsum(sizes)[:-1].tolist()

    def loss(z, params, observed):
        parts = jnp.split(z, ends)
        z = {name: part.reshape(shape) for (name, shape), part in zip(layout, parts, strict=True)}
        support = supports(model, params, observed)
        values = {name: biject_to(support[name])(value) for name, value in z.items()}
        likelihood, prior = log_terms(model, values, params, observed)
        total = likelihood + prior if objective == "map" else likelihood
        return -total, (values, likelihood, prior)

    return jax.jit(jax.value_and_grad(loss, has_aux=True))


def _host_chains(spec, objective, timer, z0, params, observed, num_steps: int, tol: float, ftol: float):
    """The ``host-lbfgs`` optimizer: every chain of z0 (chain, ...) by ``optimise.host_lbfgs``, one after another,
    over one compiled value-and-gradient; the outputs of ``ml2_runner``'s program, stacked over chains."""
    layout = tuple((name, tuple(np.shape(value)[1:])) for name, value in z0.items())
    program = host_program(spec, objective, layout)
    params, observed = jax.device_put((params, observed))  # once, not at every call

    def value_and_grad(z):
        (value, _), grad = timer.call(program, jnp.asarray(z), params, observed)
        return value, np.asarray(grad, float)

    outputs = []
    for c in range(np.shape(z0[layout[0][0]])[0]):
        start = np.concatenate([np.ravel(np.asarray(z0[name][c], float)) for name, _ in layout])
        z, losses, steps = optimise.host_lbfgs(value_and_grad, start, num_steps, tol, ftol)
        (_, (values, likelihood, prior)), _ = timer.call(program, jnp.asarray(z), params, observed)
        trace = np.where(np.arange(num_steps) < steps, -losses, -losses[steps - 1])
        outputs.append((values, trace, np.asarray(steps), likelihood, prior))
    return jax.tree.map(lambda *leaves: jnp.stack([jnp.asarray(leaf) for leaf in leaves]), *outputs)


def _adam(loss, z0, num_steps: int, lr: float):
    def gradient(z, _):
        value, grad = jax.value_and_grad(loss)(z)
        return grad, -value

    z, trace = optimise.adam_scan(gradient, z0, lr, num_steps=num_steps)
    return z, trace, jnp.asarray(num_steps)


def _lbfgs(loss, z0, max_steps: int, tol: float):
    """``optimise.lbfgs``, its trace as the objective (-loss) repeated after convergence (a fixed-length trace for
    every chain)."""
    z, losses, steps = optimise.lbfgs(loss, z0, max_steps, tol)
    trace = jnp.where(jnp.arange(max_steps) < steps, -losses, -losses[steps - 1])
    return z, trace, steps


def _starts(spec, sites: dict, init: dict, key, num_chains: int, radius: float, timer) -> dict:
    """Unconstrained starting points (chain, *site shape) (module docstring).

    Host-side where it can be: the given values are checked in NumPy and the noise is added there; the noise of all
    sites is drawn by one compiled program. Run op by op, the same arithmetic compiled a dozen small programs per
    call (docs/performance.md#first-call-eager). Compiled together, XLA would fuse the multiply and add into one FMA and
    move the starts by an ulp; split this way they equal the op-by-op ones bit for bit."""
    unknown = set(init) - set(sites)
    if unknown:
        raise OptionError(
            f"ml2: init names {sorted(unknown)}, which are not free sites of {spec.name!r}: {list(sites)}."
        )
    centres = {}
    for name, site in sites.items():
        given = init.get(name, spec.default_params.get(name))
        if given is None:
            centres[name] = np.zeros(site.shape)
            continue
        try:
            value = np.broadcast_to(np.asarray(given, float), site.shape)
        except ValueError:
            raise OptionError(f"ml2: init[{name!r}] has shape {np.shape(given)}; the site has {site.shape}.") from None
        if not np.all(np.asarray(site.support(value))):
            raise OptionError(f"ml2: init[{name!r}] = {given!r} is outside the site's support.")
        centres[name] = np.asarray(biject_to(site.support).inv(jnp.asarray(value)))
    shapes = tuple((name, site.shape) for name, site in sites.items())
    noise = timer.call(_noise_program(shapes, num_chains, radius), key)
    return {name: centres[name] + np.asarray(noise[name]) for name, _ in shapes}


@program_cache
def _noise_program(shapes: tuple, num_chains: int, radius: float):
    """``jit(key -> noise)``: for each site of ``shapes`` ((name, shape), ...) in order, one key split and radius x
    N(0, I) of shape (num_chains, *shape), zero for chain 0."""

    def noise(key):
        out = {}
        for name, shape in shapes:
            key, sub = jax.random.split(key)
            out[name] = radius * jax.random.normal(sub, (num_chains, *shape)).at[0].set(0.0)
        return out

    return jax.jit(noise)


@register_engine(
    "ml2",
    requires={"collapsed"},
    options={
        "objective": opt.choice("ml", OBJECTIVES, "ml: log p(y | theta); map: plus log p(theta)"),
        "optimizer": opt.choice("lbfgs", OPTIMIZERS, "L-BFGS (zoom line search) or Adam"),
        "num_chains": opt.num_chains(1),
        "num_steps": opt.num_steps(500),
        "learning_rate": opt.learning_rate(0.05),
        "tolerance": Option("float", 1e-6, "L-BFGS stops when the gradient norm is below this", minimum=0.0),
        "ftol": Option("float", 2.220446049250313e-09, "host-lbfgs only: relative gain that stops it", minimum=0.0),
        "init_radius": Option("float", 1.0, "spread of the starts after the first (unconstrained space)", minimum=0.0),
        "init": Option("mapping", {}, "starting values by site name (the rest: the model's defaults)"),
        "params": opt.params({}),
    },
    summary="Type-II maximum likelihood / MAP of a collapsed model's hyperparameters (L-BFGS or Adam)",
)
def ml2(spec, dataset, key, timer, **options) -> EngineOutput:
    params, observed = options["params"], observed_args(dataset)
    sites = {name: site for name, site in latent_sites(spec, dataset).items() if name not in params}
    if not sites:
        raise OptionError(f"ml2: every parameter of {spec.name!r} is fixed by params; nothing to optimise.")
    init, chains, radius = dict(options["init"]), options["num_chains"], float(options["init_radius"])
    z0 = _starts(spec, sites, init, key, chains, radius, timer)
    if options["optimizer"] == "host-lbfgs":
        tol, ftol = float(options["tolerance"]), float(options["ftol"])
        outputs = _host_chains(spec, options["objective"], timer, z0, params, observed, options["num_steps"], tol, ftol)
    else:
        outputs = _vmapped_chains(spec, options, timer, z0, params, observed)
    values, trace, iterations, likelihood, prior = outputs
    return EngineOutput(
        posterior={name: np.asarray(value)[:, None] for name, value in values.items()},  # NumPy: no compiled op
        point_estimates={**values, "log_likelihood": likelihood, "log_prior": prior, "iterations": iterations},
        traces={"objective": trace},
        num_lik_evals=int(np.sum(np.asarray(iterations))),
    )


def _vmapped_chains(spec, options, timer, z0, params, observed):
    run = ml2_runner(
        spec,
        options["objective"],
        options["optimizer"],
        options["num_steps"],
        float(options["learning_rate"]),
        float(options["tolerance"]),
    )
    return run.run(timer, z0, params, observed)
