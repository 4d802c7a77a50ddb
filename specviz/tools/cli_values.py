"""The command line's values: each parsed and checked, a refusal one line naming the flag and its range."""
from __future__ import annotations

import argparse


def gamma_values(text: str) -> list[int]:
    from .report import parse_gammas

    try:
        return parse_gammas(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def gamma_value(text: str) -> int | str:
    """--gamma: a whole number in 1..16 (checked with the other settings), or auto."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gamma takes a whole number in 1..16 or auto, not {text!r}") from None


def whole_list(flag: str, text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()] or [1]
    except ValueError:
        raise ValueError(f"{flag} must be a comma-separated list of whole numbers, not {text!r}") from None


def thread_count(text: str) -> int:
    """--threads: torch's intra-op threads for the whole command."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"--threads must be a whole number in 1..1024, not {text!r}")
    return value


def number_list(flag: str, text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{flag} must be a comma-separated list of numbers, not {text!r}") from None


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors: 'error: ...' and exit status 2, no usage block."""

    def error(self, message):
        self.exit(2, f"error: {message} (see python -m specviz --help)\n")


def writable_folder(flag: str, path: str) -> None:
    """ValueError naming `flag` unless `path` is (or can be made) a folder this process can write into."""
    import tempfile
    from pathlib import Path

    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {path!r} is a file; give a folder to write into")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()
    except OSError as err:
        raise ValueError(f"{flag} {path!r} cannot be written: {err.strerror or err}") from None


def check_race_seconds(seconds: float) -> None:
    if not 1 <= seconds <= 3600:
        raise ValueError(f"--race-seconds must be a number in [1, 3600], not {seconds!r}")
