"""What core may import: the standard library, torch and numpy (torch's own array companion), nothing else:
no transformers, gradio, plotly or any other package, and no other layer of specviz.

Two views of the same claim, each shown to fail on a planted module: every import written in core's source
(a function's own too), and every module pkgutil finds in specviz.core imported in a fresh interpreter where
any other package is refused.
"""
from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import pytest

CORE = pathlib.Path(__file__).resolve().parents[2] / "specviz" / "core"
CORE_MAY_IMPORT = {"torch", "numpy"}   # beside the standard library and core's own modules


def foreign_imports(source: str) -> list[str]:
    """The top-level packages `source` imports that core may not: neither the standard library, nor
    CORE_MAY_IMPORT, nor core itself (relative imports that stay inside core, or `specviz.core`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x stays in core; from .. reaches the rest of specviz
                names = [] if node.level == 1 else [f"specviz.{node.module or ''}"]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            if name == "specviz.core" or name.startswith("specviz.core."):
                continue
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in CORE_MAY_IMPORT:
                found.append(name)
    return found


def test_cores_source_imports_only_the_standard_library_torch_and_numpy():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 10
    wrong = {path.name: foreign_imports(path.read_text(encoding="utf-8")) for path in files}
    assert not {k: v for k, v in wrong.items() if v}, wrong


@pytest.mark.parametrize("source", ["import scipy.stats\n", "def f():\n    from transformers import AutoModel\n",
                                    "from ..engine import settings\n", "import specviz.present.render\n"])
def test_the_source_check_names_a_planted_foreign_import(source):
    assert foreign_imports(source)


def test_the_source_check_passes_what_core_may_import():
    assert foreign_imports("import math, json\nimport torch\nimport numpy as np\nfrom . import sampling\n"
                           "from .trace import StepTrace\nfrom specviz.core import config\n") == []


# In a fresh interpreter: torch and numpy load first (with whatever they load), then any import of another
# top-level package is refused, and every module pkgutil finds under PACKAGE is imported; prints their names.
IMPORT_ALL = """
import importlib, importlib.abc, pkgutil, sys
import numpy, torch
allowed = set(sys.stdlib_module_names) | {"torch", "numpy", "specviz", PACKAGE.split(".")[0]}
loaded = {name.split(".")[0] for name in sys.modules}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top not in allowed and top not in loaded:
            raise ImportError(f"core may not import {name}")

sys.meta_path.insert(0, Refuse())
for blocked in ("transformers", "gradio", "plotly", "scipy", "pandas"):
    sys.modules[blocked] = None
package = importlib.import_module(PACKAGE)
names = sorted(m.name for m in pkgutil.walk_packages(package.__path__, PACKAGE + "."))
for name in names:
    importlib.import_module(name)
print("\\n".join(names))
"""


def import_every_module(package: str, path: str | None = None) -> subprocess.CompletedProcess:
    code = IMPORT_ALL.replace("PACKAGE", repr(package))
    extra = [path] if path else []
    env_path = ":".join(extra + [str(CORE.parents[1])])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": env_path})


def test_every_core_module_found_by_pkgutil_imports_with_every_other_package_refused():
    out = import_every_module("specviz.core")
    assert out.returncode == 0, out.stderr[-1500:]
    on_disk = sorted("specviz.core." + p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
    assert out.stdout.split() == on_disk   # pkgutil found every file, and each one imported


@pytest.mark.parametrize("refused", ["plotly.graph_objects", "httpx"])
def test_a_planted_module_importing_a_refused_package_fails_the_import_check(tmp_path, refused):
    package = tmp_path / "planted_core"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fine.py").write_text("import math\nimport torch\n")
    (package / "reaches.py").write_text(f"import {refused}\n")
    out = import_every_module("planted_core", str(tmp_path))
    assert out.returncode != 0 and refused.split(".")[0] in out.stderr, out.stderr[-500:]
