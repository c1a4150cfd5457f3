"""Run a suite's grid of cells, in-process or on a Dask cluster, and record each cell as soon as it finishes.

``run_cell`` does the work of one cell and never raises (a failure comes back as an outcome with its error),
so it can run anywhere: here, or as one Dask task on a worker. Only the client writes the results store
(``Recorder``): the InferenceData at once, and the cell's row once its reference (the suite's reference
engine on the same model and seed) has finished, because every row carries the comparison against it.
"""

import copy
import json
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

import zoo
from benchmarks.store import ResultsStore
from benchmarks.suites import STORED, Cell, Suite
from inference.core.cluster import dask_client
from inference.results.references import data_digest
from zoo.errors import ZooError
from zoo.symmetry import step_key, symmetrise

# Posterior means kept in a row per variable (enough to compare runs; the netCDF has everything).
MEANS_PER_VARIABLE = 50
# Points of the b^2-vs-gradients trace kept in a row (log-spaced draws: the report's curves).
CURVE_POINTS = 120


@dataclass
class CellOutcome:
    """What running one cell produced: the InferenceData, or the error that stopped it.

    truth: the dataset's ground truth (numeric arrays only), for the log density of the true latents.
    started: UNIX time the cell started; elapsed_s: its wall time including data simulation.
    """

    cell: Cell
    idata: Any = None
    truth: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    host: str = ""
    started: float = 0.0
    elapsed_s: float = 0.0
    data_sha256: str = ""  # of the observed arrays: a stored reference is used only for the data it was made on

    @property
    def ok(self) -> bool:
        return self.error is None


def run_cell(cell: Cell) -> CellOutcome:
    """Simulate the cell's dataset (or read its data files) and run its engine through ``inference.run``; errors are
    returned."""
    started, clock = time.time(), time.perf_counter()
    host = socket.gethostname()
    try:
        import jax

        import inference
        import zoo

        spec = zoo.get(cell.model, **cell.model_options)
        if cell.data_file:  # zoo compare --data: every engine of the model reads the same files
            from inference.files.data import load_dataset

            dataset = load_dataset(cell.data_file, spec, cell.data_map, cell.test_file or None)
        else:
            dataset = spec.simulate(jax.random.key(cell.data_seed), **cell.size)
        idata = inference.run(spec, dataset, engine=cell.engine, seed=cell.seed, **cell.options)
        elapsed = time.perf_counter() - clock
        digest = data_digest(dataset.observed)
        return CellOutcome(cell, idata, _numeric(dataset.truth), None, None, host, started, elapsed, digest)
    except Exception as exc:  # a failing cell is recorded, never fatal to the grid
        return failed_outcome(cell, exc, host, started, time.perf_counter() - clock)


def failed_outcome(cell: Cell, exc: BaseException, host: str = "", started: float = 0.0, elapsed: float = 0.0):
    detail = "".join(traceback.format_exception(exc))
    return CellOutcome(cell, None, {}, f"{type(exc).__name__}: {exc}", detail, host, started, elapsed)


def _numeric(truth: dict[str, Any]) -> dict[str, np.ndarray]:
    out = {}
    for name, value in truth.items():
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        out[name] = array
    return out


def make_row(outcome: CellOutcome, reference: Any, reference_note: str, executor: str) -> dict[str, Any]:
    """The results-table row of a finished cell: its spec, status, error, host, timings and every metric of
    ``diagnostics.compare`` against ``reference`` (an InferenceData, or None when the reference failed)."""
    from inference.core.api import package_versions
    from inference.results import diagnostics

    cell = outcome.cell
    row: dict[str, Any] = {
        "cell": cell.id,
        **cell.spec(),
        "status": "ok" if outcome.ok else "failed",
        "error": outcome.error,
        "traceback": outcome.traceback,
        "host": outcome.host,
        "started": datetime.fromtimestamp(outcome.started, UTC).isoformat(timespec="seconds"),
        "elapsed_s": outcome.elapsed_s,
        "executor": executor,
        "reference_note": reference_note,
    }
    if not outcome.ok:
        row["versions"] = package_versions()
        return row
    idata = outcome.idata
    attrs = idata.posterior.attrs
    row["engine_options"] = json.loads(attrs["options"])
    row["versions"] = json.loads(attrs["versions"])
    stored, row["reference_source"] = stored_reference(outcome)
    if stored is not None:
        reference, row["reference_note"] = stored, ""
        idata, row["symmetrised"] = symmetrised(idata, cell, stored)
        row.update(gym_row(idata, stored))
    elif cell.reference == STORED:
        row["reference_note"] = row["reference_source"]
    metrics = diagnostics.compare({cell.label: idata}, reference=reference, truth=outcome.truth).iloc[0].to_dict()
    metrics.pop("engine", None)
    row.update(metrics)
    row["num_grad_evals"] = int(attrs.get("num_grad_evals", -1))
    row["posterior_means"] = {
        name: np.ravel(mean)[:MEANS_PER_VARIABLE].tolist()
        for name, (mean, _) in diagnostics.posterior_moments(idata).items()
    }
    return row


