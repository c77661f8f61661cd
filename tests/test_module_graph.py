"""The package's import graph, read with ``ast`` from ``src/``: no cycle, the testing kit
imported by no product module but the doctor, neither the doctor nor the Action's steps
reachable from the plugin's entry point, no part finding another by the name it is
registered under (the run's parts meet in ``config.stash``, see ``runstash.py``) and no
product function that only tests call.  And the comments and docstrings of the sources
point only at documents a clone of the repository has."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import pytest

PACKAGE = "pytest_advreview"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
#: The doctor runs Codex against the testing kit's scripted server (docs/codex-compat.md).
TESTING_KIT_USERS = {f"{PACKAGE}.doctor"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: The bundled eval corpus: other projects' code, reviewed as data (no module of the product).
CORPUS = SRC / "eval" / "corpus"


def _product_files() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if CORPUS not in p.parents]


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in _product_files()}


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
    # A function-level import is an edge too (the doctor's plugin imports it when asked).
    assert f"{PACKAGE}.doctor" in graph[f"{PACKAGE}.doctorplugin"]


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


#: What ``plugin.py``, which every pytest start imports, must never reach, however
#: indirectly: the doctor has its own entry point (``doctorplugin.py``) and the Action's
#: steps run as ``python -m pytest_advreview.action``.
PLUGIN_NEVER = (f"{PACKAGE}.doctor", f"{PACKAGE}.action")


def _import_chains(
    graph: dict[str, set[str]], start: str, targets: Iterable[str]
) -> dict[str, list[str]]:
    """For each of ``targets`` that ``start`` imports, itself or through other modules, a
    shortest chain of imports from ``start`` to it."""
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(graph.get(node, ())):
            if succ not in parent:
                parent[succ] = node
                queue.append(succ)
    chains = {}
    for target in targets:
        if target in parent:
            chain = [target]
            while (up := parent[chain[-1]]) is not None:
                chain.append(up)
            chains[target] = chain[::-1]
    return chains


def test_the_chain_finder_finds_an_indirect_import() -> None:
    graph = {
        "plugin": {"options", "gate"},
        "options": set(),
        "gate": {"models"},
        "models": {"doctor"},
        "doctor": {"testing"},
        "doctorplugin": {"doctor"},
        "action": {"options"},
    }
    found = _import_chains(graph, "plugin", ("doctor", "action"))
    assert found == {"doctor": ["plugin", "gate", "models", "doctor"]}


def test_the_plugin_check_sees_a_lazy_import_in_a_module_the_plugin_loads(
    tmp_path: Path,
) -> None:
    # The package as it is, but options.py importing the doctor inside a function (as
    # plugin.py did before the doctor had its own entry point): the check fails.
    graph = _graph()
    assert f"{PACKAGE}.options" in graph[f"{PACKAGE}.plugin"]
    options = tmp_path / "options.py"
    options.write_text("def run(config):\n    from . import doctor\n    doctor.main(config)\n")
    graph[f"{PACKAGE}.options"] |= _imports(f"{PACKAGE}.options", options, set(graph))
    assert _import_chains(graph, f"{PACKAGE}.plugin", PLUGIN_NEVER) == {
        f"{PACKAGE}.doctor": [f"{PACKAGE}.plugin", f"{PACKAGE}.options", f"{PACKAGE}.doctor"]
    }


def test_the_plugin_reaches_neither_the_doctor_nor_the_action() -> None:
    """``plugin.py`` and every module it imports, at any depth (function-level and
    ``TYPE_CHECKING`` imports included), import neither ``doctor`` nor ``action``."""
    graph = _graph()
    assert _import_chains(graph, f"{PACKAGE}.plugin", PLUGIN_NEVER) == {}
    # The check covers a real graph: the plugin reaches most of the package.
    assert len(_import_chains(graph, f"{PACKAGE}.plugin", graph)) > len(graph) // 2


#: What the review engine must never reach for: its callers hand it plain inputs.
_ENGINE_NEVER = ("stash", "pluginmanager", "hook")


def _pytest_machinery(source: str) -> list[str]:
    """Attribute uses of pytest's run machinery (``config.stash``, ``pluginmanager``,
    ``config.hook``) in ``source``, as ``line:name``."""
    return [
        f"{node.lineno}:{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in _ENGINE_NEVER
    ]


def test_the_machinery_finder_finds_a_stash_and_a_hook() -> None:
    source = "x = config.stash[KEY]\ny = config.hook.pytest_advreview_fix\n"
    assert _pytest_machinery(source) == ["1:stash", "2:hook"]


def test_the_review_engine_touches_no_run_stash_and_no_pytest_hook() -> None:
    """One review's path takes plain inputs: no run stash, no plugin manager, no hook
    call, and none of its callers' modules (items, session, fixture, jobs pool)."""
    engine = f"{PACKAGE}.engine"
    callers = {"runstash", "session", "items", "ondemand", "fixtures", "parallel", "plugin"}
    assert _graph()[engine] & {f"{PACKAGE}.{name}" for name in callers} == set()
    assert _pytest_machinery((SRC / "engine.py").read_text(encoding="utf-8")) == []


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
        for path in _product_files()
        for line in _own_plugin_lookups(path.read_text(encoding="utf-8"))
    ]
    assert lookups == []


