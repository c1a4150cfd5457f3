"""The packages' layers, read from the source with ``ast`` (nothing is imported): ``zoo`` (models, data) below
``inference`` (engines, result files) below ``benchmarks`` and ``paper_figures``, which are siblings and never
import each other. Lazy imports inside functions count too."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "zoo": {"inference", "benchmarks", "paper_figures"},
    "inference": {"benchmarks", "paper_figures"},
    "benchmarks": {"paper_figures"},
    "paper_figures": {"benchmarks"},
}


def imported_packages(source: str) -> set[str]:
    """Top-level package names of every absolute ``import`` / ``from ... import`` in ``source``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_imported_packages_sees_every_form():
    source = "import a.b\nfrom c.d import e\ndef f():\n    import g\n    from h import i\nfrom . import j\n"
    assert imported_packages(source) == {"a", "c", "g", "h"}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_no_higher_layer(package):
    offences = [
        f"{path.relative_to(ROOT)} imports {sorted(bad)}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if (bad := imported_packages(path.read_text()) & FORBIDDEN[package])
    ]
    assert not offences, "\n".join(offences)
