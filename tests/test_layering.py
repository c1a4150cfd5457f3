"""The packages' layers and the rooms of ``inference/``, read from the source with ``ast`` (nothing is imported);
lazy imports inside functions count too (docs/architecture.md#dependencies).

``zoo`` (models, data) sits below ``inference``; inside ``inference``, ``core`` (the driver) sits below the engine
families (``mcmc``, ``gaussian``, ``particles``, ``optimisation``), which sit below ``applications`` (clients of
``inference.run``); ``results`` and ``files`` serve them all. ``benchmarks`` and ``paper_figures`` are siblings on top
and never import each other. The import graph has no circle anywhere.
"""

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("zoo", "inference", "benchmarks", "paper_figures")
ENGINE_FAMILIES = ("inference.mcmc", "inference.gaussian", "inference.particles", "inference.optimisation")
APPLICATIONS = "inference.applications"
# What an engine may import from ``zoo``: the contracts between models and engines, the GP algebra and kernels;
# never a model family (docs/architecture.md#dependencies).
ZOO_CONTRACTS = (
    "zoo.ssm",
    "zoo.gp_ssm_view",
    "zoo.registry",
    "zoo.errors",
    "zoo.options",
    "zoo.sites",
    "zoo.programs",
    "zoo.gp",
    "zoo.linalg",
    "zoo.moments",
    "zoo.kernels",
)

