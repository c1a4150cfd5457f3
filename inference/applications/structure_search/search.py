"""The greedy beam search over kernel structures (Duvenaud 2014, sec. 3.3 and App. C;
docs/sources/duvenaud.md#search and #search-choices).

Depth 1 fits every base kernel (the thesis starts from WN; our model always has its noise variance, so the
start is "no kernel" and its expansions are the base kernels). At each further depth the ``width`` best kernels
so far (width 1: the thesis's greedy search) are expanded by every operator of the grammar, each new structure
(canonical form, ``zoo.structure``) is fitted by ML-II from several restarts (``fit.py``), plus one from the parent's
optimum where the operator nests the parent (``starts.py``; such a child is never recorded below its parent,
``_evaluate``), and scored; structures
already fitted at an earlier depth are not fitted again. The search stops at ``depth`` or when the best score has
not improved for ``patience`` depths, and returns the best candidate over all depths with the whole trace.
Candidates of a depth are independent: fitted in a loop here, or as Dask tasks on local worker processes or a
cluster (``workers``, ``scheduler``), by compiled marginal likelihoods and gradients shared by the structures of
similar size (``program="shared"``: the structure is data, ``zoo.structure.program``; or one program per
structure), the restarts run by scipy's L-BFGS one after another (ml2's ``host-lbfgs``; or ``optimizer="lbfgs"``:
optax's L-BFGS with the restarts as vmapped chains of one larger compiled program). A candidate that fails
(numerical failure, an error of the engine) is recorded with its error and score -inf, and the search goes on.
"""

import contextlib
import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from inference.applications.structure_search.bounds import PeriodBounds
from inference.applications.structure_search.checkpoint import fingerprint, resumable
from inference.applications.structure_search.checks import check_data
from inference.applications.structure_search.fit import fit_ml2, log_likelihood_at, start_values
from inference.applications.structure_search.result import Fitted, SearchResult, Standardisation
from inference.applications.structure_search.scales import DataScaledFactory, Scales
from inference.applications.structure_search.scores import (
    SCORES,
    bic,
    check_score_options,
    laplace_log_evidence,
    tsmc_log_evidence,
)
from inference.applications.structure_search.smc import smc_search
from inference.applications.structure_search.smc_result import SMCResult
from inference.applications.structure_search.starts import (
    SMALL_VARIANCE,
    WarmStart,
    base_starts,
    data_periods,
    residual_period,
    same_period,
    trend_residual_period,
    warm_starts,
)
from inference.core.cluster import dask_client
from zoo.errors import DataError, OptionError, ZooError
from zoo.kernels import NAMES, num_params
from zoo.structure.grammar import BASIC, OPERATORS, TIME_SERIES_BASE, Grammar, expand
from zoo.structure.program import Capacity, NotEncodable, encode

__all__ = [
    "MAX_SHARED_PRODUCTS",
    "NESTING_TOLERANCE",
    "PROGRAMS",
    "SHARED_MAX_N",
    "STRATEGIES",
    "SearchError",
    "check_data",
    "search",
]

PROGRAMS = ("auto", "shared", "per-structure")
STRATEGIES = ("greedy", "smc")
# Largest n at which "auto" shares programs between structures. An evaluation of the shared program gathers every
# term's factors, padded to the capacity, a working set of ~(bank + terms x factors) n^2 floats: at n = 129-200 it
# costs 1.3-2x the per-structure program's time, less than the compilation it saves; at n = 300 the working set
# leaves this machine's 32 MB cache and an evaluation took 3-6x longer (docs/performance.md#shared-program).
SHARED_MAX_N = 200
MAX_SHARED_PRODUCTS = 32  # terms x factors of the largest shared program (``_capacities``)
# Nats. A child nests its parent when its neutral limit (starts.py) is within this of the parent's log likelihood;
# a nesting child's recorded log likelihood is then at least the parent's minus this (``_evaluate``). The limit
# differs from the parent's function by ~1e-8 of Var(y), far below it; the rest is the optimiser's stopping rule.
NESTING_TOLERANCE = 0.01
MIN_SUBSET = 20  # smallest ``subset``: a changepoint of two sums fits ~13 parameters
SWITCHING = frozenset({"C.4", "C.5", "C.6", "C.7"})  # the operators whose candidates ``subset`` fits on a subset
# Printed once before the first candidate: our BIC has the thesis's sign (3.3), the opposite of the usual one.
CONVENTIONS = {
    "bic": "BIC = log p(y | theta) - |M| / 2 log n, higher is better (the thesis's sign: -1/2 x the usual BIC)",
    "laplace": "Laplace log evidence, higher is better",
    "tsmc": "tempered-SMC log evidence, higher is better",
}


