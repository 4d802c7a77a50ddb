"""The package's one-way rule: core <- engine <- present <- app; tools use any layer but app's internals.

Read from the source (every `from ..x` and `specviz.x` import), so a new module that reaches the
wrong way fails here, and core is imported with transformers, gradio and plotly blocked.
"""
import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1] / "specviz"
ALLOWED = {  # layer -> the layers it may import
    "core": {"core"},
    "engine": {"core", "engine"},
    "present": {"core", "engine", "present"},
    "app": {"core", "engine", "present", "app"},
    "tools": {"core", "engine", "present", "tools"},
}


def imported_layers(path: pathlib.Path) -> set[str]:
    layer = path.relative_to(ROOT).parts[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:
                found.add(layer)
            elif node.level == 1:
                found.add(layer)
            elif node.level == 2:
                found.add((node.module or "").split(".")[0] or "specviz")
            elif node.level == 0 and (node.module or "").startswith("specviz."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("specviz.")}
    return found


def test_every_module_imports_only_the_layers_below_it():
    wrong = []
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if len(parts) < 2:
            continue  # specviz/__init__.py, __main__.py
        bad = imported_layers(path) - ALLOWED[parts[0]]
        if bad:
            wrong.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not wrong, wrong


def test_tools_reach_the_app_only_through_its_launch_function():
    for path in (ROOT / "tools").glob("*.py"):
        text = path.read_text()
        assert "from ..app" not in text and "specviz.app." not in text.replace("specviz.app.launch", ""), path.name


def test_core_needs_torch_alone():
    code = ("import sys\nfor name in ('transformers', 'gradio', 'plotly'): sys.modules[name] = None\n"
            "import specviz.core.sampling, specviz.core.warping, specviz.core.metrics, specviz.core.playground\n"
            "import specviz.core.config, specviz.core.trace, specviz.core.notation, specviz.core.theory\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-800:]