def stored_reference(outcome: CellOutcome) -> tuple[Any, str]:
    """The stored reference posterior of the cell's model, data and fixed parameters (None if there is none, or if
    it was made on other data), and a note saying which: ``stored:<id>``, or why not."""
    from inference.results import references

    cell, attrs = outcome.cell, outcome.idata.posterior.attrs
    fixed = json.loads(attrs.get("fixed_params", "{}"))
    found = references.find(cell.model, cell.model_options, cell.size, cell.data_seed, fixed)
    if found is None or cell.data_file:
        return None, "no stored reference" if cell.reference == STORED else cell.reference
    if found.data_sha256 != outcome.data_sha256:
        return None, f"stored reference {found.id} is stale (made on other data): rebuild it with zoo reference"
    return found, f"stored:{found.id}"


def symmetrised(idata: Any, cell: Cell, stored: Any) -> tuple[Any, bool]:
    """The run's draws moved like its reference's when the reference applied its model's exact symmetry (the random
    permutation sampler's step, docs/gym.md#symmetry; keys from the cell's seed), so that a chain settled in one
    mirror mode is compared with the symmetric truth; otherwise the run as it is. (run, whether moved)"""
    if not stored.provenance.get("symmetry", {}).get("applied"):
        return idata, False
    symmetry = zoo.get(cell.model, **cell.model_options).symmetry
    names = list(idata.posterior.data_vars)
    moved = symmetrise(symmetry, {name: idata.posterior[name].values for name in names}, step_key(cell.seed))
    out = copy.deepcopy(idata)
    for name in names:
        out.posterior[name].values = moved[name]
    return out, True


def gym_row(idata: Any, stored: Any) -> dict[str, Any]:
    """The gym's numbers of a run against a stored reference (docs/gym.md#metric): gradients until b^2 < 0.01
    (pooled over chains, and the chains' median), the final b^2, and the pooled trace at CURVE_POINTS log-spaced
    draws; empty for runs without gradients or draws to trace (exact engines, point estimates)."""
    from inference.results.gym_metrics import gym_metrics

    sites = [name for name in stored.quantities if name in idata.posterior]
    if not sites or int(idata.posterior.attrs.get("num_grad_evals", -1)) <= 0 or idata.posterior.sizes["draw"] < 2:
        return {}
    found = gym_metrics(idata, stored.gym_reference(sites))
    draws = found["grads_pooled"].size
    at = np.unique(np.geomspace(1, draws, min(CURVE_POINTS, draws)).astype(int) - 1)
    return {
        # "inf" (not reached by the end of the run) as a string: the store writes JSON, which has no infinity
        "grads_to_b2": _count(found["grads_to_b2_pooled"]),
        "grads_to_b2_chain_median": _count(found["grads_to_b2_chain_median"]),
        "b2_final": found["b2_final_pooled"],
        "grads_source": found["grads_source"],
        "b2_sites": sites,
        "b2_curve": {"grads": found["grads_pooled"][at].tolist(), "b2": found["b2_pooled"][at].tolist()},
    }


def _count(value: float) -> "float | str":
    return float(value) if np.isfinite(value) else "inf"


