"""Export a stored reference posterior to posteriordb's layout (docs/gym.md#posteriordb), so that others can use the
zoo's references. The layout follows stan-dev/posteriordb's ``doc/DATABASE_CONTENT.md`` and the files of its
``posterior_database/`` folder (e.g. ``posteriors/gp_pois_regr-gp_pois_regr.json``)::

    DIR/posteriors/<posterior>.json                       name, model_name, data_name, reference_posterior_name,
                                                          dimensions, keywords, urls, references, added_by, added_date
    DIR/models/info/<model>.info.json                     name, title, description, model_code {"numpyro": path}, ...
    DIR/models/numpyro/<model>.py                         the NumPyro program's source
    DIR/data/info/<data>.info.json                        name, title, description, data_file, ...
    DIR/data/data/<data>.json.zip                         the observed arrays (zipped JSON; matrices as lists of rows)
    DIR/reference_posteriors/draws/info/<posterior>.info.json
                                                          name, inference {method, method_arguments}, diagnostics,
                                                          checks_made, comments, added_by, added_date, versions
    DIR/reference_posteriors/summary_statistics/mean/mean/<posterior>.json        names, mean, mcse_mean
    DIR/reference_posteriors/summary_statistics/mean/info/<posterior>.info.json
    DIR/reference_posteriors/summary_statistics/mean_squared_value/mean_squared_value/<posterior>.json
                                                          names, mean_squared_value, mcse_mean
    DIR/reference_posteriors/summary_statistics/mean_squared_value/info/<posterior>.info.json

with ``<posterior>`` = ``<data>-<model>`` as in posteriordb. The zoo stores moments, not draws, so the reference's
draws file (``draws/draws/<posterior>.json.zip``) is not written: the summary statistics stand for it. Quantity names
are Stan's (``f[1]``, ``x[1,2]``: 1-based).
"""

import functools
import inspect
import io
import json
import zipfile
from datetime import UTC, datetime
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from inference.results.references import StoredReference

__all__ = ["ADDED_BY", "export", "names"]

ADDED_BY = "structured-gp-zoo (zoo reference --export)"


def names(ref: StoredReference) -> list[str]:
    """Stan-style names of every scalar quantity, in the order of the reference's sites and C order within each."""
    out = []
    for site, q in ref.quantities.items():
        shape = np.shape(q.mean)
        if not shape:
            out.append(site)
            continue
        out += [f"{site}[{','.join(str(i + 1) for i in index)}]" for index in product(*(range(n) for n in shape))]
    return out


def _flat(ref: StoredReference, moment: str) -> list[float]:
    return np.concatenate([np.ravel(getattr(q, moment)) for q in ref.quantities.values()]).tolist()


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text).strip("_")


