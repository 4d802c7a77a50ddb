"""The documents as a specification: README.md is a short front page, docs/ holds the manual, and what they
name (links, commands, variables, element ids) exists in the code."""
import argparse
import ast
import importlib
import re
from pathlib import Path
from unittest import mock

import pytest
import yaml

from specviz.tools import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def split_code(page: str) -> tuple[str, list[str]]:
    """The page outside its code, and its code blocks (fenced with ``` or indented 4 spaces after a blank line)."""
    outside, blocks, lines, i = [], [], page.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            blocks.append("\n".join(lines[i + 1:j]))
            i = j + 1
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = next((j for j in range(i, len(lines)) if not lines[j].startswith("    ")), len(lines))
            blocks.append("\n".join(line[4:] for line in lines[i:j]))
            i = j
        else:
            outside.append(lines[i])
            i += 1
    return "\n".join(outside), blocks


def code_blocks(page: str) -> list[str]:
    return split_code(page)[1]


def prose(page: str) -> str:
    """The page without its code blocks and inline code spans."""
    return re.sub(r"`[^`\n]*`", "", split_code(page)[0])


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text, lower case, punctuation dropped, spaces to hyphens."""
    rendered = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    rendered = re.sub(r"[`*]", "", rendered).lower()
    return re.sub(r"[^\w\- ]", "", rendered).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen, found = {}, set()
    for line in split_code(text(path))[0].split("\n"):
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = slug(match.group(1))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def links(path: Path) -> list[str]:
    page = prose(text(path))
    return (re.findall(r"\]\(([^)\s]+)\)", page) + re.findall(r'<img [^>]*src="([^"]+)"', page))


def section(page: str, heading: str) -> str:
    start = page.index(heading)
    end = page.find("\n## ", start + len(heading))
    return page[start:] if end < 0 else page[start:end]


# README: a front page


def test_readme_is_a_front_page_of_at_most_250_lines():
    assert len(text(README).splitlines()) <= 250


def test_readme_starts_with_the_spaces_front_matter_of_a_gradio_app():
    page = text(README)
    assert page.startswith("---\n")
    front = yaml.safe_load(page.split("---\n")[1])
    assert front["sdk"] == "gradio" and front["app_file"] == "app.py"
    pinned = re.search(r"^gradio==(\S+)", text(ROOT / "requirements.txt"), re.MULTILINE).group(1)
    assert front["sdk_version"] == pinned, "the Space runs the gradio that requirements.txt pins"


def readme_commands() -> list[str]:
    return [block for block in code_blocks(text(README)) if "pip install" in block]


def test_readme_command_2_is_the_line_ci_runs():
    ci = [line for line in text(ROOT / ".ci" / "run").splitlines() if "python -m pytest" in line]
    assert len(ci) == 1
    assert readme_commands()[1] == ci[0].strip()


def test_readme_command_1_installs_the_requirements_and_runs_the_app():
    run = readme_commands()[0]
    assert "\n" not in run
    steps = [step.strip() for step in run.split("&&")]
    assert steps[0] == "pip install -r requirements.txt"
    assert steps[-1] == "python app.py"


# links


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_relative_link_and_image_points_to_a_file_that_exists(page):
    missing = []
    for link in links(page):
        if re.match(r"[a-z]+:", link):
            continue
        target = (page.parent / link.split("#")[0]).resolve() if not link.startswith("#") else page
        if not target.exists():
            missing.append(link)
    assert not missing


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_anchor_names_a_heading_of_the_page_it_points_to(page):
    broken = []
    for link in links(page):
        if re.match(r"[a-z]+:", link) or "#" not in link:
            continue
        path, anchor = link.split("#", 1)
        target = (page.parent / path).resolve() if path else page
        if anchor not in anchors(target):
            broken.append(link)
    assert not broken


def test_slugs_follow_githubs_rules():
    assert slug("Is it faster, and at which γ?") == "is-it-faster-and-at-which-γ"
    assert slug("`specviz.core.sampling`: pure functions") == "specvizcoresampling-pure-functions"
    assert slug("The web app's contract") == "the-web-apps-contract"


# commands


class _Built(Exception):
    def __init__(self, parser):
        self.parser = parser


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's real parser: cli's own, and those the tools of OWN_PARSERS build in their main()."""
    ap = cli.build_parser()
    found = dict(next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction)).choices)

    def capture(self, args=None, namespace=None):
        raise _Built(self)

    for name, module in cli.OWN_PARSERS.items():
        with mock.patch.object(argparse.ArgumentParser, "parse_args", capture), pytest.raises(_Built) as built:
            importlib.import_module(module).main([])
        found[name] = built.value.parser
    return found


