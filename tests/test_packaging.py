"""pyproject.toml ships every subpackage and the page's static files."""
import pathlib

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "specviz").rglob("__init__.py")}
    assert set(config["packages"]) - {"specviz.assets"} == on_disk
    assert config["package-dir"]["specviz.assets"] == "assets"


def test_static_files_and_the_command_are_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = project["tool"]["setuptools"]["package-data"]
    assert {p.suffix for p in (ROOT / "specviz" / "app").iterdir() if p.suffix in (".js", ".css")} == {".js", ".css"}
    assert "*.js" in data["specviz.app"] and "*.css" in data["specviz.app"]
    assert project["project"]["scripts"]["specviz"] == "specviz.tools.cli:main"
    pins = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    names = {p.split("==")[0].lower() for p in pins if "==" in p}
    declared = {d.split(">")[0].split("<")[0].split("=")[0].lower() for d in project["project"]["dependencies"]}
    assert names == declared, names ^ declared
