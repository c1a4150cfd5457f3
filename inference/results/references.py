"""Reference posteriors: the one small format of the zoo's ground truths (docs/gym.md#references).

A reference is the posterior of one model variant on one data set with some parameters held fixed, summarised per
reported quantity (every element of every latent site) by its mean, variance, second moment E[x^2] and the variance
of the second moment Var[x^2] (what b^2 needs, docs/gym.md#metric), each with its Monte Carlo standard error (0 for
exact references), plus how it was made. One JSON file per reference under ``zoo/references/`` (``REFERENCES_DIR``),
named by ``reference_id``::

    {
      "format": "zoo-reference/1",
      "id": "gp__classification--n=30--data0--fixed-1a2b3c4d",
      "model": "gp/classification", "model_options": {}, "size": {"n": 30}, "data_seed": 0,
      "params": {"lengthscale": 1.0, "variance": 4.0},          # held fixed (empty: every parameter sampled)
      "data_sha256": "...",                                    # of the observed arrays (a stale reference fails)
      "kind": "exact" | "certified",
      "quantities": {"f": {"shape": [30], "mean": [...], "mean_mcse": [...], "var": [...], "var_mcse": [...],
                           "second_moment": [...], "second_moment_mcse": [...],
                           "var_second_moment": [...], "var_second_moment_mcse": [...]}, ...},
      "provenance": {"method": ..., "command": "zoo reference ...", "engine": ..., "engine_options": {...},
                     "chains": 10, "draws_per_chain": 1000, "thin": 10, "warmup": 10000, "seed": 4711,
                     "diagnostics": {...}, "checks_made": {...}, "date": ..., "versions": {...}, "wall_s": ...}
    }

Arrays are nested lists of the site's shape. ``model_options`` keep only options that differ from the family's
defaults, so ``gp/classification`` and ``gp/classification`` with ``link=probit`` (its default) are one reference.

Certified references follow posteriordb's reference-posterior definition (stan-dev/posteriordb,
``doc/REFERENCE_POSTERIOR_DEFINITION.md``): at least 10 000 draws (10 chains x 1000 after thinning by 10), at least 4
chains, R-hat < 1.01 for every quantity, every quantity's bulk and tail ESS above the lower end of posteriordb's bound
of joint probability 0.95 for independent draws (``ess_bounds``; the upper end is recorded), E-BFMI above 0.2 in
every chain, ESS per iteration above 1e-4, and no divergent transition after warm-up (``certify``).
"""

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import zoo
from inference.results import diagnostics
from inference.results.gym_metrics import NoReferenceError, Reference
from zoo.errors import OptionError

__all__ = [
    "ESS_NULL_TABLE",
    "FORMAT",
    "MOMENTS",
    "REFERENCES_DIR",
    "Quantity",
    "StoredReference",
    "build_command",
    "canonical_model_options",
    "certify",
    "data_digest",
    "ess_bounds",
    "find",
    "from_draws",
    "from_gaussian",
    "load",
    "max_quantities",
    "plain_json",
    "reference_id",
    "require",
    "stored",
]

FORMAT = "zoo-reference/1"
REFERENCES_DIR = Path(zoo.__file__).resolve().parent / "references"
# Every quantity's moments, each stored with ``<name>_mcse``.
MOMENTS = ("mean", "var", "second_moment", "var_second_moment")

# posteriordb's reference-posterior criteria (doc/REFERENCE_POSTERIOR_DEFINITION.md).
MIN_DRAWS = 10_000
MIN_CHAINS = 4
MAX_RHAT = 1.01
MIN_EFMI = 0.2
MIN_ESS_PER_ITERATION = 1e-4
# The simulated null distribution of bulk and tail ESS (benchmarks/ess_null_quantiles.py) that ``ess_bounds`` reads.
ESS_NULL_TABLE = Path(__file__).resolve().parent / "ess_null_10x1000.json"
JOINT_PROBABILITY = 0.95


