"""What speculative decoding should gain, from the acceptance rate alone (Leviathan et al., Sec. 3).

alpha: expected acceptance rate E[sum_x min(p, q)]; gamma: drafted tokens per round;
c: cost of one draft forward relative to one target forward;
verify_cost: V(gamma + 1), the cost of one target pass over the gamma + 1 positions of a round relative to a
one-token pass. Thm 3.8 takes V = 1 (a verify costs one forward: true where the target is memory-bound with rows
to spare); on a CPU a pass over 5 positions costs about 1.5 of one, so `speedup_with_verify_cost` is the figure
to trust there and Thm 3.8's the limit it tends to as V(n) flattens.
"""
from __future__ import annotations

import math
from collections.abc import Sequence


def _check(alpha: float, gamma: int, c: float | None = None) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if int(gamma) != gamma or gamma < 0:
        raise ValueError(f"gamma must be a whole number >= 0, got {gamma}")
    if c is not None and not c >= 0:
        raise ValueError(f"c must be >= 0, got {c}")


def expected_tokens_per_target_call(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha) (Leviathan Eq. 1), summed as 1 + alpha + ... + alpha^gamma
    so that alpha = 1 gives gamma + 1 and alpha = 0 gives 1 without dividing by zero."""
    _check(alpha, gamma)
    return float(sum(alpha ** k for k in range(int(gamma) + 1)))


def expected_speedup(alpha: float, gamma: int, c: float) -> float:
    """Expected wall-time improvement (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1)) (Thm 3.8)."""
    _check(alpha, gamma, c)
    return expected_tokens_per_target_call(alpha, gamma) / (gamma * c + 1)


def optimal_gamma(alpha: float, c: float, max_gamma: int = 16) -> int:
    """The gamma in 1..max_gamma that maximises expected_speedup (ties go to the smaller gamma)."""
    _check(alpha, 1, c)
    return max(range(1, max_gamma + 1), key=lambda g: (expected_speedup(alpha, g, c), -g))


def _check_verify_cost(verify_cost: float) -> None:
    if not (isinstance(verify_cost, (int, float)) and math.isfinite(verify_cost) and verify_cost > 0):
        raise ValueError(f"verify_cost must be a number > 0 (a target pass over gamma + 1 positions relative to one "
                         f"over one), got {verify_cost!r}")


def mixed_speedup(alpha: float, lengths: Sequence[int], c: float, verify_cost: float = 1.0) -> float:
    """Rounds of several lengths (gamma auto's): Eq. 1 at each round's own length, averaged, over the mean
    drafting and the verify's mean cost `verify_cost` (one length gives `speedup_with_verify_cost`)."""
    if not lengths:
        raise ValueError("mixed_speedup needs at least one round")
    for g in lengths:
        _check(alpha, g, c)
    _check_verify_cost(verify_cost)
    tokens = sum(expected_tokens_per_target_call(alpha, g) for g in lengths) / len(lengths)
    return tokens / (c * sum(lengths) / len(lengths) + verify_cost)


def speedup_with_verify_cost(alpha: float, gamma: int, c: float, verify_cost: float) -> float:
    """Expected wall-time improvement when the round's target pass costs `verify_cost` = V(gamma + 1) one-token
    passes: E[tokens per round] / (gamma c + V(gamma + 1)), Thm 3.8's cost model with its one verify forward
    replaced by what a pass over gamma + 1 positions measures (V = 1 gives `expected_speedup`)."""
    _check(alpha, gamma, c)
    _check_verify_cost(verify_cost)
    return expected_tokens_per_target_call(alpha, gamma) / (gamma * c + verify_cost)


def optimal_gamma_with_verify_costs(alpha: float, c: float, verify_costs: Sequence[float]) -> int:
    """The gamma in 1..len(verify_costs) - 1 that maximises `speedup_with_verify_cost`, where verify_costs is
    [V(1) = 1, V(2), ..., V(n)] (ties go to the smaller gamma)."""
    _check(alpha, 1, c)
    if len(verify_costs) < 2:
        raise ValueError(f"verify_costs needs V(1) and V(2) at least, got {list(verify_costs)!r}")
    return max(range(1, len(verify_costs)),
               key=lambda g: (speedup_with_verify_cost(alpha, g, c, verify_costs[g]), -g))


def breakeven_alpha(gamma: int, c: float, verify_cost: float) -> float | None:
    """The acceptance rate above which a round of `gamma` drafts beats the target alone at these costs: the alpha
    where 1 + alpha + ... + alpha^gamma = gamma c + V(gamma + 1) (0 when even alpha = 0 pays, None when not even
    alpha = 1 does)."""
    _check(0.0, gamma, c)
    _check_verify_cost(verify_cost)
    cost = gamma * c + verify_cost
    if cost <= 1.0:
        return 0.0
    if expected_tokens_per_target_call(1.0, gamma) < cost:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):  # the tokens per round rise with alpha: bisection to well below any figure shown
        mid = (low + high) / 2
        low, high = (mid, high) if expected_tokens_per_target_call(mid, gamma) < cost else (low, mid)
    return high
