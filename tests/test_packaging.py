"""pyproject.toml ships every subpackage, the page's static files and the locale files."""
import pathlib

import tomllib
from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

from specviz.present.i18n import LANGUAGES

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
    assert project["project"]["scripts"]["specviz"] == "specviz.__main__:main"  # reads the deployment, then the CLI
    pins = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    names = {p.split("==")[0].lower() for p in pins if "==" in p}
    declared = {d.split(">")[0].split("<")[0].split("=")[0].lower() for d in project["project"]["dependencies"]}
    assert names == declared, names ^ declared


def shipped_data(build_lib: pathlib.Path) -> dict[str, set[str]]:
    """The data files setuptools would copy into the wheel, by package: build_py's own list, nothing built."""
    dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    dist.include_package_data = False   # the declared package-data alone, without a MANIFEST scan writing egg-info
    build_py = dist.get_command_obj("build_py")
    build_py.build_lib = str(build_lib)
    build_py.ensure_finalized()
    return {package: set(names) for package, _, _, names in build_py.data_files}


def test_the_wheel_carries_every_locale_file_and_the_page_files(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)   # package-dir paths are relative to the project root
    data = shipped_data(tmp_path)
    assert {f"locales/{code}.json" for code in LANGUAGES} <= data["specviz.present"], data["specviz.present"]
    assert {"page.js", "page.css"} <= data["specviz.app"]