class SearchError(ZooError):
    """A search that cannot run: bad options, or every candidate of the first depth failed."""


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise OptionError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def _minimum_size(grammar: Grammar) -> int:
    """Free parameters of the smallest depth-1 model (a base kernel and the noise variance)."""
    return min(num_params(NAMES[b](), 1) for b in grammar.base) + 1


def search(
    X,
    y,
    depth: int = 10,
    base: tuple[str, ...] = TIME_SERIES_BASE,
    operators: tuple[str, ...] | None = None,
    score: str = "bic",
    width: int = 1,
    restarts: int = 3,
    jitter: float = 1.0,
    num_steps: int = 300,
    patience: int = 2,
    optimizer: str = "host-lbfgs",
    program: str = "auto",
    seed: int = 0,
    score_options: dict | None = None,
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    strategy: str = "greedy",
    smc_options: dict | None = None,
    checkpoint: "str | Path | None" = None,
    resume: bool = False,
    subset: int | None = None,
) -> "SearchResult | SMCResult":
    """Search kernel structures for y (n,) against X (n, D) (module docstring).

    depth: the number of expansion rounds (depth 1: the base kernels alone). base: base-kernel names. operators:
    grammar operators (default all of C.1-C.11 for one input column, C.1-C.3 for several). score: "bic" (the
    thesis), "laplace" or "tsmc" (``scores.py``); BIC is recorded for every candidate whatever ranks them.
    score_options: for "tsmc", the ``tsmc`` engine's options (e.g. num_particles, num_chains, num_mcmc_steps).
    width: the beam. restarts: ML-II restarts per candidate (chains). optimizer: ml2's optimizer for every candidate
    ("host-lbfgs": scipy's L-BFGS over one compiled value-and-gradient, a program that compiles in about a second;
    "lbfgs": optax's L-BFGS in one compiled while_loop, 5-9 s of compilation per candidate and slow on flat
    optima; docs/performance.md#structure-search). program: "shared" fits the candidates through ``gp/structure``,
    one compiled program for every group of structures of similar size (``zoo.structure.program``; a kernel it
    cannot encode, or a very large one, gets its own program), "per-structure" through ``gp/regression`` compiled
    for each structure, "auto" (default) shared up to ``SHARED_MAX_N`` observations
    (docs/performance.md#shared-program). progress: a line printer (default stderr). workers: with more than one,
    each depth's candidates are Dask tasks on a local cluster of that many processes; scheduler: the address of a
    Dask cluster to use instead (``inference.core.cluster``). Either way the result is the serial search's: every
    candidate's seed is drawn before any is fitted, and the trace keeps the candidates' order.

    strategy: "greedy" (the above) or "smc": sequential Monte Carlo over structures and hyperparameters (``smc.py``,
    Saad et al. 2023), which uses ``base``, ``seed``, ``progress`` and ``smc_options`` (``smc.SMC_DEFAULTS``) and
    returns an ``SMCResult`` (posterior over structures, log evidence, model-averaged forecasts).

    checkpoint: a folder where every fitted candidate is kept as it is fitted, and the trace so far at the end of each
    depth (``checkpoint.py``); with ``resume`` the candidates found there are loaded instead of fitted again.

    subset: on a series longer than this, the restarts of changepoint and change-window candidates (C.4-C.7) run on
    every k-th point (at most ``subset`` points), and one restart on all points continues from their best, beside the
    warm start (gpss-research fitted on subsets of 250 points; docs/performance.md#changepoint-cost: 2.5x cheaper on
    Mauna Loa, 7 nats lower on the one candidate measured). None (default): every restart on all points.
    """
    if strategy not in STRATEGIES:
        raise OptionError(f"strategy must be one of {list(STRATEGIES)}, got {strategy!r}.")
    if strategy == "smc":
        return smc_search(X, y, base=tuple(base), seed=seed, progress=progress, **dict(smc_options or {}))
    X, y = check_data(X, y)
    depth, width = _positive_int("depth", depth), _positive_int("width", width)
    restarts, patience = _positive_int("restarts", restarts), _positive_int("patience", patience)
    workers = _positive_int("workers", workers)
    if optimizer not in ("lbfgs", "host-lbfgs"):
        raise OptionError(f"optimizer must be 'lbfgs' or 'host-lbfgs', got {optimizer!r}.")
    if program not in PROGRAMS:
        raise OptionError(f"program must be one of {list(PROGRAMS)}, got {program!r}.")
    if score not in SCORES:
        raise OptionError(f"score must be one of {list(SCORES)}, got {score!r}.")
    check_score_options(score, dict(score_options or {}))
    if subset is not None and _positive_int("subset", subset) < MIN_SUBSET:
        raise OptionError(f"subset must be at least {MIN_SUBSET} points, got {subset}.")
    D = X.shape[1]
    grammar = Grammar(tuple(base), D, tuple(operators) if operators else (OPERATORS if D == 1 else BASIC))
    n_min = _minimum_size(grammar)
    if X.shape[0] <= n_min:
        raise DataError(
            f"{X.shape[0]} observations cannot fit even the smallest model of this grammar ({n_min} parameters)."
        )
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    scale = Standardisation.of(X, y)
    Xs, ys = scale.inputs(X), scale.targets(y)
    rng = np.random.default_rng(seed)
    factory = DataScaledFactory(Scales.of(Xs), rng)
    bounds = PeriodBounds.of(Xs)  # periodic kernels' admissible region (docs/sources/duvenaud.md#period-bounds)
    options = {
        "depth": depth,
        "base": list(grammar.base),
        "operators": list(grammar.operators),
        "score": score,
        "width": width,
        "restarts": restarts,
        "jitter": jitter,
        "num_steps": num_steps,
        "optimizer": optimizer,
        "program": program if program != "auto" else ("shared" if X.shape[0] <= SHARED_MAX_N else "per-structure"),
        "patience": patience,
        "seed": seed,
        "score_options": dict(score_options or {}),
    }
    if subset is not None:  # only when set, so that checkpoints of searches without it keep their fingerprint
        options["subset"] = int(subset)

    start = time.perf_counter()
    trace: list[Fitted] = []
    fitted_keys: set[str] = set()
    beam: list[Fitted | None] = [None]
    best: Fitted | None = None
    capacities: dict[tuple[int, int], Capacity] = {}  # the shared programs so far, by (terms, factors)
    stale = 0
    interrupted = False
    say(f"score: {CONVENTIONS[score]}")
    with _executor(workers, scheduler) as fit_all, _stop_on_sigint(say) as stop:
        if checkpoint is not None:
            fit_all = resumable(fit_all, Path(checkpoint), fingerprint(Xs, ys, options), resume, say)
        trend = trend_residual_period(Xs, ys)  # the detrended data's period: one per search, not per parent
        for level in range(1, depth + 1):
            todo = []
            for parent in beam:
                if parent is None:  # depth 1: periodic bases start at the data's periodogram peaks too
                    warm = base_starts(grammar, factory.scales, (*data_periods(Xs, ys), trend))
                else:
                    warm = _warm_starts(parent, grammar, factory.scales, Xs, ys, trend)
                for cand in expand(None if parent is None else parent.kernel, grammar, factory):
                    if cand.key not in fitted_keys:
                        fitted_keys.add(cand.key)
                        todo.append((cand, parent, warm.get(cand.key)))
            say(f"depth {level}: {len(todo)} candidates")
            encodings = _encodings([cand for cand, _, _ in todo], D) if options["program"] == "shared" else {}
            shared_by_key = _capacities(encodings, capacities)
            jobs = [
                (
                    cand,
                    parent,
                    level,
                    Xs,
                    ys,
                    0.1 if parent is None else parent.noise,
                    options,
                    int(rng.integers(2**31)),
                    bounds,
                    shared_by_key.get(cand.key),
                    warm,
                )
                for cand, parent, warm in todo
            ]
            this_level: list[Fitted | None] = [None] * len(jobs)
            leader = best  # as the fits arrive (any order); ``best`` itself is then taken in the candidates' order
            for done, (i, entry) in enumerate(fit_all(jobs), start=1):
                this_level[i] = entry
                leader = _better(leader, entry)
                status = f"{entry.score:.2f}" if entry.ok else f"failed ({entry.error})"
                shown = f"{leader.expression} ({leader.score:.2f})" if leader else "-"
                say(
                    f"depth {level} [{done}/{len(todo)}] {entry.expression}: {score} {status}, "
                    f"{entry.wall_s:.1f} s (compile {entry.compile_s:.1f} s); best {shown}"
                )
                if stop.is_set():
                    interrupted = True
                    break
            this_level = [entry for entry in this_level if entry is not None]  # all of them unless interrupted
            for entry in this_level:  # ties go to the earlier candidate, as in a serial search
                best = _better(best, entry)
            trace.extend(this_level)
            if checkpoint is not None and best is not None:  # the trace so far, as the search goes
                partial = SearchResult(best, trace, X, y, scale, score, options, time.perf_counter() - start, True)
                partial.write_json(Path(checkpoint) / "trace.json")
            if interrupted:
                say(f"depth {level}: interrupted after {len(this_level)} of {len(todo)} candidates; stopping")
                if best is None:
                    raise KeyboardInterrupt  # nothing fitted to return
                break
            ok = sorted((e for e in this_level if e.ok), key=lambda e: e.score, reverse=True)
            if not ok:
                if level == 1:
                    raise SearchError("every depth-1 candidate failed: " + "; ".join(e.error for e in this_level))
                say(f"depth {level}: every candidate failed; stopping")
                break
            improved = ok[0] is best and best.depth == level
            stale = 0 if improved else stale + 1
            beam = ok[:width]
            if stale >= patience:
                say(f"depth {level}: no improvement for {patience} depths; stopping")
                break
    return SearchResult(best, trace, X, y, scale, score, options, time.perf_counter() - start, interrupted)


