"""No function over 60 lines in the app and the tools: a longer one is split into named steps or groups."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "specviz"
CHECKED = ("app", "tools")
MAX_LINES = 60


def long_functions(folder: pathlib.Path, limit: int = MAX_LINES) -> list[str]:
    """`path:line name (n lines)` of every function or method in `folder` longer than `limit` lines."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    shown = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path
                    found.append(f"{shown}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_in_the_app_or_the_tools_is_over_60_lines():
    too_long = [f for layer in CHECKED for f in long_functions(ROOT / layer)]
    assert not too_long, "split these into named steps:\n" + "\n".join(too_long)


def test_the_check_counts_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    found = long_functions(tmp_path)
    assert len(found) == 1 and "long" in found[0] and f"({MAX_LINES + 1} lines)" in found[0]