def _write(path: Path, payload: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def export(ref: StoredReference, directory: "Path | str") -> list[Path]:
    """Write ``ref`` under ``directory`` in posteriordb's layout (above); return the files written."""
    import jax

    import zoo

    spec = zoo.get(ref.model, **dict(ref.model_options))
    dataset = spec.simulate(jax.random.key(ref.data_seed), **dict(ref.size))
    from inference.results.references import data_digest

    if data_digest(dataset.observed) != ref.data_sha256:
        from inference.results.gym_metrics import NoReferenceError

        raise NoReferenceError(f"reference {ref.id}: the simulated data no longer match it; rebuild it")
    root = Path(directory)
    options = "".join(f"_{_slug(k)}_{_slug(str(v))}" for k, v in ref.model_options.items())
    # Held-fixed parameters condition the program: a different model (posteriordb's posterior is data x model).
    fixed = f"_{ref.id.rsplit('--', 1)[-1].replace('-', '_')}" if ref.params else ""
    model_name = f"zoo_{_slug(ref.model)}{options}{fixed}"
    size = "_".join(f"{_slug(k)}{v}" for k, v in sorted(ref.size.items()))
    data_name = f"zoo_{_slug(ref.model)}{options}{'_' + size if size else ''}_data{ref.data_seed}"
    posterior_name = f"{data_name}-{model_name}"
    today = datetime.now(UTC).date().isoformat()
    keywords = ["structured-gp-zoo", "gaussian process", ref.kind]
    written = []

    dims = {site: int(np.size(q.mean)) for site, q in ref.quantities.items()}
    written.append(
        _write(
            root / "posteriors" / f"{posterior_name}.json",
            {
                "name": posterior_name,
                "keywords": keywords,
                "urls": [],
                "model_name": model_name,
                "data_name": data_name,
                "reference_posterior_name": posterior_name,
                "references": [],
                "dimensions": dims,
                "fixed_parameters": dict(ref.params),
                "added_date": today,
                "added_by": ADDED_BY,
            },
        )
    )
    code_path = f"models/numpyro/{model_name}.py"
    program = spec.program.func if isinstance(spec.program, functools.partial) else spec.program
    header = (
        f"# NumPyro program of the structured-gp-zoo model {ref.model!r} with options {dict(ref.model_options)}:\n"
        f"# import zoo; program = zoo.get({ref.model!r}, **{dict(ref.model_options)!r}).program\n"
    )
    if isinstance(spec.program, functools.partial):
        header += f"# bound keyword arguments: {sorted(spec.program.keywords)}\n"
    if ref.params:
        header += f"# conditioned on the parameters held fixed (numpyro.handlers.condition): {json.dumps(ref.params)}\n"
    (root / code_path).parent.mkdir(parents=True, exist_ok=True)
    (root / code_path).write_text(header + "\n" + inspect.getsource(program))
    written.append(root / code_path)
    written.append(
        _write(
            root / "models" / "info" / f"{model_name}.info.json",
            {
                "name": model_name,
                "keywords": keywords,
                "title": spec.summary,
                "description": f"{spec.summary}. Source: {spec.source}",
                "urls": [],
                "model_code": {"numpyro": code_path},
                "references": None,
                "added_date": today,
                "added_by": ADDED_BY,
            },
        )
    )
    data_file = f"data/data/{data_name}.json"
    arrays = {k: np.asarray(v).tolist() for k, v in dataset.observed.items()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{data_name}.json", json.dumps(arrays))
    (root / data_file).parent.mkdir(parents=True, exist_ok=True)
    (root / f"{data_file}.zip").write_bytes(buffer.getvalue())
    written.append(root / f"{data_file}.zip")
    written.append(
        _write(
            root / "data" / "info" / f"{data_name}.info.json",
            {
                "name": data_name,
                "keywords": ["synthetic", *keywords] if ref.size or ref.model != "gp/cox" else keywords,
                "title": f"Data of {ref.model} (size {dict(ref.size) or 'default'}, seed {ref.data_seed})",
                "description": f"spec.simulate(jax.random.key({ref.data_seed}), **{dict(ref.size)!r}) of zoo model "
                f"{ref.model!r}; SHA-256 of the observed arrays {ref.data_sha256}",
                "urls": [],
                "data_file": data_file,
                "references": None,
                "added_date": today,
                "added_by": ADDED_BY,
            },
        )
    )
    prov = dict(ref.provenance)
    method = "analytical" if ref.kind == "exact" else "blackjax_nuts_sampling"
    arguments = {
        k: prov.get(k) for k in ("chains", "draws_per_chain", "thin", "warmup", "seed") if prov.get(k) is not None
    }
    info = {
        "name": posterior_name,
        "inference": {
            "method": method,
            # the random permutation sampler's step, if the reference applied one (docs/gym.md#symmetry)
            "method_arguments": {**arguments, "engine": prov.get("engine"), **_symmetry(prov)},
        },
        "diagnostics": {
            "diagnostic_information": {"names": names(ref)},
            **dict(prov.get("diagnostics") or {}),
        },
        "checks_made": dict(prov.get("checks_made") or {"analytical": True}),
        "comments": f"regenerate with: {prov.get('command', '')}",
        "added_by": ADDED_BY,
        "added_date": today,
        "versions": dict(prov.get("versions") or {}),
    }
    written.append(_write(root / "reference_posteriors" / "draws" / "info" / f"{posterior_name}.info.json", info))
    stats = root / "reference_posteriors" / "summary_statistics"
    for statistic, moment in (("mean", "mean"), ("mean_squared_value", "second_moment")):
        values = {"names": names(ref), statistic: _flat(ref, moment), "mcse_mean": _flat(ref, f"{moment}_mcse")}
        written.append(_write(stats / statistic / statistic / f"{posterior_name}.json", values))
        written.append(_write(stats / statistic / "info" / f"{posterior_name}.info.json", info))
    return written


def _symmetry(prov) -> dict:
    record = prov.get("symmetry") or {}
    return {"symmetry": record} if record.get("applied") else {}
