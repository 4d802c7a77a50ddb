"""What if: expected acceptance length and speedup at other gamma and draft counts, from a measured
per-position acceptance curve and a cost ratio, before changing a server's num_speculative_tokens.

Two forms of a per-position curve (both 1-based position i = 1..n):
  unconditional  a_i = P(drafts 1..i all accepted): vLLM's per-position acceptance, "accepted at
                 position i / drafts" (vllm:spec_decode_num_accepted_tokens_per_pos over
                 vllm:spec_decode_num_drafts). Non-increasing.
  conditional    b_i = P(draft i accepted | drafts 1..i-1 accepted) = a_i / a_{i-1} (a_0 = 1): the
                 rate among the drafts the target actually tested at position i. Leviathan et al.'s
                 alpha (2023, Sec. 3.1) is the special case b_i = alpha for every i.

The maths (exact under the one assumption stated in `acceptance_length`):
  Accepting draft i needs drafts 1..i accepted, and a draft is tested the same way whatever gamma
  is, so a run's a_i holds for every gamma >= i. The accepted count N of a round at gamma satisfies
  P(N >= i) = a_i, hence E[N] = sum_{i=1..gamma} a_i, and a round emits N + 1 tokens (the resampled
  or bonus token included):
      acceptance length  L(gamma) = 1 + a_1 + ... + a_gamma.
  With b_i = alpha this is (1 - alpha^(gamma+1)) / (1 - alpha), Leviathan Eq. (1).
  A round costs gamma draft forwards and one target pass over gamma + 1 positions; target-only costs one
  one-position pass a token, so with c = draft forward / target forward and V(n) = a target pass over n
  positions / one over one (`core.verify_cost`, measured for the pair on its device)
      speedup  S(gamma) = L(gamma) / (gamma c + V(gamma + 1)),
  which with b_i = alpha and V = 1 (a verify costing one forward) is Leviathan et al. Thm 3.8; the table
  gives that limit beside it (speedup_thm38). One target pass a round: tokens per target pass = L.
  What a measured round adds (`core.round_host`, each optional, each measured by `report`): its host work h(gamma)
  in target-only steps, the forward's share f of a target-only step (which pays its own draw), and a request's
  budget N, whose last round is cut (`tokens_per_round_within`):
      speedup  S(gamma) = L_N(gamma) / (gamma c + f V(gamma + 1) + h(gamma)).
  Beyond the measured positions (gamma > n) the last measured conditional rate b_n is assumed for
  every further position (`extend`), the i.i.d. model Thm 3.8 uses throughout.

Several drafts (k chains, verified as a tree: `core.tree`, SpecInfer's multi-draft sampling): a depth
is accepted when any of its k tries is. The first try is accepted with b_i; after it fails the next
try is judged against the residual and is accepted with s_1, the one after with s_2, ... (the
sibling rates: measured by `acceptance_by_rank` of a multi-draft run, or predicted from the residuals
of single-draft rejections by `core.rank_analysis`). So
      b_i(k) = 1 - (1 - b_i) (1 - s_1) ... (1 - s_{k-1}),   a_i(k) = b_1(k) ... b_i(k),
taking the sibling rates as the same at every depth and k tries at every depth (a tree that branches k
ways at each depth; with k independent chains fewer chains survive below the first depth, so for them
this is an upper bound). A round then costs (gamma c + V(gamma + 1))(1 + rho (k - 1)):
rho is what one more row costs relative to the first (0 on an accelerator with rows to spare; the
CPU of docs/benchmarks.md measured 0.1 to 0.4).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .round_host import line_at
from .verify_cost import check_verify_costs, verify_cost_at


def _check_rates(name: str, values: Sequence[float]) -> list[float]:
    out = [float(v) for v in values]
    if not out:
        raise ValueError(f"{name} needs at least one rate")
    for v in out:
        if not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"{name} takes rates in [0, 1], not {v!r}")
    return out


def check_unconditional(curve: Sequence[float]) -> list[float]:
    """A vLLM-style per-position curve: rates in [0, 1], never rising (position i needs i - 1 accepted)."""
    out = _check_rates("--per-position", curve)
    for i in range(1, len(out)):
        if out[i] > out[i - 1] + 1e-9:
            raise ValueError(f"--per-position must not rise (accepted at position i over drafts, vLLM's form): "
                             f"position {i + 1} has {out[i]:g} > position {i}'s {out[i - 1]:g}; "
                             "rates over tested drafts (conditional) multiply into this form: a_i = b_1 b_2 ... b_i")
    return out


def conditional_from_unconditional(curve: Sequence[float]) -> list[float]:
    """b_i = a_i / a_{i-1} (a_0 = 1); a position never reached (a_{i-1} = 0) gets b_i = 0."""
    a = check_unconditional(curve)
    return [a[i] / (a[i - 1] if i else 1.0) if (a[i - 1] if i else 1.0) > 0 else 0.0 for i in range(len(a))]


def unconditional_from_conditional(rates: Sequence[float]) -> list[float]:
    """a_i = b_1 b_2 ... b_i."""
    out, running = [], 1.0
    for b in _check_rates("conditional rates", rates):
        running *= b
        out.append(running)
    return out


def extend(curve: Sequence[float], gamma: int) -> list[float]:
    """The unconditional curve to `gamma` positions: measured ones as they are, further ones with the
    last measured conditional rate."""
    a = check_unconditional(curve)
    tail = conditional_from_unconditional(a)[-1]
    while len(a) < gamma:
        a.append(a[-1] * tail)
    return a[:gamma]


def acceptance_length(curve: Sequence[float], gamma: int) -> float:
    """Expected tokens a round emits, bonus included: 1 + a_1 + ... + a_gamma (assumes a position's
    acceptance does not depend on how many drafts follow it, true of exact speculative sampling)."""
    return 1.0 + sum(extend(curve, gamma))


def length_distribution(curve: Sequence[float]) -> list[float]:
    """P(L = k) for k = 1..gamma + 1 from a round's unconditional curve a_1..a_gamma: a round emits k tokens when
    drafts 1..k-1 are accepted and draft k is not (a_{k-1} - a_k, a_0 = 1), gamma + 1 when all are (a_gamma)."""
    a = [1.0, *check_unconditional(curve)]
    return [a[k - 1] - a[k] for k in range(1, len(a))] + [a[-1]]


def rounds_to_emit(curve: Sequence[float], lengths: Sequence[int]) -> list[float]:
    """E[rounds] a request of each of `lengths` new tokens takes, its last round cut there: the renewal recursion
    R(n) = 1 + sum_k P(L = k) R(n - k), R(n <= 0) = 0 (rounds independent, as in Leviathan et al. Sec. 3.3)."""
    if not lengths or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in lengths):
        raise ValueError(f"request lengths must be whole numbers >= 1, not {list(lengths)!r}")
    law = length_distribution(curve)
    rounds = [0.0] * (max(lengths) + 1)
    for n in range(1, len(rounds)):
        rounds[n] = 1.0 + sum(p * rounds[max(0, n - k)] for k, p in enumerate(law, 1))
    return [rounds[n] for n in lengths]


def tokens_per_round_within(curve: Sequence[float], max_new_tokens: int) -> float:
    """Tokens a round emits on average over a request of `max_new_tokens`: N / E[rounds to emit N], where the
    last round is cut at the budget (it costs a whole round and keeps what fits). `curve` is the round's
    unconditional curve a_1..a_gamma. E[rounds] by the renewal recursion R(n) = 1 + sum_k P(L = k) R(n - k),
    R(n <= 0) = 0 (rounds independent, as in Leviathan et al. Sec. 3.3; an EOS before N is not modelled)."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a whole number >= 1, not {max_new_tokens!r}")
    return max_new_tokens / rounds_to_emit(curve, [max_new_tokens])[0]