@dataclass(frozen=True)
class Quantity:
    """One latent site's moments, each an array of the site's shape, with their Monte Carlo standard errors."""

    mean: np.ndarray
    var: np.ndarray
    second_moment: np.ndarray
    var_second_moment: np.ndarray
    mean_mcse: np.ndarray
    var_mcse: np.ndarray
    second_moment_mcse: np.ndarray
    var_second_moment_mcse: np.ndarray

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": list(np.shape(self.mean))}
        for name in MOMENTS:
            out[name] = np.asarray(getattr(self, name), dtype=float).tolist()
            out[f"{name}_mcse"] = np.asarray(getattr(self, f"{name}_mcse"), dtype=float).tolist()
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Quantity":
        shape = tuple(raw["shape"])
        arrays = {}
        for name in MOMENTS:
            for key in (name, f"{name}_mcse"):
                arrays[key] = np.asarray(raw[key], dtype=float).reshape(shape)
        return cls(**arrays)


@dataclass(frozen=True)
class StoredReference:
    """A reference posterior (the format above). ``params``: the parameters it holds fixed, as plain JSON data."""

    model: str
    model_options: Mapping[str, Any]
    size: Mapping[str, Any]
    data_seed: int
    params: Mapping[str, Any]
    data_sha256: str
    kind: str
    quantities: Mapping[str, Quantity]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return reference_id(self.model, self.model_options, self.size, self.data_seed, self.params)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.id,
            "model": self.model,
            "model_options": canonical_model_options(self.model, self.model_options),
            "size": dict(self.size),
            "data_seed": self.data_seed,
            "params": plain_json(self.params),
            "data_sha256": self.data_sha256,
            "kind": self.kind,
            "quantities": {name: q.to_json() for name, q in self.quantities.items()},
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str = "<reference>") -> "StoredReference":
        if raw.get("format") != FORMAT:
            raise NoReferenceError(f"{where}: not a {FORMAT} file (format {raw.get('format')!r})")
        return cls(
            model=raw["model"],
            model_options=dict(raw["model_options"]),
            size=dict(raw["size"]),
            data_seed=int(raw["data_seed"]),
            params=dict(raw["params"]),
            data_sha256=raw["data_sha256"],
            kind=raw["kind"],
            quantities={name: Quantity.from_json(q) for name, q in raw["quantities"].items()},
            provenance=dict(raw.get("provenance", {})),
        )

    def save(self, directory: "Path | str | None" = None) -> Path:
        """Write ``<directory>/<id>.json`` (default ``REFERENCES_DIR``) atomically; return its path."""
        from inference.files.atomic import atomic_write_text

        path = Path(directory or REFERENCES_DIR) / f"{self.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, _dump(self.to_json()))
        return path

    def moments_and_mcse(self) -> tuple[dict[str, tuple], dict[str, tuple]]:
        """({site: (mean, sd)}, {site: (MCSE of the mean, MCSE of the sd)}) for ``diagnostics.compare``; the sd's MCSE
        by the delta method, MCSE(var) / (2 sd)."""
        moments, mcse = {}, {}
        for name, q in self.quantities.items():
            sd = np.sqrt(q.var)
            moments[name] = (q.mean, sd)
            with np.errstate(divide="ignore", invalid="ignore"):
                mcse[name] = (q.mean_mcse, np.where(sd > 0, q.var_mcse / (2 * sd), 0.0))
        return moments, mcse

    def gym_reference(self, sites: "list[str] | None" = None) -> Reference:
        """The b^2 reference (E[x^2], Var[x^2]) of ``sites`` (default: every quantity)."""
        names = list(self.quantities) if sites is None else sites
        missing = [name for name in names if name not in self.quantities]
        if missing:
            raise NoReferenceError(f"reference {self.id} has no quantities {missing} (it has {list(self.quantities)})")
        return Reference(
            {n: self.quantities[n].second_moment for n in names},
            {n: self.quantities[n].var_second_moment for n in names},
        )


# -- identity ---------------------------------------------------------------------------------------------------


def canonical_model_options(model: str, model_options: Mapping[str, Any]) -> dict[str, Any]:
    """``model_options`` coerced to their declared kinds (``-m num_bins=56`` gives the string "56"), without the
    options equal to the family's defaults, as plain JSON data, sorted."""
    from zoo import registry
    from zoo.options import validate

    declared = registry.family_options(model) or {}
    if not declared:
        return {k: plain_json(v) for k, v in sorted(dict(model_options).items())}
    values = validate(f"model {model!r}", declared, dict(model_options))
    defaults = validate(f"model {model!r}", declared, {})
    return {k: plain_json(values[k]) for k in sorted(values) if plain_json(values[k]) != plain_json(defaults[k])}


