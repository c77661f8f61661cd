"""The package's import graph, measured the same way at any commit.

    python scripts/module_graph.py [REV]   # REV: a commit (default: the work tree)

Prints: modules (top level / in folders), import edges, import cycles (strongly connected
components of more than one module, imports inside functions included), the modules one
review reaches from ``engine.py``, and how often that reach goes back up a folder (an
import from a module in a folder to one of the package's top level) or back into a
module that imports the importer (an edge inside a cycle).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

PKG = "pytest_advreview"


def _tree(rev: str | None) -> Path:
    if rev is None:
        return Path(__file__).resolve().parent.parent / "src"
    out = Path(tempfile.mkdtemp(prefix="modgraph-"))
    archive = subprocess.run(["git", "archive", rev, "src"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "src"


def _modules(src: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((src / PKG).rglob("*.py")):
        rel = path.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if ".testing" in name or name.endswith(("doctor", "doctorplugin", "__main__")):
            continue
        found[name] = path
    return found


def _edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" for a in node.names] + [mod]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
                    break
    return graph


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def main() -> None:
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    src = _tree(rev)
    modules = _modules(src)
    graph = _edges(modules)
    top = [m for m in modules if m.count(".") == 1]
    cycles = _sccs(graph)
    in_cycle = {m: i for i, c in enumerate(cycles) for m in c}
    start = f"{PKG}.engine"
    seen, todo = {start}, [start]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    reach = [(v, w) for v in seen for w in graph[v]]
    up = sum(1 for v, w in reach if v.count(".") > 1 and w.count(".") == 1)
    back = sum(1 for v, w in reach if v in in_cycle and in_cycle.get(w) == in_cycle[v])

    # Folders as units: an import cycle between a folder and the top level is a climb
    # back up (a folder that needs a module which needs the folder).
    def unit(m: str) -> str:
        return ".".join(m.split(".")[:2])

    units: dict[str, set[str]] = {unit(m): set() for m in modules}
    for v, ws in graph.items():
        units[unit(v)].update(unit(w) for w in ws if unit(w) != unit(v))
    unit_cycles = _sccs(units)
    lines = sum(len(p.read_text().splitlines()) for p in modules.values())
    print(f"modules: {len(modules)} ({len(top)} at the top level), lines: {lines}")
    print(f"import edges: {sum(len(v) for v in graph.values())}")
    print(f"import cycles: {len(cycles)} {[len(c) for c in cycles]}")
    print(
        f"one review (from engine.py): {len(seen)} modules, {len(reach)} edges, "
        f"{up} back up a folder, {back} back into a cycle"
    )
    names = [sorted(u.split(".")[-1] for u in c) for c in unit_cycles]
    print(f"folder-level cycles (a folder and the modules it climbs back to): {names}")


if __name__ == "__main__":
    main()