def with_drafts(curve: Sequence[float], gamma: int, drafts: int, sibling_rates: Sequence[float] = ()) -> list[float]:
    """The unconditional curve at gamma with k = `drafts` tries per depth (see the module's doc)."""
    if drafts > 1 and len(sibling_rates) < drafts - 1:
        raise ValueError(f"--drafts {drafts} needs the acceptance of the 2nd..{drafts}th try at a depth "
                         f"(--sibling-rates, {drafts - 1} values; or a report with a multi-draft run or a rank analysis)")
    siblings = _check_rates("--sibling-rates", sibling_rates)[: drafts - 1] if drafts > 1 else []
    miss_siblings = math.prod(1.0 - s for s in siblings)  # every later try at a depth fails too
    conditional = conditional_from_unconditional(extend(curve, gamma))
    return unconditional_from_conditional([1.0 - (1.0 - b) * miss_siblings for b in conditional])


def speedup(length: float, gamma: int, cost_ratio: float, drafts: int = 1, extra_row_cost: float = 0.0,
            verify_cost: float = 1.0, forward_share: float = 1.0, host_cost: float = 0.0) -> float:
    """Expected tokens per unit of target-only time: L / ((gamma c + f V)(1 + rho (k - 1)) + h), V the round's
    target pass over gamma + 1 positions in one-position passes, f a one-position pass's share of a target-only
    step and h the round's host work in target-only steps (`core.round_host`); V = f = 1, h = 0: Thm 3.8's cost
    model."""
    forwards = (gamma * cost_ratio + forward_share * verify_cost) * (1.0 + extra_row_cost * (drafts - 1))
    return length / (forwards + host_cost)


FORWARD_SHARE_MAX = 10.0  # a pass ten times a whole step is a measurement gone wrong, not a machine
HOST_COST_MAX = 100.0     # so is a round's host work of a hundred target-only steps


