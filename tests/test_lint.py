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
    for code in ("(F401)", "(F821)", "(I001)", "(B023)", "(B006)", "(UP007)", "(W291)", "(E711)", "(RUF100)"):
        assert code in enabled, code
    assert "(E501)" not in enabled and "(B905)" not in enabled


def test_a_noqa_for_a_rule_that_is_not_run_is_an_error(tmp_path):
    """RUF100 with the project's settings: a planted `noqa` for a rule outside the rule set (BLE001) and one that
    silences nothing are named; a `noqa` that silences a real finding passes."""
    planted = tmp_path / "planted.py"
    planted.write_text("import os  # noqa: F401\n\ntry:\n    pass\nexcept Exception:  # noqa: BLE001\n    pass\n"
                       "x = 1  # noqa: E402\n")
    done = subprocess.run([*ruff(), "check", "--no-cache", "--output-format", "concise", "--config",
                           str(ROOT / "pyproject.toml"), str(planted)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    found = [line for line in done.stdout.splitlines() if "RUF100" in line]
    assert len(found) == 2 and ":5:" in found[0] and ":7:" in found[1], done.stdout