def reference_id(
    model: str, model_options: Mapping[str, Any], size: Mapping[str, Any], data_seed: int, params: Mapping[str, Any]
) -> str:
    """A file-name-safe identifier, e.g. ``gp__classification+link=logit--n=30--data0--fixed-1a2b3c4d`` (the hash
    of the fixed parameters' values; no suffix when every parameter is sampled)."""
    options = canonical_model_options(model, model_options)
    variant = "+".join([model.replace("/", "__"), *(f"{k}={_compact(v)}" for k, v in options.items())])
    shown_size = ",".join(f"{k}={_compact(v)}" for k, v in sorted(dict(size).items())) or "default-size"
    ident = f"{variant}--{shown_size}--data{int(data_seed)}"
    if params:
        # flattened values: a scalar and a one-element array (a suite's 1.0, a run's [1.0]) are the same parameter
        flat = {k: np.ravel(np.asarray(v, dtype=float)).tolist() for k, v in sorted(dict(params).items())}
        digest = hashlib.sha256(json.dumps(flat, sort_keys=True).encode()).hexdigest()[:8]
        ident += f"--fixed-{digest}"
    return ident


def data_digest(observed: Mapping[str, Any]) -> str:
    """SHA-256 of the observed arrays (names, shapes and float64 values), so a reference whose data have changed
    (a changed simulator) is detected rather than silently compared against."""
    digest = hashlib.sha256()
    for name in sorted(observed):
        array = np.ascontiguousarray(np.asarray(observed[name], dtype=np.float64))
        digest.update(f"{name}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def plain_json(value: Any) -> Any:
    """Plain JSON data: arrays as nested lists of floats, mappings sorted."""
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in sorted(value.items())}
    if isinstance(value, str | bool) or value is None:
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    array = np.asarray(value)
    if array.dtype.kind in "fiu":
        array = array.astype(float)
        return float(array) if array.ndim == 0 else array.tolist()
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    return value


def _dump(raw: Mapping[str, Any]) -> str:
    """The JSON text of a reference: one line per key, and per moment of each quantity (diffs stay readable)."""

    def quantity(q):
        return "{\n" + ",\n".join(f"   {json.dumps(k)}: {json.dumps(v)}" for k, v in q.items()) + "\n  }"

    lines = []
    for key, value in raw.items():
        if key == "quantities":
            inner = ",\n".join(f"  {json.dumps(name)}: {quantity(q)}" for name, q in value.items())
            text = "{\n" + inner + "\n }"
        else:
            text = json.dumps(value)
        lines.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _compact(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_compact(v) for v in value)
    return str(value).replace(" ", "").replace("/", "_")


# -- the stored files -------------------------------------------------------------------------------------------


def load(path: "Path | str") -> StoredReference:
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise NoReferenceError(f"{path}: cannot read the reference ({exc})") from None
    return StoredReference.from_json(raw, where=str(path))


def stored(directory: "Path | str | None" = None) -> list[StoredReference]:
    """Every reference stored in ``directory`` (default ``REFERENCES_DIR``), by id."""
    root = Path(directory or REFERENCES_DIR)
    return [load(path) for path in sorted(root.glob("*.json"))]


def find(
    model: str,
    model_options: Mapping[str, Any],
    size: Mapping[str, Any],
    data_seed: int,
    params: Mapping[str, Any],
    directory: "Path | str | None" = None,
) -> StoredReference | None:
    """The stored reference of this model variant, data and fixed parameters, or None."""
    path = Path(directory or REFERENCES_DIR) / f"{reference_id(model, model_options, size, data_seed, params)}.json"
    if not path.is_file():
        return None
    found = load(path)
    same = (
        found.model == model
        and found.model_options == canonical_model_options(model, model_options)
        and plain_json(found.size) == plain_json(dict(size))
        and _same_params(found.params, params)
    )
    return found if same else None


