"""The metric set of a speculative run: one function, used by the UI, the CLI, the bench and the report.

Every metric is computed from `StepRecord`s (what each speculative step did and how long it took)
and, for the timing metrics, the wall times of the target-only baseline's forwards. Definitions:

Acceptance (no timing needed)
  acceptance_rate          Leviathan et al.'s alpha: accepted / tested drafts. A draft after the
                           first rejection of its step is never tested, so it does not count.
  draft_acceptance_rate    vLLM's "draft acceptance rate": accepted / drafted (untested ones count).
  mean_acceptance_length   vLLM's: tokens per step, the resampled or bonus token included.
  per_position_acceptance  vLLM's: for each drafted position i, the share of the steps that drafted it that
                           accepted it (every step under a fixed gamma).
  acceptance_length_histogram          steps by number of accepted drafts, 0..gamma.
  expected_acceptance_length_histogram the same under i.i.d. acceptances at the measured alpha:
                           a truncated geometric law, alpha^k (1 - alpha) for k < gamma, alpha^gamma at gamma.
  drafted_length_histogram             steps by number of drafted tokens, 0..gamma (one bar under a fixed gamma;
                           spread under gamma auto, which stops early: core.draft_length).
  system_efficiency        vLLM's: mean over steps of tokens emitted / (gamma + 1), the most a step can emit.
  tokens_per_target_call   tokens / target forwards (one per step, so equal to mean_acceptance_length);
  expected_tokens_per_target_call      (1 - alpha^(gamma+1)) / (1 - alpha) (Leviathan Eq. 1), at each round's own
                           gamma, averaged over the rounds (gamma auto drafts a mix of lengths).
  gamma_auto               whether the rounds drafted under gamma auto (their records say why each stopped);
  mean_gamma               drafted tokens a round, the mean (gamma itself is the longest round's).

Several drafts (k chains per step; with k = 1 every level has one try and these restate the above)
  drafts                   the largest k among the records.
  acceptance_by_depth      for each depth d, the share of steps that examined depth d and accepted a
                           token there (with one chain: per-position acceptance among tested drafts).
  acceptance_by_rank       for each sibling rank r (0 = tried first at its depth), the share of tries
                           of rank r that were accepted: how much the 2nd, 3rd... candidate still adds.
  tries_by_rank            how many tries of each rank there were (the denominators).

Timing (needs the baseline; `None` until both sides ran)
  speedup                  tokens/s speculative over tokens/s target-only, from this run's wall times;
  speedup_stderr           its standard error (delta method over per-step and per-forward times);
  cost_ratio_c             c: one draft forward over one target forward, both measured in this run
                           (draft phase time / draft forwards; baseline time / baseline forwards);
  target_verify_ms         the round's target pass over gamma + 1 positions, mean over the rounds;
  verify_cost_in_run       V(gamma + 1) as this run measured it: target_verify_ms / target_ms (Thm 3.8 takes 1);
  predicted_speedup_in_run (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + V)) with this run's alpha, c and V
                           (gamma auto: that Eq. 1 at each round's own length, averaged, over mean gamma c + V);
  round_host_share         the share of a round's time outside its draft and target forwards (verification,
                           sampling, the trace): what no forward-cost model prices;
  predicted_speedup_thm38  Leviathan Thm 3.8: (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1)), the limit
                           where a verify costs one forward;
  best_gamma               the gamma in 1..16 that Thm 3.8 favours for the measured alpha and c;
  warming_up               True while either side has fewer than MIN_TIMED forwards: until then the
                           timing metrics are shown as "warming up", since the first few forwards
                           and a 2-step ratio say more about the machine's mood than the method.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from . import theory
from .config import GAMMA_MAX
from .trace import StepRecord

MIN_TIMED = 8  # speculative steps and baseline forwards needed before timings count (see warming_up)


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def truncated_geometric(alpha: float, gamma: int) -> list[float]:
    """P(k drafts accepted), k = 0..gamma, when each is accepted independently with chance alpha."""
    return [alpha ** k * (1 - alpha) for k in range(gamma)] + [alpha ** gamma]


def _speedup_stderr(records: Sequence[StepRecord], calls: Sequence[float], speedup: float) -> float:
    """Delta method: relative errors of the two time-per-token estimates add in quadrature."""
    m, k = len(records), len(calls)
    if m < 2 or k < 2:
        return math.inf
    tokens = sum(r.n_emitted for r in records)
    per_token = sum(r.step_s for r in records) / tokens
    spec_var = sum((r.step_s - per_token * r.n_emitted) ** 2 for r in records) / (m - 1) / m
    spec_rel = math.sqrt(spec_var) / (tokens / m) / per_token
    mean = sum(calls) / k
    base_rel = math.sqrt(sum((t - mean) ** 2 for t in calls) / (k - 1) / k) / mean
    return speedup * math.hypot(spec_rel, base_rel)


def metric_set(records: Sequence[StepRecord], baseline_call_s: Sequence[float] = ()) -> dict:
    """The metric set above for one run (or several runs' records pooled), as a plain dict."""
    steps = len(records)
    gamma = max((r.gamma for r in records), default=0)
    accepted = sum(r.n_accepted for r in records)
    examined = sum(r.n_examined for r in records)
    drafted = sum(r.gamma - getattr(r, "after_eos", 0) for r in records)  # drafts after an accepted EOS never count
    tokens = sum(r.n_emitted for r in records)
    alpha = _ratio(accepted, examined)
    histogram = [sum(r.n_accepted == k for r in records) for k in range(gamma + 1)]
    out = {
        "steps": steps, "gamma": gamma, "tokens": tokens, "target_calls": steps, "draft_calls": drafted,
        "accepted": accepted, "examined": examined,
        "acceptance_rate": alpha,
        "draft_acceptance_rate": _ratio(accepted, drafted),
        "mean_acceptance_length": _ratio(tokens, steps),
        # of the rounds that drafted position i (all of them under a fixed gamma; fewer under gamma auto)
        "per_position_acceptance": [_ratio(sum(r.n_accepted > i for r in records), sum(r.gamma > i for r in records))
                                    for i in range(gamma)],
        "acceptance_length_histogram": histogram,
        "drafted_length_histogram": [sum(r.gamma == k for r in records) for k in range(gamma + 1)],
        "expected_acceptance_length_histogram": _expected_histogram(records, alpha, gamma),
        "system_efficiency": _ratio(sum(r.n_emitted / (r.gamma + 1) for r in records), steps),
        "tokens_per_target_call": _ratio(tokens, steps),
        "gamma_auto": any(r.auto for r in records),
        "mean_gamma": _ratio(sum(r.gamma for r in records), steps),
        # Eq. 1 at each round's own length, averaged: one length under a fixed gamma, gamma auto's mix otherwise
        "expected_tokens_per_target_call": _ratio(sum(theory.expected_tokens_per_target_call(alpha, r.gamma)
                                                      for r in records), steps),
        "wall_s": sum(r.step_s for r in records),
    }
    out.update(_by_depth_and_rank(records, gamma))
    out.update(_timing(records, baseline_call_s, alpha, gamma))
    return out


def _expected_histogram(records: Sequence[StepRecord], alpha: float, gamma: int) -> list[float]:
    """Steps by accepted drafts, 0..gamma, were each draft accepted independently with chance alpha: each round's
    truncated geometric at the length it drafted, summed (steps x one law under a fixed gamma)."""
    if not records:
        return []
    out = [0.0] * (gamma + 1)
    for r in records:
        for k, p in enumerate(truncated_geometric(alpha, r.gamma)):
            out[k] += p
    return out


def _by_depth_and_rank(records: Sequence[StepRecord], gamma: int) -> dict:
    drafts = max((getattr(r, "drafts", 1) for r in records), default=1)
    examined, accepted = [0] * gamma, [0] * gamma
    tries, kept = [0] * drafts, [0] * drafts
    for r in records:
        level_tries = tuple(getattr(r, "level_tries", ())) or (1,) * r.n_examined
        for depth, n in enumerate(level_tries):
            hit = depth < r.n_accepted  # the last try of an accepted level is the accepted one
            examined[depth] += 1
            accepted[depth] += hit
            for rank in range(n):
                tries[rank] += 1
                kept[rank] += hit and rank == n - 1
    return {"drafts": drafts, "acceptance_by_depth": [_ratio(a, e) for a, e in zip(accepted, examined)],
            "acceptance_by_rank": [_ratio(a, t) for a, t in zip(kept, tries)], "tries_by_rank": tries}


def _timing(records: Sequence[StepRecord], calls: Sequence[float], alpha: float, gamma: int) -> dict:
    keys = ("tokens_per_s_speculative", "tokens_per_s_target_only", "speedup", "speedup_stderr", "draft_ms",
            "target_ms", "cost_ratio_c", "target_verify_ms", "verify_cost_in_run", "predicted_speedup_in_run",
            "round_host_share",
            "predicted_speedup_thm38", "best_gamma")
    if not records or not calls:
        return {**dict.fromkeys(keys), "warming_up": True}
    spec_rate = _ratio(sum(r.n_emitted for r in records), sum(r.step_s for r in records))
    base_rate = _ratio(len(calls), sum(calls))
    speedup = _ratio(spec_rate, base_rate)
    draft_ms = 1e3 * _ratio(sum(r.draft_s for r in records), sum(r.gamma for r in records))
    target_ms = 1e3 * sum(calls) / len(calls)
    c = _ratio(draft_ms, target_ms)
    verify_ms = 1e3 * sum(r.target_s for r in records) / len(records)
    verify_cost = _ratio(verify_ms, target_ms)
    # gamma auto: Eq. 1 at each round's own length over the mean drafting (a fixed gamma: the one formula)
    lengths = [r.gamma for r in records] if any(r.auto for r in records) else None
    in_run = None if verify_cost <= 0 else (theory.mixed_speedup(alpha, lengths, c, verify_cost) if lengths
                                            else theory.speedup_with_verify_cost(alpha, gamma, c, verify_cost))
    return {"tokens_per_s_speculative": spec_rate, "tokens_per_s_target_only": base_rate, "speedup": speedup,
            "speedup_stderr": _speedup_stderr(records, calls, speedup), "draft_ms": draft_ms, "target_ms": target_ms,
            "cost_ratio_c": c, "target_verify_ms": verify_ms, "verify_cost_in_run": verify_cost,
            "predicted_speedup_in_run": in_run,
            "round_host_share": _ratio(sum(r.step_s - r.draft_s - r.target_s for r in records), sum(r.step_s for r in records)),
            "predicted_speedup_thm38": (theory.mixed_speedup(alpha, lengths, c) if lengths
                                        else theory.expected_speedup(alpha, gamma, c)),
            "best_gamma": theory.optimal_gamma(alpha, c, GAMMA_MAX),
            "warming_up": len(records) < MIN_TIMED or len(calls) < MIN_TIMED}
