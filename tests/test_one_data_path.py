"""One data path (docs/architecture.md#data-flow): figure scripts fit models only through ``inference.run``, and no
optimiser or SVI loop lives outside ``inference/``. Pure source checks (ast), no JAX."""

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


def test_removed_training_functions_are_gone():
    for module, names in REMOVED.items():
        loaded = importlib.import_module(module)
        assert not [n for n in names if hasattr(loaded, n)], module


def test_the_checks_can_fail():
    script = "from zoo import dagp as d\nimport optax\nd.fit(1)\nfrom numpyro.infer import SVI\n"
    tree = ast.parse(script)
    assert calls_into_removed(tree) == ["line 3: zoo.dagp.fit"]
    assert training_imports(tree) == ["optax", "numpyro.infer.SVI"]