FORBIDDEN = {
    "zoo": {"inference", "benchmarks", "paper_figures"},
    "inference": {"benchmarks", "paper_figures"},
    "benchmarks": {"paper_figures"},
    "paper_figures": {"benchmarks"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> dict[str, Path]:
    """Every first-party module and package: name -> file."""
    found = {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    found["zoo_cli"] = ROOT / "zoo_cli.py"
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _nearest(name: str, known) -> str | None:
    """The longest known module that ``name`` is or lies inside (``a.b.f`` -> ``a.b`` when ``f`` is a function)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imported_modules(source: str, here: str, is_package: bool, known) -> set[str]:
    """First-party modules that ``source`` (module ``here``) imports, each resolved to the module the import
    names: ``from p import m`` is an arrow to ``p.m`` when that is a module, else to ``p``. Relative imports are
    resolved against ``here``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = here if is_package else here.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(target for name in targets if (target := _nearest(name, known)) is not None)
    return found


def import_graph() -> dict[str, set[str]]:
    known = source_modules()
    return {
        name: imported_modules(path.read_text(), name, path.name == "__init__.py", known) - {name}
        for name, path in known.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted: every circle lies in one."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:
        # Iterative depth-first search: the graph is deeper than Python's default recursion limit allows for.
        work: list[tuple[str, Iterator[str]]] = [(node, iter(sorted(graph[node])))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[current] = min(low[current], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[current])
                if low[current] == index[current]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == current:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


@cache
def graph() -> dict[str, set[str]]:
    """The import graph, built when a test first asks: not at collection, which every pytest worker repeats."""
    return import_graph()


def arrows(source_prefix: str) -> Iterator[tuple[str, str]]:
    for module in sorted(graph()):
        if _within(module, source_prefix):
            for target in sorted(graph()[module]):
                yield module, target


def test_imported_modules_sees_every_form():
    known = {"a", "a.b", "c", "c.d", "c.d.e", "g", "h", "p", "p.q", "p.j"}
    source = (
        "import a.b\nfrom c.d import e, f\ndef f():\n    import g\n    from h import i\n"
        "from . import j\nfrom .q import k\nimport numpy\n"
    )
    assert imported_modules(source, "p.m", False, known) == {"a.b", "c.d.e", "c.d", "g", "h", "p.j", "p.q"}


def test_cycles_finds_a_lazy_circle_and_no_false_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_circle_anywhere():
    found = cycles(graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(component) for component in found)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_no_higher_layer(package):
    offences = [
        f"{module} imports {target}"
        for module, target in arrows(package)
        if any(_within(target, bad) for bad in FORBIDDEN[package])
    ]
    assert not offences, "\n".join(offences)


def test_core_imports_no_engine_and_no_application():
    allowed = ("inference.core", "inference.results", "inference.files", "zoo")
    offences = [f"{m} imports {t}" for m, t in arrows("inference.core") if not any(_within(t, a) for a in allowed)]
    assert not offences, "\n".join(offences)


@pytest.mark.parametrize("family", ENGINE_FAMILIES)
def test_engines_import_core_families_and_zoo_contracts_only(family):
    """An engine imports ``inference.core``, its own family, another family's public names (its package, never a
    module inside it) and zoo's contract modules; never an application, a model family or ``inference`` itself."""
    other_families = set(ENGINE_FAMILIES) - {family}
    zoo_allowed = ("zoo", *ZOO_CONTRACTS)

    def allowed(target: str) -> bool:
        if _within(target, "zoo"):
            return target == "zoo" or any(_within(target, c) for c in zoo_allowed[1:])
        return (
            _within(target, "inference.core")
            or _within(target, family)
            or target in other_families
            or _within(target, "inference.files")
        )

    offences = [f"{m} imports {t}" for m, t in arrows(family) if not allowed(t)]
    assert not offences, "\n".join(offences)


def test_no_engine_or_driver_imports_an_application():
    """Applications call engines (through ``inference.run``), never the reverse. Only the package ``inference``
    itself, which assembles the public face, and the applications import them."""
    offences = [
        f"{m} imports {t}"
        for m, t in arrows("inference")
        if _within(t, APPLICATIONS) and not _within(m, APPLICATIONS) and m != "inference"
    ]
    assert not offences, "\n".join(offences)


def test_zoo_imports_no_model_family_from_its_data():
    """``zoo/data`` holds data; a model family builds on it, not the reverse."""
    families = {m for m in graph() if _within(m, "zoo") and m.count(".") == 1} - {"zoo.data", *ZOO_CONTRACTS}
    families -= {"zoo.config", "zoo.decomposition"}
    offences = [f"{m} imports {t}" for m, t in arrows("zoo.data") if any(_within(t, f) for f in families)]
    assert not offences, "\n".join(offences)


# ---------------------------------------------------------------------------------------------------------------
# Public names: figures, benchmarks and examples import from ``inference`` only what some ``__all__`` lists.

USERS = ("paper_figures", "benchmarks", "examples")


def declared_all(path: Path) -> set[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def private_imports(path: Path) -> list[str]:
    """Names imported from ``inference`` (or from any module inside it) that the module imported from does not
    list in its ``__all__``, and attributes read off an imported ``inference`` module that its ``__all__`` does
    not list."""
    tree = ast.parse(path.read_text())
    offences, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _within(node.module, "inference"):
            source = _module_file(node.module)
            public = declared_all(source) if source else None
            for alias in node.names:
                if public is None or alias.name not in public:
                    offences.append(f"from {node.module} import {alias.name}")
                elif (sub := _module_file(f"{node.module}.{alias.name}")) is not None:
                    modules[alias.asname or alias.name] = (f"{node.module}.{alias.name}", sub)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            name, sub = modules[node.value.id]
            public = declared_all(sub)
            if public is None or node.attr not in public:
                offences.append(f"{name}.{node.attr}")
    return sorted(set(offences))


def test_private_imports_finds_unlisted_names(tmp_path):
    script = tmp_path / "figure.py"
    script.write_text(
        "from inference.core import run, Engine\nfrom inference.particles import pf\n"
        "pf.particle_filter\npf._not_public\n"
    )
    found = private_imports(script)
    assert "from inference.core import Engine" in found
    assert "from inference.core import run" not in found
    assert "inference.particles.pf._not_public" in found


@pytest.mark.parametrize("user", USERS)
def test_users_import_only_public_names(user):
    offences = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / user).rglob("*.py"))
        for name in private_imports(path)
    ]
    assert not offences, "names no __all__ lists:\n" + "\n".join(offences)
