"""A race as plain data: two lanes (target-only, speculative decoding), when each token was ready, and how the race
was run. What `engine.serving.race` returns, what the page draws, and what a trace file keeps (its header's
"race"), read back field by field: a recording's race is shown as it was timed, never re-run.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, fields

TARGET_ONLY, SPECULATIVE = "target_only", "speculative"
KINDS = ("target", "accepted", "resampled", "bonus")   # what a token was, as on the step card
MAX_LANE_TOKENS = 10_000     # a recorded lane longer than any race the page allows many times over is refused
MAX_TEXT_CHARS = 1_000       # one token's text


@dataclass(frozen=True)
class Lane:
    """One side of a race: its tokens, what each was (as on the step card) and when it arrived."""
    side: str                  # TARGET_ONLY | SPECULATIVE
    texts: tuple[str, ...]     # each generated token's text
    kinds: tuple[str, ...]     # "target" | "accepted" | "resampled" | "bonus"
    times_s: tuple[float, ...]  # seconds of this side's own work, from its first forward, when the token was ready
    target_passes: int
    draft_passes: int

    @property
    def total_s(self) -> float:
        return self.times_s[-1] if self.times_s else 0.0


@dataclass(frozen=True)
class Race:
    target_only: Lane
    speculative: Lane
    first: str                 # the side that ran first in the first slice
    device: str
    slice_speedups: tuple[float, ...] = ()  # each slice in which both sides worked: its target-only time per
    #                                        token over its speculative time per token
    others_busy_cores: float | None = None  # cores the other processes used meanwhile (None: cannot tell)
    capped_to: int = 0         # max_new_tokens the prediction cut the race to (0: not cut)
    predicted_s: float | None = None  # the uncut race's predicted seconds (None: no costs measured yet)
    stopped_s: float = 0.0     # > 0: the deadline of this many seconds stopped the race before both sides ended
    requested: int = 0         # max_new_tokens asked for
    limit_s: float = 0.0       # the event's time limit it was planned for (0: none)

    @property
    def speedup(self) -> float:
        """Wall time target-only over wall time speculative, per token (the lanes may end at other lengths)."""
        a, b = self.target_only, self.speculative
        if not (a.total_s and b.total_s and a.texts and b.texts):
            return 0.0
        return (len(b.texts) / b.total_s) / (len(a.texts) / a.total_s)

    @property
    def spread(self) -> tuple[float, float] | None:
        """The middle half of the slices' speed-ups (their lower and upper quartiles); None under 4 slices."""
        if len(self.slice_speedups) < 4:
            return None
        q = statistics.quantiles(self.slice_speedups, n=4)
        return q[0], q[2]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data) -> Race:
        """A race read back from a file: ValueError naming the field that is missing, unknown or of the wrong kind."""
        _keys(data, cls, "race")
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values["target_only"] = _lane(data.get("target_only"), TARGET_ONLY)
        values["speculative"] = _lane(data.get("speculative"), SPECULATIVE)
        if values.get("first") not in (TARGET_ONLY, SPECULATIVE):
            raise ValueError(f"race.first must be {TARGET_ONLY!r} or {SPECULATIVE!r}")
        if not isinstance(values.get("device"), str) or len(values["device"]) > 100:
            raise ValueError("race.device must be a short text")
        values["slice_speedups"] = _numbers(data.get("slice_speedups", []), "race.slice_speedups")
        for name in ("others_busy_cores", "predicted_s"):
            if values.get(name) is not None:
                values[name] = _number(values[name], f"race.{name}")
        for name in ("stopped_s", "limit_s"):
            values[name] = _number(values.get(name, 0.0), f"race.{name}")
        for name in ("capped_to", "requested"):
            values[name] = _count(values.get(name, 0), f"race.{name}")
        return cls(**values)


def _keys(data, cls, where: str) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object, not {type(data).__name__}")
    unknown = sorted(map(str, set(data) - {f.name for f in fields(cls)}))
    if unknown:
        raise ValueError(f"{where} has fields this version does not know: {', '.join(unknown)[:200]}")


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where} must be a number >= 0")
    return float(value)


def _count(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LANE_TOKENS:
        raise ValueError(f"{where} must be a whole number from 0 to {MAX_LANE_TOKENS:,}")
    return value


def _numbers(values, where: str) -> tuple[float, ...]:
    if not isinstance(values, list) or len(values) > MAX_LANE_TOKENS:
        raise ValueError(f"{where} must be a list of at most {MAX_LANE_TOKENS:,} numbers")
    return tuple(_number(v, f"{where}[{i}]") for i, v in enumerate(values))


def _lane(data, side: str) -> Lane:
    where = f"race.{side}"
    if data is None:
        raise ValueError(f"{where} is missing")
    _keys(data, Lane, where)
    if data.get("side") != side:
        raise ValueError(f"{where}.side must be {side!r}")
    texts, kinds = data.get("texts"), data.get("kinds")
    if not isinstance(texts, list) or len(texts) > MAX_LANE_TOKENS or not all(
            isinstance(t, str) and len(t) <= MAX_TEXT_CHARS for t in texts):
        raise ValueError(f"{where}.texts must be a list of at most {MAX_LANE_TOKENS:,} token texts")
    if not isinstance(kinds, list) or not all(isinstance(k, str) and k in KINDS for k in kinds):
        raise ValueError(f"{where}.kinds must be a list of {', '.join(KINDS)}")
    times = _numbers(data.get("times_s"), f"{where}.times_s")
    if not len(texts) == len(kinds) == len(times):
        raise ValueError(f"{where} must give as many kinds and times as texts")
    if any(b < a for a, b in zip(times, times[1:])):
        raise ValueError(f"{where}.times_s must never go back")
    return Lane(side, tuple(texts), tuple(kinds), times, _count(data.get("target_passes"), f"{where}.target_passes"),
                _count(data.get("draft_passes"), f"{where}.draft_passes"))