def missing_references(cells: Iterable[Cell]) -> list[str]:
    """For cells whose suite asks for the stored reference: one line per model variant that has none (with the
    command that builds it), checked before anything runs."""
    from benchmarks.posteriors import UNKNOWN, cell_fixed
    from inference.results import references

    problems = []
    for cell in cells:
        if cell.reference != STORED:
            continue
        fixed = cell_fixed(cell.model, cell.model_options, cell.engine, cell.options)
        if fixed is UNKNOWN:
            continue
        fixed = {k: references.plain_json(v) for k, v in fixed.items()}
        if references.find(cell.model, cell.model_options, cell.size, cell.data_seed, fixed) is None:
            command = references.build_command(cell.model, cell.model_options, cell.size, cell.data_seed, fixed)
            problems.append(f"{cell.variant}: none stored; build it with `{command}`")
    return list(dict.fromkeys(problems))


# -- executors: each yields a CellOutcome per cell, in the order cells finish ---------------------------


class Progress:
    """Counts of done, running and failed cells, printed as one line per event (to stderr)."""

    def __init__(self, total: int, already: int, out: Callable[[str], None] | None = None) -> None:
        self.total, self.done, self.failed, self.running = total, already, 0, 0
        self.out = out or (lambda line: print(line, file=sys.stderr, flush=True))

    def line(self, event: str) -> None:
        counts = (
            f"[{self.done + self.failed}/{self.total}] {self.done} done, {self.running} running, {self.failed} failed"
        )
        self.out(f"{counts} | {event}")


def local_outcomes(cells: Iterable[Cell], progress: Progress) -> Iterator[CellOutcome]:
    """Run cells one after another in this process (compiled programs are reused across seeds)."""
    for cell in cells:
        progress.running = 1
        progress.line(f"start {_name(cell)}")
        outcome = run_cell(cell)
        progress.running = 0
        yield outcome


def dask_outcomes(
    cells: list[Cell], progress: Progress, scheduler: str | None = None, workers: int = 2
) -> Iterator[CellOutcome]:
    """Run each cell as one Dask task: on the cluster at ``scheduler``, or on a local cluster of ``workers``
    single-threaded worker processes started here. Outcomes come back to the client, which alone writes."""
    with dask_client(scheduler, workers) as client:
        from dask.distributed import as_completed  # importable: dask_client found Dask

        progress.line(f"dask: {len(client.scheduler_info()['workers'])} workers at {client.scheduler.address}")
        futures = {
            # References first (higher priority): the other cells' rows wait for them.
            client.submit(run_cell, cell, key=f"zoo-cell-{cell.id}", pure=False, priority=int(cell.is_reference)): cell
            for cell in cells
        }
        for future in as_completed(futures):
            cell = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # a lost worker or an unpicklable result: the cell failed
                outcome = failed_outcome(cell, exc)
            progress.running = _running(client, len(futures) - progress.done - progress.failed)
            yield outcome


def _running(client: Any, unfinished: int) -> int:
    try:
        return min(unfinished, sum(len(keys) for keys in client.processing().values()))
    except Exception:  # progress only: never let a status query stop the grid
        return 0


def _name(cell: Cell) -> str:
    return f"{cell.variant} / {cell.label} / seed {cell.seed}"


# -- the client: decide what to run, record outcomes ----------------------------------------------------


