"""One data path (docs/architecture.md#data-flow): figure scripts and applications fit models only through
``inference.run``, no optimiser or SVI loop lives outside ``inference/``, and inside it every optimiser is set up by
``inference/optimisation/optimise.py``. Pure source checks (ast), no JAX."""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Training functions that moved into engines; a figure script calling one of them bypasses inference.run.
REMOVED = {
    "zoo.dagp": ("fit", "restart_fits", "fit_restarts", "final_objective"),
    "zoo.nigp": ("fit",),
    "zoo.gp": ("fit_se_ml2",),
    "zoo.gpssm": ("fit_ar1_gp",),
}
# Imports that mean "this module optimises or trains": allowed in inference/ only.
TRAINING_IMPORTS = {"optax", "numpyro.infer.SVI", "numpyro.infer.svi", "numpyro.optim"}


def modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def training_imports(tree: ast.AST) -> list[str]:
    """The TRAINING_IMPORTS a module's imports name (``import optax``, ``from numpyro.infer import SVI``, ...)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "optax" or a.name in TRAINING_IMPORTS]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if base.split(".")[0] == "optax" or base in TRAINING_IMPORTS:
                found.append(base)
            found += [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in TRAINING_IMPORTS]
    return found


def calls_into_removed(tree: ast.AST) -> list[str]:
    """Calls ``<module alias>.<removed name>(...)`` where the alias is imported from a module listed in REMOVED."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name] = a.name
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            module = aliases.get(node.func.value.id)
            if module in REMOVED and node.func.attr in REMOVED[module]:
                found.append(f"line {node.lineno}: {module}.{node.func.attr}")
    return found


@pytest.mark.parametrize("path", modules("paper_figures"), ids=lambda p: p.name)
def test_figure_scripts_train_through_inference_run(path):
    tree = ast.parse(path.read_text())
    assert not calls_into_removed(tree), calls_into_removed(tree)
    assert not training_imports(tree), f"{path.name} imports training machinery: {training_imports(tree)}"


def test_no_optimiser_in_the_models():
    offenders = {
        str(p.relative_to(ROOT)): found for p in modules("zoo") if (found := training_imports(ast.parse(p.read_text())))
    }
    assert not offenders, f"optimisers belong in inference/: {offenders}"


@pytest.mark.parametrize("path", modules("inference/applications"), ids=lambda p: str(p.relative_to(ROOT)))
def test_applications_train_through_inference_run(path):
    """An application (docs/architecture.md#layers) fits a model through ``inference.run`` and optimises with the one
    optimisation module's loops; it neither imports optax or NumPyro's SVI nor calls an engine function itself."""
    tree = ast.parse(path.read_text())
    assert not calls_into_removed(tree), calls_into_removed(tree)
    assert not training_imports(tree), f"{path.name} imports training machinery: {training_imports(tree)}"
    assert not engine_calls(tree), (
        f"{path.name} calls engines directly, not through inference.run: {engine_calls(tree)}"
    )


# Constructors of optax optimisers: an Adam or L-BFGS set up anywhere but optimise.py is a second optimiser loop.
OPTIMISERS = {"adam", "adamw", "sgd", "lbfgs", "rmsprop", "adagrad", "lamb", "lion", "noisy_sgd", "scale_by_adam"}
ONE_OPTIMISATION_MODULE = ROOT / "inference" / "optimisation" / "optimise.py"


def optimiser_set_ups(tree: ast.AST) -> list[str]:
    return [
        f"line {node.lineno}: optax.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "optax"
        and node.func.attr in OPTIMISERS
    ]


def engine_functions() -> set[tuple[str, str]]:
    """(module, function) of every function registered with ``@register_engine`` in an engine family."""
    found = set()
    for folder in ("mcmc", "gaussian", "particles", "optimisation"):
        for path in modules(f"inference/{folder}"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", None) == "register_engine"
                    for d in node.decorator_list
                ):
                    found.add((module, node.name))
    return found


ENGINE_FUNCTIONS = engine_functions()


def engine_calls(tree: ast.AST) -> list[str]:
    """Engine functions imported by name, or called as ``<engine module alias>.<engine function>(...)``."""
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if (node.module, a.name) in ENGINE_FUNCTIONS:
                    found.append(f"line {node.lineno}: {node.module}.{a.name}")
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        name = node.value.id if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) else None
        if name in aliases and (aliases[name], node.attr) in ENGINE_FUNCTIONS:
            found.append(f"line {node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_engine_functions_are_found():
    assert ("inference.optimisation.ml2", "ml2") in ENGINE_FUNCTIONS
    assert ("inference.gaussian.moment_matching", "direct") in ENGINE_FUNCTIONS


def test_every_optimiser_is_set_up_in_the_one_optimisation_module():
    offenders = {
        str(p.relative_to(ROOT)): found
        for p in modules("inference", "zoo", "paper_figures", "benchmarks", "examples")
        if p != ONE_OPTIMISATION_MODULE and (found := optimiser_set_ups(ast.parse(p.read_text())))
    }
    assert not offenders, f"set up optimisers in {ONE_OPTIMISATION_MODULE.relative_to(ROOT)}: {offenders}"


def test_removed_training_functions_are_gone():
    for module, names in REMOVED.items():
        loaded = importlib.import_module(module)
        assert not [n for n in names if hasattr(loaded, n)], module


def test_the_checks_can_fail():
    script = "from zoo import dagp as d\nimport optax\nd.fit(1)\nfrom numpyro.infer import SVI\n"
    tree = ast.parse(script)
    assert calls_into_removed(tree) == ["line 3: zoo.dagp.fit"]
    assert training_imports(tree) == ["optax", "numpyro.infer.SVI"]
    script = "from inference.optimisation import ml2\nfrom inference.gaussian.moment_matching import direct\n"
    script += "ml2.ml2(1)\noptax.adam(0.1)\n"
    tree = ast.parse(script)
    assert engine_calls(tree) == [
        "line 2: inference.gaussian.moment_matching.direct",
        "line 3: inference.optimisation.ml2.ml2",
    ]
    assert optimiser_set_ups(tree) == ["line 4: optax.adam"]