def shown_commands() -> list[tuple[str, str, str]]:
    """(page, subcommand, the rest of its line) for each `python -m specviz SUB ...` in code."""
    shown = []
    for page in PAGES:
        page_text = text(page)
        spans = re.findall(r"`([^`\n]*python -m specviz[^`\n]*)`", split_code(page_text)[0])
        for block in code_blocks(page_text) + spans:
            joined = re.sub(r"\n\s+", " ", block)  # a usage line continued on the next, indented
            for line in joined.split("\n"):
                for command in line.split("python -m specviz ")[1:]:
                    sub, _, rest = command.partition(" ")
                    if re.fullmatch(r"[a-z][a-z0-9-]*", sub):
                        shown.append((rel(page), sub, rest))
    return shown


def test_the_documents_show_every_subcommand():
    assert set(parsers()) - {sub for _, sub, _ in shown_commands()} == set()


def test_every_command_shown_names_a_real_subcommand_and_its_real_flags():
    real = {name: {s for a in p._actions for s in a.option_strings} for name, p in parsers().items()}
    wrong = []
    for page, sub, rest in shown_commands():
        if sub not in real:
            wrong.append(f"{page}: {sub}")
            continue
        wrong += [f"{page}: {sub} {flag}" for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest)
                  if flag not in real[sub]]
    assert not wrong


# variables


def settings_variables() -> set[str]:
    """The SPECVIZ_* names specviz/engine/settings.py passes to a call (env.get, _flag, _count, _names)."""
    tree = ast.parse(text(ROOT / "specviz" / "engine" / "settings.py"))
    return {arg.value for node in ast.walk(tree) if isinstance(node, ast.Call) for arg in node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("SPECVIZ_")}


VARIABLE = r"SPECVIZ_[A-Z0-9][A-Z0-9_]*"


def test_every_specviz_variable_the_documents_name_is_read_by_settings_or_by_the_tests():
    named = {name for page in PAGES for name in re.findall(VARIABLE, text(page))}
    test_only = set(re.findall(VARIABLE, section(text(ROOT / "docs" / "contributing.md"), "## Test-only variables")))
    read_by_tests = {name for path in (ROOT / "tests").rglob("*.py") if path.name != "test_docs.py"
                     for name in re.findall(VARIABLE, text(path))}
    assert test_only <= read_by_tests
    assert named - settings_variables() <= test_only


def test_every_variable_settings_reads_is_in_the_deployment_table():
    table = section(text(ROOT / "docs" / "deployment-and-security.md"), "## Deployment variables")
    listed = set(re.findall(r"^\| `(" + VARIABLE + ")`", table, re.MULTILINE))
    assert settings_variables() == listed


# element ids


def test_every_elem_id_of_the_app_is_in_the_web_apps_contract():
    ids = {elem_id for path in (ROOT / "specviz" / "app").glob("*.py")
           for elem_id in re.findall(r'elem_id\s*=\s*"([^"]+)"', text(path))}
    contract = section(text(ROOT / "docs" / "architecture.md"), "## The web app's contract")
    named = set(re.findall(r"`#?([a-z][a-z0-9-]*)`", contract))
    assert ids and ids - named == set()