class Recorder:
    """Writes outcomes to the store: the InferenceData at once, the row when the cell's reference is known.

    references: per (model, seed), the reference's InferenceData, or None if the reference failed.
    """

    def __init__(self, store: ResultsStore, finished: dict[str, dict], progress: Progress, executor: str) -> None:
        self.store, self.progress, self.executor = store, progress, executor
        self.references: dict[tuple[str, int], Any] = {}
        self.waiting: dict[tuple[str, int], list[CellOutcome]] = {}
        for row in finished.values():
            if row["label"] == row["reference"]:
                key = (row["model"], row["seed"])
                self.references[key] = row["cell"] if row["status"] == "ok" else None  # loaded when needed

    def record(self, outcome: CellOutcome) -> None:
        cell = outcome.cell
        if outcome.ok:
            self.store.write_idata(cell.id, outcome.idata)
        key = (cell.variant, cell.seed)
        if cell.reference == STORED:  # compared against the stored reference: nothing to wait for
            self._write(outcome)
        elif cell.is_reference:
            self.references[key] = outcome.idata if outcome.ok else None
            self._write(outcome)
            for waiting in self.waiting.pop(key, []):
                self._write(waiting)
        elif key in self.references:
            self._write(outcome)
        else:
            self.waiting.setdefault(key, []).append(outcome)
            self.progress.line(f"{'ok' if outcome.ok else 'FAILED'} {_name(cell)}; row waits for its reference")

    def flush(self) -> None:
        """Write rows still waiting (their reference never finished: an interrupted or partial grid)."""
        for outcomes in self.waiting.values():
            for outcome in outcomes:
                self._write(outcome, note="reference did not run")
        self.waiting.clear()

    def _reference(self, key: tuple[str, int]) -> Any:
        ref = self.references.get(key)
        if isinstance(ref, str):  # a cell id from an earlier (resumed) run
            ref = self.references[key] = self.store.read_idata(ref)
        return ref

    def _write(self, outcome: CellOutcome, note: str = "") -> None:
        cell = outcome.cell
        key = (cell.variant, cell.seed)
        reference = outcome.idata if cell.is_reference else self._reference(key)
        if not note and reference is None and cell.reference != STORED:
            note = "reference failed"
        try:
            row = make_row(outcome, reference, note, self.executor)
        except Exception as exc:  # e.g. a posterior the diagnostics cannot digest: record it as the failure
            row = make_row(failed_outcome(cell, exc, outcome.host, outcome.started, outcome.elapsed_s), None, note, "")
        self.store.write_row(row)
        if row["status"] == "ok":
            self.progress.done += 1
            event = f"ok {_name(cell)} in {outcome.elapsed_s:.1f} s"
        else:
            self.progress.failed += 1
            event = f"FAILED {_name(cell)}: {row['error'].splitlines()[0][:200]}"
        self.progress.line(event)


def cells_to_run(suite: Suite, finished: dict[str, dict], retry_failed: bool = False) -> list[Cell]:
    """Cells of ``suite`` without a finished row of the same spec (failed ones too when ``retry_failed``)."""
    todo = []
    for cell in suite.cells:
        row = finished.get(cell.id)
        same = row is not None and {k: row.get(k) for k in cell.spec()} == _jsonable(cell.spec())
        if not same or (retry_failed and row["status"] != "ok"):
            todo.append(cell)
    return todo


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


@dataclass
class GridResult:
    ran: int
    skipped: int
    failed: int
    seconds: float


def run_suite(
    suite: Suite,
    store: ResultsStore,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int = 2,
    resume: bool = False,
    retry_failed: bool = False,
    out: Callable[[str], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> GridResult:
    """Run every cell of ``suite`` not yet finished in ``store``, recording each as it finishes.

    Without ``resume`` the store must hold no results (so two suites never mix in one folder). ``stop`` is asked
    after each recorded cell; when it says True no further cell starts (what finished stays recorded, so the run
    resumes with ``resume``).
    """
    if executor not in {"local", "dask"}:
        raise ZooError(f"unknown executor {executor!r}; use 'local' or 'dask'.")
    if not resume and not store.is_empty():
        raise ZooError(
            f"{store.root} holds results of an earlier run; pass --resume to finish it, or choose another --out."
        )
    store.open()
    finished = store.rows() if resume else {}
    # Rows that finished but whose cell spec changed are redone; rows the suite no longer has are left alone.
    todo = cells_to_run(suite, finished, retry_failed)
    kept = {cell.id: finished[cell.id] for cell in suite.cells if cell.id in finished and cell not in todo}
    store.write_suite(suite.name, suite.source)
    progress = Progress(len(suite.cells), already=len(kept), out=out)
    progress.failed = sum(row["status"] != "ok" for row in kept.values())
    progress.done -= progress.failed
    if kept:
        progress.line(f"resuming: {len(kept)} cells already finished, {len(todo)} to run")
    recorder = Recorder(store, kept, progress, executor)
    start = time.perf_counter()
    outcomes = (
        local_outcomes(todo, progress) if executor == "local" else dask_outcomes(todo, progress, scheduler, workers)
    )
    ran = set()
    for outcome in outcomes:
        recorder.record(outcome)
        ran.add(outcome.cell.id)
        if stop():
            break
    recorder.flush()
    failed = sum(row["status"] != "ok" for row in store.rows().values() if row["cell"] in ran)
    return GridResult(ran=len(ran), skipped=len(kept), failed=failed, seconds=time.perf_counter() - start)