def require(
    model: str,
    model_options: Mapping[str, Any],
    size: Mapping[str, Any],
    data_seed: int,
    params: Mapping[str, Any],
    directory: "Path | str | None" = None,
) -> StoredReference:
    """``find``, or one clear NoReferenceError naming what is stored for the model and the command that builds it."""
    found = find(model, model_options, size, data_seed, params, directory)
    if found is not None:
        return found
    ident = reference_id(model, model_options, size, data_seed, params)
    others = [r.id for r in stored(directory) if r.model == model]
    hint = f"; stored for {model}: {', '.join(others)}" if others else f"; none is stored for {model}"
    raise NoReferenceError(
        f"no stored reference {ident} (b^2 and the error against the reference need one){hint}. "
        f"Build it with: {build_command(model, model_options, size, data_seed, params)}"
    )


def build_command(model, model_options, size, data_seed, params) -> str:
    """The ``zoo reference`` command line that (re)builds the reference of these arguments."""
    parts = ["zoo reference", model]
    parts += [f"-m {k}={_compact(v)}" for k, v in canonical_model_options(model, model_options).items()]
    parts += [f"--size {k}={v}" for k, v in sorted(dict(size).items())]
    parts += [f"--data-seed {int(data_seed)}"]
    parts += [f"--params {k}={json.dumps(v, separators=(',', ':'))}" for k, v in plain_json(dict(params)).items()]
    return " ".join(parts)


