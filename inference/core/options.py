"""The engine options whose meaning every engine that has them shares, declared once (docs/architecture.md#engines).

An engine registers ``options={name: Option(...)}`` (``zoo.options.Option``: kind, default, range, choices) and
``inference.run`` validates what the user passed against them in one place, before anything is compiled. The
constructors below give the shared options their one meaning and range; an engine picks its own defaults.
"""

from zoo.options import Option


def num_chains(default: int) -> Option:
    return Option("int", default, "independent chains (or restarts), run in lockstep", minimum=1)


def num_warmup(default: int, minimum: int = 0) -> Option:
    return Option("int", default, "warm-up (adaptation) steps per chain, discarded", minimum=minimum)


def num_samples(default: int, minimum: int = 1, doc: str = "draws kept per chain") -> Option:
    return Option("int", default, doc, minimum=minimum)


def num_particles(default: int, minimum: int = 2, doc: str = "particles per filter or population") -> Option:
    return Option("int", default, doc, minimum=minimum)


def num_steps(default: int, minimum: int = 1, doc: str = "optimisation (or outer) steps") -> Option:
    return Option("int", default, doc, minimum=minimum)


def learning_rate(default: float) -> Option:
    return Option("float", default, "optimiser step size", above=0.0)


# chain_method: "auto" is resolved when the run starts (``resolve_chain_method``) and the result records the choice.
CHAIN_METHODS = ("auto", "sequential", "vectorized")


def chain_method() -> Option:
    return Option(
        "str",
        "auto",
        "sequential: chains one after another in one program; vectorized: vmapped in lockstep; auto: vectorized on "
        "an accelerator (jax.default_backend() is not cpu), sequential on a CPU (docs/performance.md#device-defaults)",
        choices=CHAIN_METHODS,
    )


def resolve_chain_method(value: str, backend: str) -> str:
    """``auto`` -> ``vectorized`` on an accelerator (a batched gradient is nearly free there: NUTS's ESS/s 126
    vectorised against 62 sequential on an H200 at N = 100), ``sequential`` on a CPU (where the lockstep costs about
    twice the gradients' time, docs/performance.md#nuts); any other value as given."""
    if value != "auto":
        return value
    return "sequential" if backend == "cpu" else "vectorized"


# Where an MCMC engine's chains start (docs/gym.md#pathfinder-init). Not the ``init`` mapping of starting site
# values below: engines with this option start from a distribution, not from given values.
CHAIN_INITS = ("uniform", "pathfinder")


def chain_init() -> Option:
    return Option(
        "str",
        "uniform",
        "where chains start: uniform on (-init_radius, init_radius) in the unconstrained space, or pathfinder: draws "
        "of multi-path Pathfinder's PSIS-resampled approximation (its paths start uniform; its gradients counted)",
        choices=CHAIN_INITS,
    )


def target_accept(default: float = 0.8) -> Option:
    return Option("float", default, "target acceptance rate of step-size adaptation", above=0.0, below=1.0)


def params(default: dict | None = None) -> Option:
    doc = "fixed parameter values by site name" + (" (None: the model's defaults)" if default is None else "")
    return Option("mapping", default, doc, optional=default is None)


def choice(default: str, choices: tuple[str, ...], doc: str) -> Option:
    return Option("str", default, doc, choices=tuple(choices))


def fraction(default: float, doc: str, *, closed: bool = True) -> Option:
    """A number in [0, 1] (``closed``) or (0, 1)."""
    if closed:
        return Option("float", default, doc, minimum=0.0, maximum=1.0)
    return Option("float", default, doc, above=0.0, below=1.0)


def adaptive_mcmc() -> dict[str, Option]:
    """What BlackJAX's NUTS/HMC and NumPyro's NUTS share: 4 chains of 500 warm-up steps (at least one: the step size
    adapts during warm-up) and 500 draws, fixed ``params``, and the adaptation's target acceptance rate."""
    return {
        "num_chains": num_chains(4),
        "num_warmup": num_warmup(500, minimum=1),
        "num_samples": num_samples(500),
        "params": params({}),
        "target_accept": target_accept(0.8),
    }


def init() -> Option:
    """Starting values of learned parameter sites. An engine whose model view declares a start (the GP-SSM view's
    ``initial_params``) gets the rest from ``inference.run``'s preparation step (docs/architecture.md#preparation)."""
    return Option("mapping", {}, "starting values by site name (the rest: the start the model's view declares)")
