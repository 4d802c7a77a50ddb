"""The package's one-way rules: core <- engine <- present <- app, tools on core, engine and present (they start
the app in a process of its own, never by import); inside engine/ settings/limits/memory <- models <- caches <-
decoding <- serving; and no two modules import each other, directly or around a loop.

Read from the source (every `from ..x` and `specviz.x` import), so a new module that reaches the wrong way fails
here; each check is also run on a planted module that breaks it. Core's own imports are in tests/core/test_imports.py.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "specviz"
ALLOWED = {  # layer -> the layers it may import
    "core": {"core"},
    "engine": {"core", "engine"},
    "present": {"core", "engine", "present"},
    "app": {"core", "engine", "present", "app"},
    "tools": {"core", "engine", "present", "tools"},
}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path) for path in ROOT.rglob("*.py")}


def imported_modules(path: pathlib.Path, name: str | None = None) -> set[str]:
    """The specviz modules `path` imports, anywhere in it (a function's own imports too), by absolute name:
    relative imports resolved against the file's own package however deep it sits (the package of `name`,
    by default the file's place in the tree); `from X import name` counts X.name where that is a module, else X."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                module = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "specviz" or module.startswith("specviz."):
                found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("specviz.")}
    return found


def layer(module: str) -> str:
    return (module.split(".") + ["specviz"])[1]


# engine/'s parts, lowest first: "" is its root (settings, limits, memory), the services every loop uses
ENGINE_ORDER = ("", "models", "caches", "decoding", "serving")


def engine_rank(module: str) -> int:
    """Where an engine module sits in ENGINE_ORDER (its subpackage's place; 0 at engine/'s root)."""
    part = (module.split(".") + ["", ""])[2]
    return ENGINE_ORDER.index(part if part in ENGINE_ORDER else "")


def wrong_way(name: str, imported: set[str]) -> list[str]:
    """What module `name` imports against the one-way rules: another layer it may not use, or an engine part
    above its own."""
    wrong = sorted(m for m in imported if layer(m) not in ALLOWED[layer(name)])
    if layer(name) == "engine":
        wrong += sorted(m for m in imported if layer(m) == "engine" and engine_rank(m) > engine_rank(name))
    return wrong


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> b -> ... -> a) per strongly connected group of modules that import one another."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph.get(v, ()):
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for group in groups:  # the shortest way from the group's first module back to itself
        start = min(group)
        paths, seen = [[start]], set()
        while paths:
            path = paths.pop(0)
            nxt = sorted(w for w in graph.get(path[-1], ()) if w in group)
            if start in nxt:
                cycles.append(path + [start])
                break
            for w in nxt:
                if w not in seen:
                    seen.add(w)
                    paths.append(path + [w])
    return sorted(cycles)


def test_every_module_imports_only_the_layers_below_it():
    wrong = []
    for path in ROOT.rglob("*.py"):
        if len(path.relative_to(ROOT).parts) < 2:
            continue  # specviz/__init__.py, __main__.py
        name = module_name(path)
        wrong += [f"{name} imports {module}" for module in wrong_way(name, imported_modules(path))]
    assert not wrong, wrong


@pytest.mark.parametrize("name, source, wrong", [
    ("specviz.engine.caches.planted", "from ..serving import run\n", ["specviz.engine.serving.run"]),
    ("specviz.engine.models.planted", "def f():\n    from ..decoding.factory import make_decoder\n",
     ["specviz.engine.decoding.factory"]),
    ("specviz.engine.planted", "from .models import loading\n", ["specviz.engine.models.loading"]),
    ("specviz.engine.planted", "import specviz.engine.caches.cache\n", ["specviz.engine.caches.cache"]),
    ("specviz.core.planted", "from ..engine import settings\n", ["specviz.engine.settings"]),
    ("specviz.tools.distill.planted", "from ...app import wiring\n", ["specviz.app.wiring"]),
    ("specviz.tools.planted", "import specviz.app\n", ["specviz.app"]),
    ("specviz.engine.serving.planted", "from ..caches import cache\nfrom .. import limits, memory, settings\n", []),
    ("specviz.engine.models.planted", "from .. import memory\nfrom . import presets\n", []),
])
def test_a_planted_module_that_imports_the_wrong_way_is_named(tmp_path, name, source, wrong):
    """The checks above on a module written here: an import up engine/'s order or into a layer above is named
    (a tool reaching the app by any path too); imports down the order pass."""
    path = tmp_path / "planted.py"
    path.write_text(source)
    assert wrong_way(name, imported_modules(path, name)) == wrong


def test_every_specviz_import_names_a_module_that_exists():
    # imports inside functions run late (a CLI's last step, one test's body): a module moved without them
    # would fail only there, so every file's imports are resolved here, the tests' and app.py's too
    missing = []
    for path in [*ROOT.rglob("*.py"), *(ROOT.parent / "tests").rglob("*.py"), ROOT.parent / "app.py"]:
        for module in imported_modules(path) - MODULES - {"specviz.assets"}:
            missing.append(f"{path.relative_to(ROOT.parent)} imports {module}")
    assert not missing, missing


def test_no_modules_import_one_another_in_a_cycle():
    """Read from the source, every import counted (a function's own too): module a importing b while b
    imports a, directly or around a longer loop, fails here and names the loop."""
    graph = {module_name(path): imported_modules(path) & MODULES for path in ROOT.rglob("*.py")}
    cycles = [" -> ".join(cycle) for cycle in import_cycles(graph)]
    assert not cycles, cycles


def test_the_cycle_finder_names_a_loop_and_passes_a_tree():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set(), "e": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert import_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_relative_imports_resolve_from_a_nested_package(tmp_path):
    assert module_name(ROOT / "engine" / "__init__.py") == "specviz.engine"
    nested = [path for path in ROOT.rglob("*.py") if len(path.relative_to(ROOT).parts) > 2]
    for path in nested:  # a module two levels down reaches core with `from ...core`, never `from ..core`
        assert all(module in MODULES for module in imported_modules(path)), path


