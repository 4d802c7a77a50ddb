"""The code passes `ruff check` with the rule set pyproject.toml chooses and justifies ([tool.ruff.lint]).

Run here so the README's test command, and so CI, lints every change; ruff is pinned in requirements-dev.txt."""
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def ruff() -> list[str]:
    found = shutil.which("ruff")
    return [found] if found else [sys.executable, "-m", "ruff"]


def test_ruff_finds_nothing():
    done = subprocess.run([*ruff(), "check", "--no-cache", "--output-format", "concise", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_checks_the_rules_the_project_chose():
    done = subprocess.run([*ruff(), "check", "--show-settings", str(ROOT / "specviz" / "__init__.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    # the rules ruff really applies (its settings' enabled list): the chosen families are on, and line length
    # (E501) stays a guide for editors, not a rule
    enabled = done.stdout.split("linter.rules.enabled = [", 1)[1].split("]", 1)[0]
    for code in ("(F401)", "(F821)", "(I001)", "(B023)", "(B006)", "(UP007)", "(W291)", "(E711)"):
        assert code in enabled, code
    assert "(E501)" not in enabled and "(B905)" not in enabled