# -- no function that only tests call ----------------------------------------------------

#: Decorators under which something other than the package's own code calls a function:
#: pytest and pluggy (hooks, fixtures) and pydantic (validators, serializers).
CALLED_BY_FRAMEWORK = {
    "hookimpl",
    "hookspec",
    "fixture",
    "field_validator",
    "model_validator",
    "field_serializer",
    "model_serializer",
}
#: Methods called by name on a subclass: pytest's ``Item``/``Collector`` and
#: ``TerminalRepr`` protocol, and the standard library's (``http.server`` handlers,
#: ``json.JSONEncoder``, ``logging.Handler``).
CALLED_BY_PROTOCOL = {
    "runtest",
    "setup",
    "teardown",
    "repr_failure",
    "reportinfo",
    "collect",
    "toterminal",
    "do_GET",
    "do_POST",
    "log_message",
    "handle_error",
    "default",
    "emit",
    # pytest-retry and pytest-flakefinder call pytest's private Function._initrequest on
    # every item they run again (items.ReviewItem).
    "_initrequest",
}
#: The users' API: what a project's own tests call on the ``adversarial_review`` fixture's
#: outcome (docs/fixture-and-hooks.md).
CALLED_BY_USERS = {"assert_approved"}


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _referenced(node: ast.AST) -> list[str]:
    """Every name ``node`` uses: variables, attributes, imported names, and strings that
    are identifiers (``getattr(entry, kind)`` over a table of names), but not the names a
    module lists in ``__all__``: exporting a function is no use of it."""
    exported = {
        id(const)
        for sub in ast.walk(node)
        if isinstance(sub, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in sub.targets)
        for const in ast.walk(sub.value)
    }
    found: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.append(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.append(sub.attr)
        elif isinstance(sub, ast.ImportFrom):
            found.extend(alias.name for alias in sub.names)
        elif (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and sub.value.isidentifier()
            and id(sub) not in exported
        ):
            found.append(sub.value)
    return found


def _definitions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module's top-level functions and the methods of its top-level classes."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = [node for node in tree.body if isinstance(node, functions)]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        found += [node for node in cls.body if isinstance(node, functions)]
    return found


def _test_only_functions(sources: dict[str, str]) -> list[str]:
    """``module:function`` of each function of the product (``sources``: module name to
    text, the testing kit left out) that nothing in ``sources`` but its own body uses."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    uses: dict[str, int] = {}
    for tree in trees.values():
        for name in _referenced(tree):
            uses[name] = uses.get(name, 0) + 1
    unused = []
    for module, tree in trees.items():
        for node in _definitions(tree):
            name = node.name
            if (
                (name.startswith("__") and name.endswith("__"))
                or name.startswith("pytest_")
                or name in CALLED_BY_PROTOCOL | CALLED_BY_USERS
                or _decorator_names(node) & CALLED_BY_FRAMEWORK
            ):
                continue
            if uses.get(name, 0) - _referenced(node).count(name) <= 0:
                unused.append(f"{module}:{name}")
    return sorted(unused)


def test_the_test_only_finder_finds_an_unused_function() -> None:
    sources = {
        "a": "def used():\n    return helper()\n\ndef helper():\n    return helper()\n",
        "b": "from a import used\n\ndef pytest_configure(config):\n    used()\n",
        "c": "class C:\n    def __repr__(self):\n        return ''\n\n    def orphan(self):\n"
        "        return self.orphan()\n\n    def by_name(self):\n        return 1\n",
        "d": "def pytest_unconfigure(c):\n    return getattr(c, 'by_name')()\n",
    }
    assert _test_only_functions(sources) == ["c:orphan"]


def test_no_function_of_the_product_is_only_called_by_tests() -> None:
    sources = {
        name: path.read_text(encoding="utf-8")
        for name, path in _modules().items()
        if not _is_kit(name)
    }
    found = {entry.split(":")[1] for entry in _test_only_functions(sources)}
    assert found == set(), sorted(_test_only_functions(sources))


def test_the_module_map_names_every_module_and_package() -> None:
    # "Where things are" (docs/development.md) is the map the next engineer reads first:
    # a module added, renamed or deleted without its row makes the map untrue.
    page = (SRC.parents[1] / "docs" / "development.md").read_text(encoding="utf-8")
    table = page.split("\n## Where things are\n", 1)[1].split("\n## ", 1)[0]
    named = {
        token
        for line in table.splitlines()
        if line.startswith("| `")
        for token in re.findall(r"`(\w+(?:\.py|/))`", line.split("|")[1])
    }
    expected = {
        f"{path.name}/" if path.is_dir() else path.name
        for path in SRC.glob("*")
        if path.suffix == ".py" or (path / "__init__.py").is_file()
    }
    expected.discard("__init__.py")
    assert sorted(expected - named) == []
    assert sorted(named - expected) == []


# -- comments point only at documents in the repository ---------------------------------

ROOT = SRC.parents[1]
#: Names of documents that never were in the repository (design notes, measurement
#: notes, a style guide, an issue tracker): a reader of a clone cannot follow them.
PRIVATE_REFERENCE = re.compile(
    r"design\.md|\bseeds?/|\bthe seeds?\b|\bseed \d|codex-facts|style\.md|§"
    r"|refresh design|\bissue \d",
    re.IGNORECASE,
)
#: ``docs/outcomes.md "Outcomes"``, ``docs/ci.md, "The state key"``: a named section of a document.
SECTION_REFERENCE = re.compile(r"(README(?:\.md)?|docs/[\w-]+\.md)`*,?\s+[\"']([^\"']+)[\"']")


def _prose(text: str, *, python: bool = True) -> str:
    """The comments and docstrings of a source file, whitespace collapsed, nothing else.

    Comments come from :mod:`tokenize`, docstrings (a string that is a whole statement:
    module, class, function and attribute docstrings) from :mod:`ast`, so a string
    literal the code uses (a regular expression, a message) is never read as prose.
    """
    if python:
        comments = [
            tok.string.lstrip("#:")
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
        docstrings = [
            node.value.value
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ]
        parts = comments + docstrings
    else:  # a shell script: its comment lines
        lines = [line.strip() for line in text.splitlines()]
        parts = [line.lstrip("#") for line in lines if line.startswith("#")]
    return " ".join(" ".join(parts).split())


def _sources() -> list[tuple[Path, bool]]:
    python = [
        *_product_files(),
        *sorted((ROOT / "tests").rglob("*.py")),
        *sorted((ROOT / "benchmarks").rglob("*.py")),
        ROOT / "noxfile.py",
    ]
    scripts = [path for path in sorted((ROOT / "scripts").iterdir()) if path.is_file()]
    return [(path, True) for path in python] + [(path, False) for path in scripts]


def _headings(document: str) -> list[str]:
    text = (ROOT / ("README.md" if document.startswith("README") else document)).read_text(
        encoding="utf-8"
    )
    return [line.lstrip("#").strip().lower() for line in text.splitlines() if line.startswith("#")]


def _problems(prose: str) -> list[str]:
    found = [f"names {m.group(0)!r}" for m in PRIVATE_REFERENCE.finditer(prose)]
    for match in SECTION_REFERENCE.finditer(prose):
        document, section = match.groups()
        if not any(h.startswith(section.lower()) for h in _headings(document)):
            found.append(f"points at {document} {section!r}, which has no such heading")
    return found


def test_the_prose_reader_reads_comments_and_docstrings_not_code() -> None:
    source = (
        '"""Module docstring (see design.md)."""\n'
        "import re\n"
        "# the seed says so\n"
        "NUMBER = re.compile(r'^§ ?\\d')  # a regex, not a reference\n"
        "class A:\n"
        '    """Class, per codex-facts."""\n'
        "    x = 1\n"
        '    """See README "No such section"."""\n'
        "MESSAGE = 'see style.md'\n"
    )
    prose = _prose(source)
    assert "§" not in prose and "style.md" not in prose
    assert _problems(prose) == [  # comments first, then docstrings
        "names 'the seed'",
        "names 'design.md'",
        "names 'codex-facts'",
        "points at README 'No such section', which has no such heading",
    ]
    assert _problems(_prose("# see README 'Safety considerations'\n")) == []
    assert _problems(_prose("echo seed # not a comment line\n# the seeds\n", python=False)) == [
        "names 'the seeds'"
    ]


@pytest.mark.parametrize("path", [p for p, _ in _sources()], ids=lambda p: str(p.relative_to(ROOT)))
def test_comments_point_only_at_documents_in_the_repository(path: Path) -> None:
    # A user clones the repository alone: a comment that sends them to a design note, a
    # measurement log or an issue they do not have explains nothing.  Say the reason in
    # the comment, or name a section of README.md or docs/ that exists.
    python = path.suffix == ".py"
    problems = _problems(_prose(path.read_text(encoding="utf-8"), python=python))
    assert problems == [], f"{path.relative_to(ROOT)}: {problems}"