def check_round_host(host_cost: Sequence[float], forward_share: float) -> tuple[tuple[float, float], float]:
    """(the host line (h_0, h_1) in target-only steps, h(gamma) = h_0 + h_1 gamma; the forward's share f)."""
    try:
        line = tuple(float(x) for x in host_cost)
    except (TypeError, ValueError):
        line = ()
    if len(line) not in (1, 2) or not all(math.isfinite(x) and 0 <= x <= HOST_COST_MAX for x in line):
        raise ValueError(f"--host-cost takes one or two numbers in [0, {HOST_COST_MAX:g}], h0[,h1]: the round's host "
                         f"work in target-only "
                         f"steps, h0 + h1 gamma (e.g. 0.15 or 0.14,0.013), not {host_cost!r}")
    if not (isinstance(forward_share, (int, float)) and not isinstance(forward_share, bool)
            and math.isfinite(forward_share) and 0 < forward_share <= FORWARD_SHARE_MAX):
        raise ValueError(f"--forward-share must be a number in (0, {FORWARD_SHARE_MAX:g}]: a one-position target pass "
                         f"over a target-only step (about 1; above 1 where the baseline's step runs faster than the "
                         f"timed pass), not {forward_share!r}")
    return (line[0], line[1] if len(line) == 2 else 0.0), float(forward_share)


def whatif_table(curve: Sequence[float], cost_ratio: float, gammas: Sequence[int], drafts: Sequence[int] = (1,),
                 sibling_rates: Sequence[float] = (), extra_row_cost: float = 0.0,
                 verify_costs: Sequence[float] | None = None, host_cost: Sequence[float] = (0.0, 0.0),
                 forward_share: float = 1.0, max_new_tokens: int | None = None,
                 drafting: Sequence[float] | None = None) -> dict:
    """One row per (gamma, k): gamma, drafts, acceptance_length (bonus included; also the tokens per target
    pass), tokens_per_round (the same with the last round of a `max_new_tokens` request cut at the budget; None:
    not cut), verify_cost V(gamma + 1) (from `verify_costs`, [V(1) = 1, V(2), ...], extrapolated past its end as
    `core.verify_cost` says and flagged so; 1 without a curve), host_cost h(gamma) (the round's host work in
    target-only steps, h0 + h1 gamma), speedup under all of them, speedup_forwards_only (V alone: no host work, no
    cut) and speedup_thm38 (V = 1, the limit where a verify costs one forward); `best` is the row of the highest
    speedup (ties: the smaller gamma, then k). `drafting`: a round's drafting as a line d0 + d1 gamma in target-only
    steps (a report's: c falls as gamma grows), in place of gamma c in `speedup`."""
    if not (math.isfinite(cost_ratio) and cost_ratio >= 0):
        raise ValueError(f"--cost-ratio must be a number >= 0, not {cost_ratio!r}")
    if not (math.isfinite(extra_row_cost) and extra_row_cost >= 0):
        raise ValueError(f"--extra-row-cost must be a number >= 0, not {extra_row_cost!r}")
    costs = check_verify_costs(verify_costs, "--verify-cost") if verify_costs is not None else None
    host, share = check_round_host(host_cost, forward_share)
    if drafting is not None:
        drafting = check_round_host(drafting, 1.0)[0]
    rows = []
    for k in drafts:
        for g in gammas:
            kept = with_drafts(curve, g, k, sibling_rates)
            length = 1.0 + sum(kept)
            tokens = tokens_per_round_within(kept, max_new_tokens) if max_new_tokens is not None else None
            v = verify_cost_at(costs, g + 1) if costs else 1.0
            h = line_at(host, g)
            c = cost_ratio if drafting is None else line_at(drafting, g) / g  # a drafted token's share
            rows.append({"gamma": g, "drafts": k, "acceptance_length": length, "tokens_per_round": tokens,
                         "verify_cost": v, "verify_cost_extrapolated": bool(costs) and g + 1 > len(costs),
                         "host_cost": h,
                         "speedup": speedup(length if tokens is None else tokens, g, c, k, extra_row_cost, v, share, h),
                         "speedup_forwards_only": speedup(length, g, cost_ratio, k, extra_row_cost, v),
                         "speedup_thm38": speedup(length, g, cost_ratio, k, extra_row_cost)})
    best = max(rows, key=lambda r: (r["speedup"], -r["gamma"], -r["drafts"]))
    return {"table": rows, "best": best, "per_position": check_unconditional(curve),
            "conditional": conditional_from_unconditional(curve), "cost_ratio_c": cost_ratio,
            "extra_row_cost": extra_row_cost, "sibling_rates": list(sibling_rates), "verify_costs": costs,
            "host_cost": list(host), "forward_share": share, "max_new_tokens": max_new_tokens,
            "drafting": list(drafting) if drafting is not None else None}
