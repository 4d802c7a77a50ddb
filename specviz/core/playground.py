"""The proof you can watch: speculative sampling on toy distributions, no model needed.

Given a target distribution and a draft distribution over a few named tokens:
  - `decomposition`: the output law as accepted mass min(p, q) plus rejected mass
    (1 - sum min(p, q)) times the residual norm(max(0, p - q)), which adds up to p exactly
    (Leviathan et al. 2023, Appendix A.1's correctness proof; the over- and under-sampled
    tokens of the note "Speculative Sampling Explained");
  - `simulate`: many vectorised rounds of draft -> accept/reject -> correct, for the exact rule
    and two wrong ones seen in the wild ("resample from the target", "keep the draft anyway"),
    each with a chi-square test against the target;
  - `mentored`: Tran-Thien's mentored-decoding plan at a KL budget and the acceptance-vs-KL frontier.
Randomness only from a local torch.Generator(seed).
"""
from __future__ import annotations

import math

import torch

from . import sampling

VARIANTS = ("exact", "resample-target", "keep-draft", "greedy-match")
MAX_SAMPLES = 1_000_000
MAX_TOKENS = 50
MIN_BIN_MASS = 0.05  # chi-square bins merged until each holds this much expected mass

TOY_TOKENS = ("the", "a", "cat", "dog", "sat", "ran")
TOY_PRESETS = {  # name -> (target, draft) weights over TOY_TOKENS
    "overconfident draft": ([0.30, 0.25, 0.20, 0.10, 0.10, 0.05], [0.70, 0.10, 0.08, 0.06, 0.04, 0.02]),
    "underconfident draft": ([0.60, 0.20, 0.10, 0.05, 0.03, 0.02], [0.20, 0.18, 0.17, 0.16, 0.15, 0.14]),
    "identical": ([0.35, 0.25, 0.15, 0.10, 0.10, 0.05], [0.35, 0.25, 0.15, 0.10, 0.10, 0.05]),
    "disjoint supports": ([0.50, 0.30, 0.20, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.40, 0.35, 0.25]),
    "one-hot target": ([0.0, 0.0, 1.0, 0.0, 0.0, 0.0], [0.25, 0.20, 0.20, 0.15, 0.10, 0.10]),
    # prompt lookup's q: a point mass on the copied token; accept chance p(cat), residual p without "cat"
    "one-hot draft (prompt lookup)": ([0.30, 0.25, 0.20, 0.10, 0.10, 0.05], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
}


def random_preset(seed: int, size: int = len(TOY_TOKENS)) -> tuple[list[float], list[float]]:
    """Two random distributions (Dirichlet(1) draws) from a seeded local generator."""
    gen = torch.Generator().manual_seed(int(seed))
    draws = -torch.log(torch.rand(2, size, generator=gen, dtype=torch.float64))
    draws = draws / draws.sum(-1, keepdim=True)
    return [round(x, 3) for x in draws[0].tolist()], [round(x, 3) for x in draws[1].tolist()]


MAX_SEED = 2**63 - 1


def whole_number(name: str, value, low: int, high: int) -> int:
    """value as an int in low..high; ValueError naming the setting for 2.5, NaN, infinity, text, None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not (math.isfinite(value) and value.is_integer())) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number in {low:,}..{high:,}, not {value!r}")
    return int(value)


def normalise(weights, name: str) -> torch.Tensor:
    """A list of non-negative numbers as a float64 distribution; ValueError naming what is wrong."""
    if isinstance(weights, str):
        weights = parse_weights(weights, name)
    try:
        values = torch.tensor([float(w) for w in weights], dtype=torch.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a list of numbers, got {weights!r}") from err
    if not 2 <= len(values) <= MAX_TOKENS:
        raise ValueError(f"{name} needs 2 to {MAX_TOKENS} tokens, got {len(values)}")
    if not torch.isfinite(values).all():
        raise ValueError(f"{name} has a NaN or infinite weight")
    if (values < 0).any():
        raise ValueError(f"{name} has a negative weight")
    if values.max() <= 0:
        raise ValueError(f"{name} has no mass: give at least one weight above 0")
    total = values.sum()
    if not torch.isfinite(total):  # weights near 1e308 sum to infinity: scale them to [0, 1] first
        values = values / values.max()
        total = values.sum()
    return values / total


def parse_weights(text: str, name: str) -> list[float]:
    """'0.5, 0.3, 0.2' or '[0.5, 0.3, 0.2]' as numbers."""
    parts = [x for x in text.replace("[", " ").replace("]", " ").replace(",", " ").split() if x]
    try:
        return [float(x) for x in parts]
    except ValueError as err:
        raise ValueError(f"{name}: {err}; write numbers separated by commas, e.g. 0.5, 0.3, 0.2") from err


def check_pair(target, draft) -> tuple[torch.Tensor, torch.Tensor]:
    p, q = normalise(target, "target"), normalise(draft, "draft")
    if p.shape != q.shape:
        raise ValueError(f"target has {len(p)} tokens but draft has {len(q)}: give one weight per token to each")
    return p, q


def decomposition(target, draft) -> dict:
    """p = min(p, q) + (1 - sum min(p, q)) * norm(max(0, p - q)), token by token (plain lists)."""
    p, q = check_pair(target, draft)
    accepted = torch.minimum(p, q)
    rejected = 1 - accepted.sum()
    residual = sampling.residual_distribution(p, q)
    return {"target": p.tolist(), "draft": q.tolist(), "accepted": accepted.tolist(),
            "rejected_times_residual": (rejected * residual).tolist(), "residual": residual.tolist(),
            "acceptance_rate": float(accepted.sum()), "tv": float(sampling.tv_distance(p, q)),
            "over_sampled": (q > p).tolist(), "under_sampled": (p > q).tolist()}


def merge_bins(counts, probs, min_mass: float = MIN_BIN_MASS) -> tuple[list[float], list[float]] | None:
    """(observed, expected mass) per bin, the smallest bins merged until each holds min_mass of the
    expected mass (scipy's advice: no tiny expected counts); None when a token of probability 0 was
    observed (the sample is impossible under probs)."""
    counts = torch.as_tensor(counts, dtype=torch.float64)
    probs = torch.as_tensor(probs, dtype=torch.float64)
    probs = probs / probs.sum()
    if counts[probs == 0].sum() > 0:
        return None
    keep = probs > 0
    counts, probs = counts[keep], probs[keep]
    observed, expected, acc_o, acc_e = [], [], 0.0, 0.0
    for i in probs.argsort().tolist():
        acc_o, acc_e = acc_o + float(counts[i]), acc_e + float(probs[i])
        if acc_e >= min_mass - 1e-12:  # a mass of 0.05 that rounds to 0.0499... is a bin of its own
            observed.append(acc_o)
            expected.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:  # leftover small mass joins the last bin
        if observed:
            observed[-1] += acc_o
            expected[-1] += acc_e
        else:
            observed, expected = [acc_o], [acc_e]
    return observed, expected


def chi_square_pvalue(counts, probs) -> float:
    """Pearson chi-square p-value of counts against probs over merge_bins' bins; 0 for an impossible sample."""
    bins = merge_bins(counts, probs)
    if bins is None:
        return 0.0
    if len(bins[0]) < 2:
        return 1.0
    observed = torch.tensor(bins[0], dtype=torch.float64)
    expected = torch.tensor(bins[1], dtype=torch.float64) * observed.sum()
    statistic = ((observed - expected) ** 2 / expected).sum()
    dof = torch.tensor((len(observed) - 1) / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(dof, statistic / 2))  # the chi-square survival function


def simulate(target, draft, samples: int = 100_000, variant: str = "exact", seed: int = 0) -> dict:
    """`samples` independent rounds of one drafted token, vectorised:
       1. draft   x ~ q
       2. verify  accept when u < min(1, p(x)/q(x)), u ~ U(0, 1)
       3. correct on rejection: exact -> a token from the residual norm(max(0, p - q));
                  resample-target -> a token from p (biased); keep-draft -> x anyway (the output is q).
    greedy-match is the misreading that speculative decoding means "keep the draft while the two argmaxes
    agree, replace it by the target's at the first mismatch" (Kylin's "Speculative Decoding 的 Sampling
    误解浅析" sets it out): 1. the draft proposes its argmax, 2. kept iff it is the target's argmax,
    3. else the target's argmax. Its output is always argmax p: greedy decoding, exact only at T = 0.
    `max_gap` is the largest |observed frequency - p| over the tokens."""
    p, q = check_pair(target, draft)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    samples = whole_number("samples", samples, 1, MAX_SAMPLES)
    seed = whole_number("seed", seed, 0, MAX_SEED)
    gen = torch.Generator().manual_seed(seed)
    if variant == "greedy-match":
        drafted = q.argmax().expand(samples)                                          # [samples] 1. draft
        accepted = drafted == p.argmax()                                              # [samples] 2. verify
        fallback = p.argmax().expand(samples)                                         # 3. correct
        return _result(variant, samples, seed, torch.where(accepted, drafted, fallback), accepted, p, q)
    drafted = torch.multinomial(q, samples, replacement=True, generator=gen)         # [samples] 1. draft
    u = torch.rand(samples, generator=gen, dtype=torch.float64)                       # [samples]
    accepted = u < (p[drafted] / q[drafted]).clamp(max=1.0)                           # [samples] 2. verify
    if variant == "exact":                                                            # 3. correct
        fallback = torch.multinomial(sampling.residual_distribution(p, q), samples, replacement=True, generator=gen)
    elif variant == "resample-target":
        fallback = torch.multinomial(p, samples, replacement=True, generator=gen)
    else:
        fallback = drafted
    return _result(variant, samples, seed, torch.where(accepted, drafted, fallback), accepted, p, q)


def _result(variant: str, samples: int, seed, out: torch.Tensor, accepted: torch.Tensor, p: torch.Tensor,
            q: torch.Tensor) -> dict:
    counts = torch.bincount(out, minlength=len(p))  # [V]
    frequencies = counts.double() / samples
    return {"variant": variant, "samples": samples, "seed": int(seed), "counts": counts.tolist(),
            "expected": p.tolist(), "frequencies": frequencies.tolist(),
            "p_value": chi_square_pvalue(counts, p), "max_gap": float((frequencies - p).abs().max()),
            "acceptance_rate": float(accepted.double().mean()),
            "expected_acceptance_rate": float(torch.minimum(p, q).sum())}


def mentored(target, draft, kl_budget: float, frontier_points: int = 24) -> dict:
    """Mentored decoding's plan (Tran-Thien 2023) at one budget, tokens ordered by ratio p/q, and the acceptance-vs-KL frontier
    from budget 0 (exact decoding) to the KL at which every draft is accepted."""
    p, q = check_pair(target, draft)
    plan = sampling.mentored_plan(p, q, kl_budget)
    ratio = sampling.safe_divide(p, q, torch.full_like(p, math.inf))
    order = ratio.argsort().tolist()
    full = float(sampling.kl_divergence(p, q))
    top = full if math.isfinite(full) else max(2.0, 2 * kl_budget)
    budgets = [top * i / (frontier_points - 1) for i in range(frontier_points)]
    plans = [sampling.mentored_plan(p, q, b) for b in budgets]
    return {"order": order, "ratio": [ratio[i].item() for i in order], "target": p.tolist(), "draft": q.tolist(),
            "accept_chance": plan.accept_probs.tolist(), "exact_accept_chance": ratio.clamp(max=1.0).tolist(),
            "resample": plan.resample_probs.tolist(), "exact_residual": sampling.residual_distribution(p, q).tolist(),
            "output": plan.output_probs.tolist(), "acceptance_rate": float(plan.acceptance_rate),
            "exact_acceptance_rate": float(torch.minimum(p, q).sum()), "kl": float(plan.kl), "kl_budget": float(kl_budget),
            "lower_threshold": float(plan.lower_threshold), "upper_threshold": float(plan.upper_threshold),
            "frontier": {"kl": [float(x.kl) for x in plans], "acceptance_rate": [float(x.acceptance_rate) for x in plans],
                         "budget": budgets}}
