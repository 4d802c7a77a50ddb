"""A verify's measured cost: the curve V(n) = one target pass over n new positions / one pass over one.

Leviathan et al.'s Thm 3.8 prices a round's target pass over gamma + 1 positions as one forward. That holds
where a forward is bound by reading the weights with rows to spare (a large GPU); on a CPU the extra rows cost
arithmetic, and the bundled pair's target measured V(5) ≈ 1.5 (docs/benchmarks.md). The curve is measured for a
pair on its device by `engine.serving.costs.measure_verify_costs` and handed around as a list
[V(1) = 1, V(2), ..., V(n_max)]: element n - 1 is V(n).

Beyond the measured n the curve goes on as a straight line with the slope of its upper half (a pass over many
positions is compute-bound, so its cost grows about linearly with n): `verify_cost_at` says which values were
measured and which extrapolated.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

VERIFY_COST_MAX = 100.0  # a pass over 17 positions (gamma 16) a hundred times one over one is a timing gone wrong


def check_verify_costs(values: Sequence[float], name: str = "verify_costs") -> list[float]:
    """[V(1), V(2), ...]: at least two numbers, all finite and > 0, the first exactly 1 (each is relative to it)."""
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{name} takes numbers V(1) = 1, V(2), V(3), ... (a target pass over n positions relative "
                         f"to one over one), not {values!r}") from None
    if len(out) < 2:
        raise ValueError(f"{name} needs V(1) = 1 and at least V(2), e.g. 1,1.1,1.2; got {len(out)} value(s)")
    for n, v in enumerate(out, 1):
        if not (math.isfinite(v) and 0 < v <= VERIFY_COST_MAX):
            raise ValueError(f"{name}: V({n}) must be a number in (0, {VERIFY_COST_MAX:g}], not {v!r}")
    if out[0] != 1.0:
        raise ValueError(f"{name} starts at V(1) = 1 (each value is a pass over n positions relative to a pass "
                         f"over one), not {out[0]:g}")
    return out


def verify_cost_at(curve: Sequence[float], n: int) -> float:
    """V(n): the curve's own value where it was measured, else the straight line through its upper half's ends."""
    if int(n) != n or n < 1:
        raise ValueError(f"a target pass covers a whole number of positions >= 1, not {n!r}")
    n = int(n)
    if n <= len(curve):
        return float(curve[n - 1])
    last = len(curve)
    start = max(1, last // 2)  # the upper half: compute-bound passes, where the cost grows linearly
    slope = max(0.0, (curve[last - 1] - curve[start - 1]) / (last - start)) if last > start else 0.0
    return float(curve[last - 1] + slope * (n - last))


LINE_FIT_TOLERANCE = 0.15  # of a one-position pass: the noise a line absorbs (CPU curves lay within 0.09 of theirs)


def straightened(curve: Sequence[float]) -> list[float]:
    """[V(1) = 1, V(2), ...] as a stopping rule should read it. Such a rule prices one more position at V(n + 1) -
    V(n): the difference of two timings, whose noise on a busy CPU (a one-position pass moves 46-78 ms from step to
    step, docs/benchmarks.md) is as large as the step itself, so a raw curve prices some steps at 0 and others at
    double. Where every point lies within LINE_FIT_TOLERANCE of the least-squares line through V(2) .. V(n_max) (its
    slope >= 0), the curve is that line: every step priced at the slope all the points give. The line has its own
    intercept, so the first extra position may still cost a jump (a matrix-vector kernel giving way to a matrix one),
    and one that starts below 1 is raised to V(2) = 1, not cut there (cutting would price the first steps below the
    slope). A curve a line does not fit (a jump past V(2), or a GPU's flat stretch up to a knee) keeps its shape:
    its closest non-decreasing curve (`non_decreasing`, as the keep tables are fitted), at least 1."""
    values = check_verify_costs(curve)
    line = straight_line(values)
    if all(abs(v - fitted) <= LINE_FIT_TOLERANCE for v, fitted in zip(values, line)):
        return line
    return [1.0] + [max(1.0, v) for v in non_decreasing(values[1:])]


def straight_line(values: Sequence[float]) -> list[float]:
    """V(1) = 1 and the least-squares line through V(2) .. V(n_max), its slope >= 0, raised to start at 1 at least."""
    ns, ys = range(2, len(values) + 1), values[1:]
    mean_n, mean_y = sum(ns) / len(ns), sum(ys) / len(ys)
    spread = sum((n - mean_n) ** 2 for n in ns)
    slope = max(0.0, sum((n - mean_n) * (y - mean_y) for n, y in zip(ns, ys)) / spread) if spread else 0.0
    start = max(1.0, mean_y + slope * (2 - mean_n))  # V(2)
    return [1.0] + [start + slope * (n - 2) for n in ns]


def non_decreasing(values: Sequence[float], weights: Sequence[float] | None = None) -> list[float]:
    """The least-squares non-decreasing fit of `values` (pool-adjacent-violators: a run that falls is replaced by
    its weighted mean); a weight of 0 takes its neighbours' value."""
    weights = [1.0] * len(values) if weights is None else list(weights)
    blocks: list[list[float]] = []  # [weighted sum, weight, values covered]
    for v, w in zip(values, weights):
        blocks.append([float(v) * w, float(w), 1])
        while len(blocks) > 1 and (blocks[-1][1] == 0 or blocks[-2][1] == 0 or
                                   blocks[-1][0] / blocks[-1][1] < blocks[-2][0] / blocks[-2][1]):
            total, weight, width = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += weight
            blocks[-1][2] += width
    out: list[float] = []
    for total, weight, width in blocks:
        out += [total / weight if weight else math.nan] * width
    return out


def round_cost(gamma: int, c: float, curve: Sequence[float], drafts: int = 1) -> float:
    """What a round costs in one-token target passes: gamma draft forwards of c and one target pass over the
    round's positions (gamma + 1 with one draft; k chains verified as k rows of gamma + 1: about k (gamma + 1)
    positions' work, as `decoding.tree_decoder` runs them)."""
    return gamma * c + verify_cost_at(curve, drafts * (gamma + 1))