@contextlib.contextmanager
def _stop_on_sigint(say: Callable[[str], None]):
    """An Event set by the first SIGINT (Ctrl-C) while the search runs: the search then stops after the candidate
    being fitted and returns what it has (``SearchResult.interrupted``), which ``zoo search`` writes as usual; the
    handler is then removed, so a second Ctrl-C interrupts at once. Outside the main thread (where Python cannot
    install handlers) the Event is never set and Ctrl-C behaves as before."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)
    previous = signal.default_int_handler if previous is None else previous

    def handler(signum, frame):
        stop.set()
        signal.signal(signal.SIGINT, previous)
        say("interrupted: stopping after the running candidate (Ctrl-C again to stop at once)")

    signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _warm_starts(
    parent: Fitted, grammar: Grammar, scales: Scales, Xs: np.ndarray, ys: np.ndarray, trend: float | None
) -> dict:
    """The warm starts of ``parent``'s nesting expansions by key (starts.py), new periods from its residuals and,
    where it differs by more than 2 %, ``trend``, the detrended data's (``starts.trend_residual_period``)."""
    try:
        period = residual_period(parent.kernel, parent.noise, Xs, ys)
    except np.linalg.LinAlgError:  # a parent whose covariance does not solve: the geometric middle of the bounds
        period = None
    more = () if trend is None or (period is not None and same_period(trend, period)) else (trend,)
    return warm_starts(parent.kernel, grammar, scales, period, more)


