"""The command line's values: each parsed and checked, a refusal one line naming the flag and its range."""
from __future__ import annotations

import argparse

from ..core.config import GAMMA_AUTO, GAMMA_MAX, GAMMA_MIN
from ..engine.decoding.drafters import HybridDraft


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


def whole_number(flag: str, least: int, most: int):
    """An argparse type for `flag`: a whole number in least..most, anything else refused in one line naming both."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number in {least}..{most}, not {text!r}")
        return value
    return parse


gamma_max_value = whole_number("--gamma-max", GAMMA_MIN, GAMMA_MAX)  # the config names the same range


def settle_gamma_max(args, default: int) -> None:
    """--gamma-max caps gamma auto: given where no gamma auto runs (not among --gamma's values, and no bench
    --drafter auto, which runs it beside fixed gammas) it would do nothing, so it is refused; left out, the
    default. Commands without the flag are left alone."""
    if not hasattr(args, "gamma_max"):
        return
    gammas = args.gamma if isinstance(args.gamma, list) else [args.gamma]
    runs_auto = args.command == "bench" and args.drafter == HybridDraft.kind
    if args.gamma_max is not None and GAMMA_AUTO not in gammas and not runs_auto:
        raise ValueError(f"--gamma-max caps --gamma auto; with --gamma {','.join(map(str, gammas))} it does nothing: "
                         f"leave it out")
    if args.gamma_max is None:
        args.gamma_max = default


def whole_list(flag: str, text: str) -> list[int]:
    """A comma-separated list of whole numbers (each one's range is checked where it is used); at least one."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values:
        raise ValueError(f"{flag} must be a comma-separated list of whole numbers, not {text!r}")
    return values


thread_count = whole_number("--threads", 1, 1024)  # torch's intra-op threads for the whole command

BENCH_RUNS_MAX = 64  # bench --runs: runs per prompt of the auto bench (each a few seconds a contender on a CPU)
bench_runs = whole_number("--runs", 1, BENCH_RUNS_MAX)  # seeds --seed, --seed + 1, ...


def number_list(flag: str, text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{flag} must be a comma-separated list of numbers, not {text!r}") from None


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors: 'error: ...' and exit status 2, no usage block."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


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
