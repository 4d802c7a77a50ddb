"""The round's host work: the time a speculative round spends outside its draft and target forwards.

A forward-cost model (Leviathan et al., "Fast Inference from Transformers via Speculative Decoding", Thm 3.8, and
`core.verify_cost`'s V(n)) prices a round as gamma draft forwards and one target pass. Between them the round
does work of its own: both distributions warped, the accept test, the residual, the trace the card shows. On
the offline pairs on a CPU that is 6-12% of a round (docs/benchmarks.md), so a prediction that leaves it out
runs high by about as much. Measured per round as step_s - draft_s - target_s (`core.trace.StepRecord`) and
fitted against gamma as a straight line: most of it is paid once a round, a little per drafted position.
The target-only step pays its own (warping, one draw): it is inside the step time the baseline measures, so
the prediction prices the round's target pass as the forward's share of that step (`forward_share`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .config import MAX_NEW_TOKENS


def round_line(gammas: Sequence[int], seconds: Sequence[float], rounds: Sequence[int], *,
               alone: str = "flat") -> tuple[float, float]:
    """(intercept, slope) of a round's seconds of one kind (its host work; its drafting, whose first forward also
    reads the tokens the last round kept) against gamma: least squares weighted by the rounds each gamma ran,
    never below 0 from gamma 0 on (an intercept fitted below 0: the line through the origin instead). With one
    gamma, or a fit that falls (noise: the work does not shrink with more drafts), the line is what `alone` says:
    "flat" at the weighted mean (host work, paid once a round) or "proportional", through the origin (drafting:
    one forward a drafted token)."""
    points = [(int(g), float(h), int(n)) for g, h, n in zip(gammas, seconds, rounds) if n > 0]
    if not points:
        raise ValueError("round_line needs at least one gamma with rounds")
    if alone not in ("flat", "proportional"):
        raise ValueError(f"alone is 'flat' or 'proportional', not {alone!r}")
    for g, h, _ in points:
        if not (math.isfinite(h) and h >= 0):
            raise ValueError(f"a round's time is seconds >= 0, not {h!r} (gamma {g})")
    total = sum(n for _, _, n in points)
    mean_g = sum(n * g for g, _, n in points) / total
    mean_h = sum(n * h for _, h, n in points) / total
    spread = sum(n * (g - mean_g) ** 2 for g, _, n in points)
    slope = sum(n * (g - mean_g) * (h - mean_h) for g, h, n in points) / spread if spread > 0 else -1.0
    through_origin = (sum(n * g * h for g, h, n in points) / sum(n * g * g for g, _, n in points)
                      if any(g for g, _, _ in points) else mean_h)
    if slope < 0:  # one gamma (no spread) or a falling fit
        return (mean_h, 0.0) if alone == "flat" else (0.0, through_origin)
    intercept = mean_h - slope * mean_g
    return (intercept, slope) if intercept >= 0 else (0.0, through_origin)


def line_without(gammas: Sequence[int], seconds: Sequence[float], rounds: Sequence[int], left_out: int, *,
                 alone: str = "flat") -> tuple[float, float]:
    """`round_line` through every gamma but `left_out` (all of them when it leaves fewer than two): what a gamma's
    own prediction uses, so that the time it is checked against is not an input to it."""
    kept = [(g, h, n) for g, h, n in zip(gammas, seconds, rounds) if g != left_out]
    if len({g for g, _, n in kept if n > 0}) < 2:
        kept = list(zip(gammas, seconds, rounds))
    return round_line(*zip(*kept), alone=alone)


def line_at(line: Sequence[float], gamma: int) -> float:
    """The line's value at gamma, never below 0 (an intercept fitted below 0 meets the axis there)."""
    intercept, slope = line
    return max(0.0, intercept + slope * gamma)


def as_whatif(round_cost: dict | None) -> dict:
    """`core.whatif.whatif_table`'s host_cost and drafting (the lines in target-only steps), forward_share and
    max_new_tokens from a report's "round_cost" (ms, as `tools.report.round_costs` writes it; a run's has no
    drafting line: its c stands); {} without one."""
    if not round_cost:
        return {}
    step = round_cost["target_only_step_ms"]
    out = {"host_cost": [x / step for x in round_cost["host_ms_line"]], "forward_share": round_cost["forward_share"],
           "max_new_tokens": round_cost["max_new_tokens"]}
    if round_cost.get("draft_ms_line"):
        out["drafting"] = [x / step for x in round_cost["draft_ms_line"]]
    return out


def _number(value, low: float, high: float, low_open: bool) -> bool:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return ok and (value > low if low_open else value >= low) and value <= high


def check_round_cost(round_cost) -> dict | None:
    """A report's "round_cost" as read from a file (None passes): every field `as_whatif` reads, in its range, or a
    ValueError naming the field (a summary.json is anyone's to edit)."""
    if round_cost is None:
        return None
    if not isinstance(round_cost, dict):
        raise ValueError(f"round_cost must be an object, not {type(round_cost).__name__}")
    for name in ("host_ms_line", "draft_ms_line"):
        line = round_cost.get(name)
        if name == "draft_ms_line" and line is None:
            continue
        if not (isinstance(line, list) and len(line) == 2 and all(_number(x, 0, 1e6, False) for x in line)):
            raise ValueError(f"round_cost.{name} must be two numbers in 0..1e6 (ms: h0, h1), not {line!r}"[:200])
    checks = (("target_only_step_ms", 0, 1e6, True, "a number of ms in (0, 1e6]"),
              ("forward_share", 0, 10, True, "a number in (0, 10]"),
              ("max_new_tokens", 1, MAX_NEW_TOKENS, False, f"a whole number in 1..{MAX_NEW_TOKENS}"))
    for name, low, high, low_open, says in checks:
        value = round_cost.get(name)
        if not _number(value, low, high, low_open) or (name == "max_new_tokens" and not isinstance(value, int)):
            raise ValueError(f"round_cost.{name} must be {says}, not {value!r}"[:200])
    return round_cost
