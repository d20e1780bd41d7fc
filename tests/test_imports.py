"""The modules of hlc import one another in one direction: no circles.

Every ``import hlc…`` and ``from hlc… import`` counts, the ones inside
functions too: a lazy import hides a circle from Python at start-up, not
from a reader, who still cannot understand either module without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

HLC = Path(__file__).resolve().parents[1] / "hlc"


def modules() -> dict[str, Path]:
    found = {}
    for path in HLC.rglob("*.py"):
        parts = list(path.relative_to(HLC.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of hlc that ``module`` imports by name (a package's
    ``__init__`` that Python runs on the way is not counted: it is not what
    the importing module reads)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets |= {f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names}
    found = set()
    for target in targets:
        parts = target.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        if parts and parts[0] == "hlc" and ".".join(parts) != module:
            found.add(".".join(parts))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_import_graph_of_hlc_has_no_circles():
    known = modules()
    graph = {module: imports(module, path, known) for module, path in known.items()}
    assert len(graph) > 50 and sum(map(len, graph.values())) > 100  # the graph was read
    assert cycles(graph) == []


def test_a_circle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_stages_run_in_one_direction():
    """Profiling does not need the dispatcher or the evaluation, and the
    artefacts need no stage."""
    known = modules()
    graph = {module: imports(module, path, known) for module, path in known.items()}
    assert not {m for m in graph["hlc.calibrate.harness"] if m.startswith(("hlc.dispatch", "hlc.evaluation"))}
    for module in (m for m in graph if m.startswith("hlc.artefacts")):
        assert all(m.startswith(("hlc.artefacts", "hlc.errors")) for m in graph[module]), (module, graph[module])


def test_every_package_of_hlc_is_installed():
    """pyproject.toml names hlc's packages one by one (the grammar and the
    templates live outside hlc/): a package missing there works from the
    checkout and fails once installed."""
    import tomllib

    declared = set(tomllib.loads((HLC.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(HLC.parent).parts) for p in HLC.rglob("__init__.py")}
    assert found <= declared, f"not installed: {sorted(found - declared)}"
