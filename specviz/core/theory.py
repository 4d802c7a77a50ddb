"""What speculative decoding should gain, from the acceptance rate alone (Leviathan et al., Sec. 3).

alpha: expected acceptance rate E[sum_x min(p, q)]; gamma: drafted tokens per round;
c: cost of one draft forward relative to one target forward.
"""
from __future__ import annotations


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
