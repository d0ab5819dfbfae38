"""No import circle in the package: read from the installed package's source with `ast`,
its modules' imports of one another form no cycle.

Every import counts, at a module's top, under ``TYPE_CHECKING`` or inside a function: an
import made only for the type checker still ties the two modules together. A module
named in an import is the one counted, not the packages above it: a submodule's import
runs its package's ``__init__`` first, which imports the submodules; that is Python's
order, not a circle of ours.
"""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Set

import harel_transport

Graph = Dict[str, Set[str]]


def modules(root: str, package: str) -> Dict[str, str]:
    """{dotted name: file} of every module of the package at `root`."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.isfile(os.path.join(folder, d, "__init__.py"))]
        for file in files:
            if file.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, file), root)[: -len(".py")].split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join([package, *parts])] = os.path.join(folder, file)
    return found


def imports_of(name: str, file: str, known: Set[str]) -> Set[str]:
    """The modules among `known` that module `name` (in `file`) imports."""
    with open(file, encoding="utf-8") as f:
        tree = ast.parse(f.read(), file)
    here = name.split(".") if file.endswith("__init__.py") else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
            # `from package import name` imports the submodule `name` when there is one.
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return found & known


def import_graph(root: str, package: str) -> Graph:
    files = modules(root, package)
    return {name: imports_of(name, file, set(files)) for name, file in files.items()}


def circles(graph: Graph) -> List[List[str]]:
    """The graph's cycles, as its strongly connected components (Tarjan) of more than one
    module, or of one that imports itself."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_circle():
    graph = import_graph(os.path.dirname(harel_transport.__file__), "harel_transport")
    # The graph was read (a reader that found no import would find no circle either).
    assert "harel_transport._transport" in graph["harel_transport._aio"]
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(
        "; ".join(f"{m} imports {', '.join(sorted(graph[m] & set(c)))}" for m in c) for c in found
    )


def test_a_circle_through_type_checking_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("from .sub import b\nA = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n"
    )
    (pkg / "c.py").write_text("def f():\n    import pkg.a\n")
    graph = import_graph(str(pkg), "pkg")
    assert graph == {
        "pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub": set(), "pkg.sub.b": {"pkg.c"}, "pkg.c": {"pkg.a"}
    }
    assert circles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