def _same_params(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    from inference.core.fixed import same_values

    return same_values(a, b)


# -- building the moments ---------------------------------------------------------------------------------------


def from_gaussian(mean: Mapping[str, Any], sd: Mapping[str, Any]) -> dict[str, Quantity]:
    """Exact moments of independent-margin Gaussians x ~ N(m, s^2): E[x^2] = m^2 + s^2, Var[x^2] = 2 s^4 + 4 m^2 s^2;
    every MCSE 0."""
    out = {}
    for name in mean:
        m, s = np.asarray(mean[name], dtype=float), np.asarray(sd[name], dtype=float)
        zero = np.zeros_like(m)
        out[name] = Quantity(m, s**2, m**2 + s**2, 2 * s**4 + 4 * m**2 * s**2, zero, zero, zero, zero)
    return out


def from_draws(draws: Mapping[str, np.ndarray]) -> dict[str, Quantity]:
    """Moments of MCMC draws (each (chain, draw, *shape)) with their MCSE: each moment is the mean of a function of
    x (x, (x - m)^2, x^2, (x^2 - E x^2)^2), whose MCSE is ArviZ's MCSE of that function's mean (autocorrelation
    included; the plug-in centre's own error is of order 1/n and left out)."""
    out = {}
    for name, x in draws.items():
        x = np.asarray(x, dtype=float)
        m = x.mean(axis=(0, 1))
        m2 = (x**2).mean(axis=(0, 1))
        centred, centred2 = (x - m) ** 2, (x**2 - m2) ** 2

        def mcse(values):
            return diagnostics.array_diagnostics(values)["mcse_mean"]

        out[name] = Quantity(
            m,
            centred.mean(axis=(0, 1)),
            m2,
            centred2.mean(axis=(0, 1)),
            mcse(x),
            mcse(centred),
            mcse(x**2),
            mcse(centred2),
        )
    return out


# -- certification (posteriordb's criteria) ---------------------------------------------------------------------


@functools.lru_cache(maxsize=1)  # one small table; bounded like every cache here (tests/test_program_cache.py)
def _ess_null_table() -> dict[str, Any]:
    return json.loads(ESS_NULL_TABLE.read_text())


def max_quantities() -> int:
    """The most quantities ``ess_bounds`` can bound: alpha / 2 must keep at least 10 simulated values below it."""
    resolved = 10.0 / _ess_null_table()["quantities"]
    return int(np.log(JOINT_PROBABILITY) / np.log1p(-2 * resolved))


def ess_bounds(ndraws: int, quantities: int = 1) -> dict[str, tuple[float, float]]:
    """Bounds on the bulk and on the tail ESS of ``ndraws`` draws that ``quantities`` independent quantities meet with
    joint probability 0.95: posteriordb's definition ("the effective sample size (bulk and tail) should fall within a
    probability bound of 0.95", from simulated ESS values), with each quantity's central interval at 1 - alpha,
    alpha = 1 - 0.95^(1 / quantities) (Sidak). The quantiles come from ``ESS_NULL_TABLE``, simulated at 10 chains x
    1000 draws (the shape of every certified reference); for other ``ndraws`` the table's deviations from its mean are
    scaled by sqrt(10 000 / ndraws), an approximation. Returns {"ess_bulk": (low, high), "ess_tail": (low, high)}.

    posteriordb-r's code instead uses ndraws +- 4 sqrt(7 ndraws) for every quantity, which independent draws fail
    more often the more quantities there are (42-80 % of runs at 60 quantities, docs/gym.md#ess-bound)."""
    table = _ess_null_table()
    alpha = 1.0 - JOINT_PROBABILITY ** (1.0 / max(int(quantities), 1))
    if quantities > max_quantities():
        raise OptionError(
            f"{quantities} quantities need the null ESS distribution's {alpha / 2:.2g} quantile; the table "
            f"({ESS_NULL_TABLE.name}, {table['quantities']} simulated values) resolves at most {max_quantities()} "
            "quantities: rerun benchmarks/ess_null_quantiles.py with more --quantities"
        )
    log_p = np.log(table["probabilities"])
    scale = np.sqrt(table["chains"] * table["draws_per_chain"] / ndraws)
    out = {}
    for method in ("bulk", "tail"):
        mean = table["mean"][method]
        ratios = np.interp(np.log([alpha / 2, 1 - alpha / 2]), log_p, table[method])
        low, high = (float(ndraws * (mean + (ratio - mean) * scale)) for ratio in ratios)
        out[f"ess_{method}"] = (low, high)
    return out


def certify(
    draws: Mapping[str, np.ndarray], divergences: int, efmi: np.ndarray, iterations: int
) -> tuple[dict[str, bool], dict[str, Any]]:
    """posteriordb's checks of a reference's draws (each (chain, draw, *shape), after thinning) and the diagnostics
    they read. ``divergences``: after warm-up, all chains; ``efmi``: E-BFMI per chain; ``iterations``: sampling
    iterations of all chains before thinning (for ESS per iteration)."""
    chains, per_chain = next(iter(draws.values())).shape[:2]
    found = {k: diagnostics.array_diagnostics(np.asarray(v, dtype=float)) for k, v in draws.items()}

    def extreme(key, fn):
        values = np.concatenate([np.ravel(d[key]) for d in found.values()])
        return float(fn(values[np.isfinite(values)])) if np.isfinite(values).any() else float("nan")

    quantities = sum(int(np.prod(np.shape(v)[2:])) for v in draws.values())
    bounds = ess_bounds(chains * per_chain, quantities)
    diag = {
        "ndraws": chains * per_chain,
        "nchains": chains,
        "max_r_hat": extreme("r_hat", np.max),
        "min_ess_bulk": extreme("ess_bulk", np.min),
        "max_ess_bulk": extreme("ess_bulk", np.max),
        "min_ess_tail": extreme("ess_tail", np.min),
        "max_ess_tail": extreme("ess_tail", np.max),
        "quantities": quantities,
        "ess_bounds": {k: list(v) for k, v in bounds.items()},
        "divergent_transitions": int(divergences),
        "min_efmi": float(np.min(efmi)) if np.size(efmi) else float("nan"),
        "ess_per_iteration": extreme("ess_bulk", np.min) / max(int(iterations), 1),
    }
    # The lower bounds are the gate: fewer effective draws than independent ones would give means the draws are not
    # approximately independent. Above the upper bound (antithetic NUTS draws) only makes the moments more precise,
    # and their MCSE says so; recorded, not a failure (posteriordb-r no longer gates on ESS at all).
    above = all(diag[f"min_{k}"] >= bounds[k][0] for k in bounds)
    diag["ess_below_upper_bound"] = all(diag[f"max_{k}"] <= bounds[k][1] for k in bounds)
    checks = {
        "ndraws_is_gte_10k": diag["ndraws"] >= MIN_DRAWS,
        "nchains_is_gte_4": chains >= MIN_CHAINS,
        "r_hat_below_1_01": diag["max_r_hat"] < MAX_RHAT,
        "ess_above_lower_bound": bool(above),
        "efmi_above_0_2": diag["min_efmi"] > MIN_EFMI,
        "ess_per_iteration_above_1e-4": diag["ess_per_iteration"] > MIN_ESS_PER_ITERATION,
        "no_divergent_transitions": diag["divergent_transitions"] == 0,
    }
    return checks, diag
