"""Which "acceptance" is meant: every tool's figure from the same counts, and pooled against per-request.

The same words mean different quotients (counts of one run: R rounds of gamma drafts, A accepted
drafts, T tested drafts, a draft after its round's first rejection being untested):

  convention                     figure                         quotient               bonus token
  vLLM (spec_decode counters)    draft acceptance rate          A / (R gamma)          -
                                 mean acceptance length         1 + A / R              in
                                 per-position acceptance        A_i / R                -
  Leviathan et al. 2023          alpha (Sec. 3.1, per test)     A / T                  -
                                 E[tokens per iteration] Eq. 1  (1 - a^(g+1))/(1 - a)  in
  llama.cpp server               draft acceptance rate          accepted / drafted     -
                                 (log "draft acceptance rate", spec_decode_* counters = vLLM's)
                                 mean accept length (#24850)    1 + A / verify steps   in
  SGLang                         spec_accept_length (gauge)     1 + A / R              in
                                 spec_accept_rate (gauge)       averaged by the server; its collector does
                                                                not state the denominator
  EAGLE papers' tau, some logs   accepted per round             A / R                  out

Conversions with gamma fixed: draft acceptance rate = (length - 1) / gamma; length without the bonus
= length - 1; alpha = A / (R + A_1 + ... + A_{gamma-1}) from vLLM's per-position counts.

Pooled against per request: the pooled ratio weighs requests by their rounds (a long request counts
more), the mean over requests weighs each request once; with one long easy request and many short hard
ones they can rank two configurations in opposite orders (Simpson's paradox).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

_ROWS = (  # tool, figure, quotient, per, bonus token
    ("vLLM", "draft acceptance rate", "accepted / drafted", "draft", "—"),
    ("vLLM", "mean acceptance length", "1 + accepted / rounds", "round", "in"),
    ("vLLM", "per-position acceptance", "accepted at position i / rounds", "round", "—"),
    ("Leviathan et al.", "α", "accepted / tested", "test", "—"),
    ("Leviathan et al.", "expected tokens per iteration (Eq. 1)", "(1 − α^(γ+1)) / (1 − α)", "round", "in"),
    ("llama.cpp", "draft acceptance rate", "accepted / drafted", "draft", "—"),
    ("llama.cpp", "mean accept length", "1 + accepted / verify steps", "round", "in"),
    ("SGLang", "spec_accept_length", "1 + accepted / verify forwards", "round", "in"),
    ("EAGLE's τ without the bonus, some logs", "accepted per round", "accepted / rounds", "round", "out"),
)
CONVENTIONS = tuple(dict(zip(("tool", "figure", "quotient", "per", "bonus"), row)) for row in _ROWS)


def figures_by_convention(rounds: int, gamma: int, accepted: int, tested: int) -> dict:
    """Every convention's figure from one run's counts (rounds of `gamma` drafts; drafts after an accepted
    EOS already taken out of `accepted` and `tested`)."""
    drafted = rounds * gamma
    alpha = accepted / tested if tested else 0.0
    return {
        "vllm_draft_acceptance_rate": accepted / drafted if drafted else 0.0,
        "vllm_mean_acceptance_length": 1 + accepted / rounds if rounds else 0.0,
        "leviathan_alpha": alpha,
        "leviathan_expected_tokens_eq1": sum(alpha ** k for k in range(gamma + 1)),
        "llamacpp_draft_acceptance_rate": accepted / drafted if drafted else 0.0,
        "sglang_spec_accept_length": 1 + accepted / rounds if rounds else 0.0,
        "accepted_per_round_bonus_out": accepted / rounds if rounds else 0.0,
    }


def pooled_and_per_request(requests: Sequence[Sequence]) -> dict:
    """Acceptance rate (alpha, accepted / tested) and acceptance length (tokens a round, bonus included),
    pooled over all rounds and as the mean of each request's own figure. `requests`: each a list of
    StepRecords (or anything with n_accepted, n_examined)."""
    mine = [r for r in requests if r]
    per_alpha = [sum(x.n_accepted for x in r) / max(1, sum(x.n_examined for x in r)) for r in mine]
    per_length = [1 + sum(x.n_accepted for x in r) / len(r) for r in mine]
    rounds = sum(len(r) for r in mine)
    accepted = sum(x.n_accepted for r in mine for x in r)
    tested = sum(x.n_examined for r in mine for x in r)
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
    return {"requests": len(mine), "alpha_pooled": accepted / tested if tested else 0.0,
            "alpha_mean_over_requests": mean(per_alpha),
            "acceptance_length_pooled": 1 + accepted / rounds if rounds else 0.0,
            "acceptance_length_mean_over_requests": mean(per_length),
            "acceptance_length_per_request": per_length}


def acceptance_length_histogram(lengths: Sequence[float], width: float = 0.25) -> dict:
    """Requests by their mean acceptance length, in bins of `width` tokens from 1 (left edges)."""
    if not lengths:
        return {"edges": [], "counts": []}
    top = int((max(lengths) - 1) / width) + 1
    counts = [0] * top
    for value in lengths:
        counts[min(top - 1, int((value - 1) / width))] += 1
    return {"edges": [round(1 + i * width, 6) for i in range(top + 1)], "counts": counts}


def ranking_disagreement(forms: Mapping[str, dict], pooled: str, per_request: str, what: str) -> str:
    """A sentence when ranking the configurations in `forms` by their pooled figure and by their mean over
    requests gives different orders ('' when they agree or there are fewer than two)."""
    if len(forms) < 2:
        return ""
    by_pooled = sorted(forms, key=lambda k: -forms[k][pooled])
    by_requests = sorted(forms, key=lambda k: -forms[k][per_request])
    if by_pooled == by_requests:
        return ""
    shown = lambda order, key: ", ".join(f"{k} ({forms[k][key]:.3f})" for k in order)
    return (f"The pooled {what} and its mean over requests rank these differently: pooled {shown(by_pooled, pooled)}; "
            f"mean over requests {shown(by_requests, per_request)}. The pooled ratio weighs long requests more; "
            "the mean over requests weighs each request once: say which one a claim uses.")
