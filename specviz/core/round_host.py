"""The round's host work: the time a speculative round spends outside its draft and target forwards.

A forward-cost model (Leviathan et al., "Fast Inference from Transformers via Speculative Decoding", Thm 3.8, and
`core.verify_cost`'s V(n)) prices a round as gamma draft forwards and one target pass. Between them the round
does work of its own: both distributions warped, the accept test, the residual, the trace the card shows. On
the bundled pair on a CPU that is 9-12% of a round (docs/benchmarks.md), so a prediction that leaves it out
runs high by about as much. Measured per round as step_s - draft_s - target_s (`core.trace.StepRecord`) and
fitted against gamma as a straight line: most of it is paid once a round, a little per drafted position.
The target-only step pays its own (warping, one draw): it is inside the step time the baseline measures, so
the prediction prices the round's target pass as the forward's share of that step (`forward_share`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence


def round_line(gammas: Sequence[int], seconds: Sequence[float], rounds: Sequence[int]) -> tuple[float, float]:
    """(intercept, slope) of a round's seconds of one kind (its host work; its drafting, whose first forward also
    reads the tokens the last round kept) against gamma: least squares weighted by the rounds each gamma ran.
    One gamma, or a slope < 0 (noise: the work does not shrink with more drafts), gives the flat line at the
    weighted mean."""
    points = [(int(g), float(h), int(n)) for g, h, n in zip(gammas, seconds, rounds) if n > 0]
    if not points:
        raise ValueError("round_line needs at least one gamma with rounds")
    for g, h, _ in points:
        if not (math.isfinite(h) and h >= 0):
            raise ValueError(f"a round's time is seconds >= 0, not {h!r} (gamma {g})")
    total = sum(n for _, _, n in points)
    mean_g = sum(n * g for g, _, n in points) / total
    mean_h = sum(n * h for _, h, n in points) / total
    spread = sum(n * (g - mean_g) ** 2 for g, _, n in points)
    slope = sum(n * (g - mean_g) * (h - mean_h) for g, h, n in points) / spread if spread > 0 else 0.0
    if slope < 0:
        return mean_h, 0.0
    return mean_h - slope * mean_g, slope


def line_at(line: Sequence[float], gamma: int) -> float:
    """The line's value at gamma, never below 0 (an intercept fitted below 0 meets the axis there)."""
    intercept, slope = line
    return max(0.0, intercept + slope * gamma)


def as_whatif(round_cost: dict | None) -> dict:
    """`core.whatif.whatif_table`'s host_cost (the line in target-only steps), forward_share and max_new_tokens from
    a report's "round_cost" (ms, as `tools.report.round_costs` writes it); {} without one."""
    if not round_cost:
        return {}
    step = round_cost["target_only_step_ms"]
    return {"host_cost": [x / step for x in round_cost["host_ms_line"]], "forward_share": round_cost["forward_share"],
            "max_new_tokens": round_cost["max_new_tokens"]}
