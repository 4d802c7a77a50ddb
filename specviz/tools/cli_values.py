"""The command line's values: each parsed and checked, a refusal one line naming the flag and its range.

Parsing runs before torch, transformers, gradio or plotly load (a typo is refused at once), so this module
imports none of them, directly or through the engine's registries: it reads their names (`drafter_names`).
"""
from __future__ import annotations

import argparse
import re

from ..core.config import GAMMA_AUTO, GAMMA_MAX, GAMMA_MIN
from ..engine.decoding.drafter_names import HYBRID_DRAFTER


def parse_gammas(text: str | int | list) -> list[int | str]:
    """'1,2,4,auto' (or one value) -> [1, 2, 4, "auto"]: whole numbers in 1..GAMMA_MAX or auto, duplicates dropped."""
    items = text if isinstance(text, list) else [text] if isinstance(text, int) else str(text).split(",")
    out = []
    for item in items:
        try:
            value = GAMMA_AUTO if str(item).strip().lower() == GAMMA_AUTO else int(str(item).strip())
        except ValueError:
            value = None
        if value is None or (value != GAMMA_AUTO and not 1 <= value <= GAMMA_MAX):
            raise ValueError(f"--gamma takes whole numbers in 1..{GAMMA_MAX} or auto separated by commas (e.g. "
                             f"1,2,4,auto), not {text!r}")
        if value not in out:
            out.append(value)
    return out


def gamma_values(text: str) -> list[int]:
    try:
        return parse_gammas(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def gamma_value(text: str) -> int | str:
    """--gamma: a whole number in 1..GAMMA_MAX, or auto."""
    if text.strip().lower() == GAMMA_AUTO:
        return GAMMA_AUTO
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not GAMMA_MIN <= value <= GAMMA_MAX:
        raise argparse.ArgumentTypeError(f"--gamma takes a whole number in {GAMMA_MIN}..{GAMMA_MAX} or auto, "
                                         f"not {text!r}")
    return value


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
    runs_auto = args.command == "bench" and args.drafter == HYBRID_DRAFTER
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
        # argparse says "argument --gamma-max: " before a type's own message, which names its flag already
        flag = re.match(r"argument (\S+): (?=\1 )", message)
        self.exit(2, f"error: {message[flag.end():] if flag else message} (see {self.prog} --help)\n")


def refusal(err: ValueError | RuntimeError | OSError) -> str:
    """What follows `error: ` when a command raised `err`: a bad value's (or a pair's, `ModelLoadError`) own
    message; a decoder asked past its end; the models failing (e.g. out of memory mid-run); the disk failing (e.g.
    full while writing)."""
    if isinstance(err, ValueError):
        return str(err)
    if isinstance(err, RuntimeError):
        from ..engine.decoding.base import DecodingFinished  # a command ran its models: the engine is loaded already

        return str(err) if isinstance(err, DecodingFinished) else f"the models failed: {str(err).splitlines()[0]}"
    return f"{err.strerror or err}{f': {err.filename}' if err.filename else ''}"


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
