"""The package's import graph, read with ``ast`` from ``src/``: no cycle, the testing kit
imported by no product module but the doctor, and no part finding another by the name it
is registered under (the run's parts meet in ``config.stash``, see ``runstash.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "pytest_advreview"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
#: The doctor runs Codex against the testing kit's scripted server (README "Doctor").
TESTING_KIT_USERS = {f"{PACKAGE}.doctor"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``name`` imports, anywhere in the file (``TYPE_CHECKING``
    and function-level imports included: a cycle through them is a cycle all the same)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            # ``from . import x`` / ``from .runner import factory``: x may be a module.
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _is_kit(module: str) -> bool:
    return module == f"{PACKAGE}.testing" or module.startswith(f"{PACKAGE}.testing.")


def test_the_graph_reader_sees_the_package() -> None:
    graph = _graph()
    # The reader resolves relative imports: the plugin's own edges are there.
    assert f"{PACKAGE}.options" in graph[f"{PACKAGE}.plugin"]
    assert f"{PACKAGE}.runstash" in graph[f"{PACKAGE}.items"]
    assert f"{PACKAGE}.testing.server" in graph[f"{PACKAGE}.doctor"]


def test_no_import_cycle_between_the_package_modules() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_product_module_imports_the_testing_kit_but_the_doctor() -> None:
    users = {
        name
        for name, imported in _graph().items()
        if not _is_kit(name) and any(_is_kit(module) for module in imported)
    }
    assert users == TESTING_KIT_USERS


def _own_plugin_lookups(source: str) -> list[int]:
    """Lines that look one of the plugin's own parts up by name (``get_plugin("advreview-…")``;
    pytest's own plugins, e.g. ``terminalreporter``, are found that way by design)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get_plugin", "getplugin", "hasplugin")
        and any(
            isinstance(arg, ast.Constant) and str(arg.value).startswith("advreview")
            for arg in node.args
        )
    ]


def test_the_lookup_finder_finds_a_lookup() -> None:
    source = 'x = config.pluginmanager.get_plugin("advreview-session")\n'
    assert _own_plugin_lookups(source) == [1]


def test_no_part_looks_another_up_by_its_registered_plugin_name() -> None:
    lookups = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in _own_plugin_lookups(path.read_text(encoding="utf-8"))
    ]
    assert lookups == []