def _with_noise(warm: WarmStart, noise: float) -> list:
    """``fit_ml2``'s warm starts: each at the parent's noise, and each further one (a new periodic part at the
    detrended data's period) once more with the noise started at the new part's start variance (SMALL_VARIANCE of
    Var(y) = 1) if the parent's is below it: against a nearly interpolating parent's near-zero noise the new part may
    not take over the wiggles the parent's kernel absorbed (docs/performance.md#random-starts: Per + RQ on Mauna Loa
    1048.5 at the parent's noise 1.6e-4, 1059.35 from 1e-2, the best of 50 random starts 1059.40), while Per x RQ
    needs the parent's (1089.6 against 741.5); the best restart is kept, so both are tried."""
    floor = SMALL_VARIANCE["start"]
    raised = [(kernel, floor) for kernel in warm.more] if float(noise) < floor else []
    return [*warm.starts, *raised]


def _subset_step(operator: str, n: int, subset: int | None) -> int:
    """k of the every-k-th-point subset a candidate's restarts run on (1: all points)."""
    if subset is None or operator not in SWITCHING or n <= subset:
        return 1
    return -(-n // subset)


def _rounded(values) -> list:
    return [round(float(v), 2) for v in values]


def _better(best: Fitted | None, entry: Fitted) -> Fitted | None:
    return entry if entry.ok and (best is None or entry.score > best.score) else best


@contextlib.contextmanager
def _executor(workers: int, scheduler: str | None):
    """``fit_all(jobs) -> iterator of (index, Fitted)``, each job the arguments of ``_evaluate``: in this process
    in order, or as Dask tasks in the order they finish (``inference.core.cluster``)."""
    if workers == 1 and scheduler is None:
        yield lambda jobs: ((i, _evaluate(*job)) for i, job in enumerate(jobs))
        return
    with dask_client(scheduler, workers) as client:
        from dask.distributed import as_completed  # importable: dask_client found Dask

        def fit_all(jobs):
            futures = {client.submit(_evaluate, *job, pure=False): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                yield futures[future], future.result()  # _evaluate records failures; a lost worker raises

        yield fit_all


def _capacities(encodings: dict, programs: dict) -> dict:
    """The capacity of the shared program each encodable candidate is fitted with, by key.

    Candidates are grouped by their terms and factors rounded up to powers of two, and each group's capacity holds
    every member's slots (and those of the same group at earlier depths, so its compiled program is reused while
    the slots suffice): an evaluation costs about terms x factors gathered products, so a group pads each member by
    at most 2x in each, where one capacity for the whole depth padded every candidate to the largest (a CP(S, S)
    doubles S's terms). Structures of more than ``MAX_SHARED_PRODUCTS`` terms x factors are left to their own
    program. ``programs`` (updated): the capacities so far by (terms, factors)."""
    out = {}
    for key, encoding in encodings.items():
        need = encoding.capacity
        size = (_power_of_two(need.terms), _power_of_two(need.factors))
        if size[0] * size[1] > MAX_SHARED_PRODUCTS:
            continue
        grown = Capacity(need.slots, *size)
        programs[size] = grown if size not in programs else programs[size].union(grown)
        out[key] = size
    return {key: programs[size] for key, size in out.items()}


def _power_of_two(k: int) -> int:
    return 1 << (k - 1).bit_length()


def _encodings(candidates, D: int) -> dict:
    """The encodable candidates' structures as data (``zoo.structure.program``), by key."""
    found = {}
    for cand in candidates:
        with contextlib.suppress(NotEncodable):  # fitted by its own program
            found[cand.key] = encode(cand.kernel, D)
    return found


def _evaluate(
    cand, parent, level: int, Xs, ys, noise: float, options: dict, seed: int, bounds=None, capacity=None, warm=None
) -> Fitted:
    """Fit one candidate (through the shared program of ``capacity`` if given; with one more restart from ``warm``,
    a ``starts.WarmStart``) and score it; failures are recorded, not raised.

    A candidate that nests its parent (its warm start's neutral limit reproduces the parent's log likelihood within
    ``NESTING_TOLERANCE``) and whose best restart still ends below the parent by more than that is refitted from the
    warm start alone with 4x the steps; if that too ends below, the limit itself (the parent's function, a point of
    the child's parameter space) is recorded, so a nested child never scores below its parent's likelihood."""
    entry = Fitted(level, cand.key, cand.operator, None if parent is None else parent.expression)
    t0 = time.perf_counter()
    try:
        run = dict(bounds=bounds, optimizer=options["optimizer"], capacity=capacity)
        start, restarts, jitter = cand.kernel, options["restarts"], options["jitter"]
        every = _subset_step(cand.operator, len(ys), options.get("subset"))
        if every > 1:  # the restarts on every k-th point, then one on all from their best (``search``'s subset)
            Xk, yk = Xs[::every], ys[::every]
            first = fit_ml2(start, Xk, yk, noise, restarts, jitter, options["num_steps"], seed, PeriodBounds.of(Xk),
                            optimizer=options["optimizer"])  # fmt: skip
            start, noise, restarts, jitter = first.kernel, first.noise, 1, 0.0
            entry.compile_s, entry.run_s = first.compile_s, first.run_s
            entry.notes.append(f"restarts on {len(yk)} of {len(ys)} points: {_rounded(first.restart_log_likelihoods)}")
        fit = fit_ml2(
            start,
            Xs,
            ys,
            noise,
            restarts,
            jitter,
            options["num_steps"],
            seed,
            warm=None if warm is None else _with_noise(warm, noise),
            **run,
        )
        entry.compile_s, entry.run_s = entry.compile_s + fit.compile_s, entry.run_s + fit.run_s
        entry.kernel, entry.noise, entry.log_likelihood = fit.kernel, fit.noise, fit.log_likelihood
        entry.restart_log_likelihoods = fit.restart_log_likelihoods
        entry.projected = [i for i, broken in enumerate(fit.projected) if broken]
        if warm is not None and parent is not None:
            floor = log_likelihood_at(warm.limit, parent.noise, Xs, ys)
            entry.nests_parent = bool(floor >= parent.log_likelihood - NESTING_TOLERANCE)
            if entry.nests_parent and entry.log_likelihood < parent.log_likelihood - NESTING_TOLERANCE:
                below = parent.log_likelihood - entry.log_likelihood
                refit = fit_ml2(warm.start, Xs, ys, parent.noise, 1, 0.0, 4 * options["num_steps"], seed, **run)
                entry.compile_s, entry.run_s = entry.compile_s + refit.compile_s, entry.run_s + refit.run_s
                if refit.log_likelihood > entry.log_likelihood:
                    entry.kernel, entry.noise, entry.log_likelihood = refit.kernel, refit.noise, refit.log_likelihood
                note = f"{below:.3g} nats below the parent: refitted from the warm start ({refit.log_likelihood:.4g})"
                if entry.log_likelihood < floor:
                    entry.kernel, entry.noise, entry.log_likelihood = warm.limit, parent.noise, floor
                    note += "; kept the parent's point"
                entry.notes.append(note)
        entry.num_params = num_params(entry.kernel, Xs.shape[1]) + 1
        entry.bic = bic(entry.log_likelihood, entry.num_params, Xs.shape[0])  # after any refit from the warm start
        entry.scores["bic"] = entry.bic
        extra = options["score_options"]
        if options["score"] == "laplace":
            result = laplace_log_evidence(
                cand.key, Xs, ys, start_values(entry.kernel, entry.noise), options["num_steps"], seed
            )
            entry.scores["laplace"] = result["log_evidence"]
        elif options["score"] == "tsmc":
            result = tsmc_log_evidence(cand.key, Xs, ys, seed=seed, **extra)
            entry.scores["tsmc"] = result["log_evidence"]
        entry.score = entry.scores[options["score"]]
        if not math.isfinite(entry.score):
            entry.error = f"non-finite {options['score']} score"
            entry.score = -math.inf
    except (ZooError, FloatingPointError, ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
        entry.error = f"{type(exc).__name__}: {exc}"
        entry.score = -math.inf
    entry.wall_s = time.perf_counter() - t0
    return entry
