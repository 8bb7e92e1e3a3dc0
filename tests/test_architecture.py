"""embsim's floors: imports point down, never around in a circle.

Reads every module of the package with `ast` (imports inside functions included, since a
function-local import is still a dependency, only a hidden one) and checks
- no cycle between any two modules, and none between subpackages;
- each subpackage imports only from its own floor or the floors below (FLOORS);
- strategies and schedulers never import each other (they meet only in the engine);
- report/ reads typed results, never the engine's internals;
- torch is imported only by embsim.calibrate, and only the calibrate command reaches it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "embsim"

# Bottom to top. A subpackage (or top-level module) may import its own floor and below.
FLOORS = [
    # base: errors, atomic writes, YAML, registries, typed component options, curve
    # interpolation, child-process lifetime, the python -m tools' arguments, NCCL's names,
    # "did you mean" suggestions, counted nouns
    {"embsim", "embsim.errors", "embsim.atomic", "embsim.identity", "embsim.registry", "embsim.options", "embsim.yamlio",
     "embsim.curves", "embsim.lifetime", "embsim.toolargs", "embsim.nccl_names", "embsim.suggest",
     "embsim.words"},
    # inputs: what is simulated, and the measured traces
    {"embsim.topology", "embsim.workload", "embsim.trace", "embsim.network"},
    # collective cost model, trace importers, real-kernel calibration (torch)
    {"embsim.collectives", "embsim.imports", "embsim.calibrate"},
    # the step's vocabulary: op identities, ops, step context, timeline
    {"embsim.plan"},
    # policies
    {"embsim.strategies", "embsim.schedulers"},
    # the simulation and its facade
    {"embsim.engine"},
    # what is built from simulations
    {"embsim.report", "embsim.compare", "embsim.ablation", "embsim.sweep", "embsim.validate"},
    # the command line, and how its process ends (interrupts, an output that cannot be written)
    {"embsim.commands", "embsim.cli", "embsim.exits", "embsim.__main__"},
]


def module_names(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def imported(name: str, path: Path, is_pkg: bool, modules) -> set[str]:
    """The package's modules that `name` imports anywhere in its body (absolute, relative,
    `from pkg import submodule`), and every external top-level package as its own name."""
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module
                       for a in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` names a.b.c; keep the longest prefix that is a module here
            while target and target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> nx.DiGraph:
    modules = module_names(root)
    graph = nx.DiGraph()
    for name, (path, is_pkg) in modules.items():
        graph.add_node(name)
        for target in imported(name, path, is_pkg, modules):
            graph.add_edge(name, target)
    return graph


def unit(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to."""
    return ".".join(module.split(".")[:2])


def internal(graph: nx.DiGraph, root_name: str) -> nx.DiGraph:
    return graph.subgraph([n for n in graph if n == root_name or n.startswith(root_name + ".")])


def unit_graph(graph: nx.DiGraph) -> nx.DiGraph:
    units = nx.DiGraph()
    for a, b in graph.edges:
        if unit(a) != unit(b):
            units.add_edge(unit(a), unit(b), via=f"{a} -> {b}")
    return units


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    return import_graph(PACKAGE)


def test_no_cycle_between_modules(graph):
    assert cycles(internal(graph, "embsim")) == []


def test_no_cycle_between_subpackages(graph):
    units = unit_graph(internal(graph, "embsim"))
    found = cycles(units)
    detail = [units.edges[a, b]["via"] for c in found for a in c for b in c if units.has_edge(a, b)]
    assert found == [], detail


def test_every_subpackage_has_a_floor(graph):
    placed = set().union(*FLOORS)
    units = {unit(n) for n in internal(graph, "embsim")}
    assert units - placed == set(), "place the new subpackage on a floor in FLOORS"


def test_imports_point_down(graph):
    floor = {u: i for i, members in enumerate(FLOORS) for u in members}
    units = unit_graph(internal(graph, "embsim"))
    upward = [units.edges[a, b]["via"] for a, b in units.edges
              if a in floor and b in floor and floor[b] > floor[a]]
    assert upward == []


def test_policies_meet_only_in_the_engine(graph):
    units = unit_graph(internal(graph, "embsim"))
    assert not units.has_edge("embsim.strategies", "embsim.schedulers")
    assert not units.has_edge("embsim.schedulers", "embsim.strategies")


def test_report_reads_results_not_engine_internals(graph):
    allowed = {"embsim.engine", "embsim.engine.run", "embsim.engine.result", "embsim.engine.config"}
    reach = sorted(f"{a} -> {b}" for a, b in graph.edges
                   if unit(a) == "embsim.report" and unit(b) == "embsim.engine" and b not in allowed)
    assert reach == []


def test_only_calibrate_imports_torch(graph):
    users = sorted(n for n in graph.predecessors("torch") if unit(n) != "embsim.calibrate") \
        if "torch" in graph else []
    assert users == []
    reach = sorted(n for n in graph if unit(n) != "embsim.calibrate" and
                   any(unit(t) == "embsim.calibrate" for t in graph.successors(n)))
    assert reach == ["embsim.commands.calibrate"]


def test_the_checker_sees_hidden_cycles(tmp_path):
    """A function-local import closing a cycle, and a cycle through `from . import x`."""
    pkg = tmp_path / "pkg"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("from . import low\n")
    (pkg / "a" / "low.py").write_text("def f():\n    from ..b.high import g\n")
    (pkg / "b" / "__init__.py").write_text("")
    (pkg / "b" / "high.py").write_text("from pkg.a import low\n")
    g = import_graph(pkg)
    assert cycles(internal(g, "pkg")) == [["pkg.a.low", "pkg.b.high"]]
    assert cycles(unit_graph(internal(g, "pkg"))) == [["pkg.a", "pkg.b"]]
