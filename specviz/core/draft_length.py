"""How many tokens to draft: `--gamma auto` stops drafting when the draft's own side says the next one is unlikely
to be kept and drafting on would not pay at the pair's measured costs.

After the k-th drafted token the rule knows only what the draft did: each drafted token's *confidence* s_i, the
draft's probability of the token it drew (at T = 0, where the draft takes its argmax, the top-1 probability of
its unwarped softmax, as llama.cpp's `p_min`). A table measured on the pair turns a confidence into the chance
the target keeps such a token, a_i = keep(s_i) (SpecDec++'s acceptance prediction, Huang, Guo and Wang,
"SpecDec++: Boosting Speculative Decoding via Adaptive Candidate Lengths", 2024, as a table instead of a trained
head). Then, with P_k = a_1 ... a_k the predicted chance every drafted token so far is kept, E = 1 + P_1 + ... +
P_k the round's expected tokens and C = k c + V(k + 1) its cost in one-token target passes (c a draft forward,
V(n) a target pass over n positions: `core.verify_cost`), drafting on to n > k tokens, each further token kept
with chance a (the table's mean: what a token of this draft is kept with before its confidence is known), adds
G = P_k (a + ... + a^(n-k)) tokens for D = (n - k) c + V(n + 1) - V(k + 1). It raises the round's tokens per unit
of time when (E + G) / (C + D) > E / C, that is when

    P_k > tau_k = min over n of  E D / (C (a + ... + a^(n-k)))

SpecDec++'s threshold policy (stop when the predicted chance of a rejection passes a threshold), with the
threshold set by the costs rather than tuned.

Exactness. The k-th token is always proposed, whatever its confidence; the rule only decides whether a (k+1)-th
is drafted, from the first k tokens and the draft's own probabilities, never from the target's p or the round's
uniforms. So each proposed token is still drawn from q given everything before it, and Leviathan, Kalman and
Matias's proof (Appendix A.1) holds position by position: the output law is the target's. (A rule that dropped
the doubtful token itself, after seeing it, would condition the token it proposes on its own value and bias the
output; so would one that read the target's p.)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .verify_cost import check_verify_costs, non_decreasing, verify_cost_at

KEEP_BINS = 10          # confidence bins of a keep table: [0, 0.1), [0.1, 0.2), ..., [0.9, 1]
MIN_BIN_SAMPLES = 8     # a bin with fewer measured tokens takes its neighbours' chance (the fit pools it)
GAMMA_MAX_DEFAULT = 8   # --gamma-max: the most tokens `auto` drafts in a round


def _bin(confidence: float, bins: int) -> int:
    return min(max(int(confidence * bins), 0), bins - 1)


@dataclass(frozen=True)
class KeepTable:
    """The chance the target keeps a drafted token, by the draft's confidence in it (bin i: [i/B, (i+1)/B)),
    non-decreasing in the confidence. `tokens`: how many measured drafted tokens it was fitted on; `mean`: their
    mean keep chance (what a drafted token of this source is kept with, before its confidence is known)."""
    chances: tuple[float, ...]
    tokens: int = 0
    mean: float | None = None

    def __post_init__(self):
        if not self.chances or not all(isinstance(a, (int, float)) and 0 <= a <= 1 for a in self.chances):
            raise ValueError(f"a keep table holds chances in [0, 1], one a confidence bin, not {self.chances!r}")

    def chance(self, confidence: float) -> float:
        return float(self.chances[_bin(confidence, len(self.chances))])

    @property
    def prior(self) -> float:
        """The keep chance of a token of this source before its confidence is known (the mean measured)."""
        return self.mean if self.mean is not None else sum(self.chances) / len(self.chances)


def fit_keep_table(confidences: Sequence[float], accept_chances: Sequence[float], bins: int = KEEP_BINS,
                   prior: float = 0.5) -> KeepTable:
    """The keep table of measured drafted tokens: each token's confidence and its exact accept chance
    min(1, p/q) (the mean of a verdict, without its coin's noise). Bin means made non-decreasing (a more confident
    draft is not predicted to be kept less), each bin weighted by its tokens, a bin with fewer than
    MIN_BIN_SAMPLES pooled with its neighbours; no tokens at all: `prior` everywhere."""
    if len(confidences) != len(accept_chances):
        raise ValueError("one accept chance per confidence")
    sums, counts = [0.0] * bins, [0] * bins
    for s, a in zip(confidences, accept_chances):
        b = _bin(float(s), bins)
        sums[b] += float(a)
        counts[b] += 1
    if not any(counts):
        return KeepTable(tuple([prior] * bins), 0, prior)
    mean = round(sum(sums) / sum(counts), 6)
    # a sparse bin's mean is noise: it joins the bin below (or above, for the first) before the fit
    means, weights = [], []
    for b in range(bins):
        means.append(sums[b] / counts[b] if counts[b] else 0.0)
        weights.append(counts[b] if counts[b] >= MIN_BIN_SAMPLES else 0.0)
    if not any(weights):  # every bin sparse: one pooled chance
        return KeepTable(tuple([mean] * bins), sum(counts), mean)
    fitted = non_decreasing(means, weights)
    first = next(a for a in fitted if not math.isnan(a))
    return KeepTable(tuple(round(first if math.isnan(a) else a, 6) for a in fitted), sum(counts), mean)


@dataclass(frozen=True)
class DraftStop:
    """Why a round drafted as many tokens as it did (the trace's record; plain data).

    reason: "doubt" (the rule stopped: survival <= needed), "cap" (gamma_max reached), "copy" (a copying
    drafter had no more to copy), "none" (nothing to propose)."""
    drafted: int
    reason: str
    gamma_max: int
    source: str = "model"                                   # whose keep table: "model" or "lookup"
    confidences: list[float] = field(default_factory=list)  # s_i of each drafted token
    keep: list[float] = field(default_factory=list)         # a_i = keep(s_i)
    survival: float = 1.0                                   # P_k after the last drafted token
    needed: float | None = None                             # tau_k at the stop (None: the rule did not decide)


@dataclass(frozen=True)
class DraftLengthRule:
    """`--gamma auto`: draft at most gamma_max tokens, and stop after k when P_k <= tau_k (the module's rule).

    verify_costs: [V(1) = 1, V(2), ...] (the pair's measured curve as `core.verify_cost.straightened` reads it,
    extrapolated past it);
    draft_cost: c, one draft forward over one target forward; keep: a keep table per drafter source ("model",
    "lookup"), as (source, table) pairs."""
    gamma_max: int
    draft_cost: float
    verify_costs: tuple[float, ...]
    keep: tuple[tuple[str, KeepTable], ...]

    def __post_init__(self):
        if isinstance(self.gamma_max, bool) or not isinstance(self.gamma_max, int) or self.gamma_max < 1:
            raise ValueError(f"gamma_max must be a whole number >= 1, not {self.gamma_max!r}")  # its range: config's
        if not (isinstance(self.draft_cost, (int, float)) and math.isfinite(self.draft_cost) and self.draft_cost >= 0):
            raise ValueError(f"draft_cost must be a number >= 0 (c: a draft forward over a target forward), "
                             f"not {self.draft_cost!r}")
        object.__setattr__(self, "verify_costs", tuple(check_verify_costs(self.verify_costs)))
        if not self.keep or not all(isinstance(t, KeepTable) for _, t in self.keep):
            raise ValueError("a draft length rule needs a keep table for at least one drafter source")

    @classmethod
    def drafting_on(cls, gamma_max: int) -> DraftLengthRule:
        """The rule at zero costs: every token pays, so it never stops before gamma_max (what a run that
        measures a keep table drafts with: every confidence recorded, every length drafted)."""
        return cls(gamma_max, 0.0, (1.0, 1.0), (("model", KeepTable((1.0,))), ("lookup", KeepTable((1.0,)))))

    def table(self, source: str) -> KeepTable:
        tables = dict(self.keep)
        return tables.get(source) or next(iter(tables.values()))

    def cost(self, k: int, draft_cost: float | None = None) -> float:
        """C(k) = k c + V(k + 1): a round of k drafts, in one-token target passes (`draft_cost`: c, the rule's own
        where None; 0 for a drafter that runs no model, such as prompt lookup)."""
        c = self.draft_cost if draft_cost is None else draft_cost
        return k * c + verify_cost_at(self.verify_costs, k + 1)

    def needed(self, keep: Sequence[float], prior: float, draft_cost: float | None = None) -> float:
        """tau_k after k = len(keep) drafted tokens kept with chances `keep`, further ones with chance `prior` (the
        module's formula, each drafted token costing `draft_cost`, c where None): the least survival P_k at which
        drafting on raises the round's expected tokens per unit of time (inf: never)."""
        k, a = len(keep), prior
        survival, expected = 1.0, 1.0
        for chance in keep:
            survival *= chance
            expected += survival
        if a <= 0:
            return math.inf
        cost_k, best, gain = self.cost(k, draft_cost), math.inf, 0.0
        for n in range(k + 1, self.gamma_max + 1):
            gain += a ** (n - k)
            extra = self.cost(n, draft_cost) - cost_k
            best = min(best, expected * extra / (cost_k * gain))
        return best

    def start(self, source: str = "model", runs_a_model: bool = True) -> Stopper:
        """The rule's state for one round of drafter `source` (`runs_a_model` False: its tokens cost no draft
        forward, as a copy from the context: c = 0 in the round's costs)."""
        return Stopper(self, self.table(source), source, self.draft_cost if runs_a_model else 0.0)


class Stopper:
    """One round's drafting under a rule: `go_on(confidence)` after each drafted token says whether to draft
    another; `record(reason)` is the round's DraftStop."""

    def __init__(self, rule: DraftLengthRule, table: KeepTable, source: str, draft_cost: float):
        self.rule, self.table, self.source, self.draft_cost = rule, table, source, draft_cost
        self.confidences: list[float] = []
        self.keep: list[float] = []
        self.survival = 1.0
        self.last_needed: float | None = None

    def go_on(self, confidence: float, chance: float | None = None, ahead: float | None = None) -> bool:
        """The drafted token's confidence is in: True to draft another (never past gamma_max). `chance`: its keep
        chance where the drafter knows better than the table (None: the table's, by the confidence); `ahead`: the
        keep chance of each further token (None: the table's prior)."""
        chance = self.table.chance(confidence) if chance is None else float(chance)
        self.confidences.append(round(float(confidence), 6))
        self.keep.append(round(chance, 6))
        self.survival *= chance
        if len(self.keep) >= self.rule.gamma_max:
            return False
        self.last_needed = self.rule.needed(self.keep, self.table.prior if ahead is None else ahead, self.draft_cost)
        return self.survival > self.last_needed

    def record(self, reason: str | None = None) -> DraftStop:
        """The round's stop: `reason`, or what the rule's last decision says."""
        drafted = len(self.keep)
        if reason is None:
            reason = "cap" if drafted >= self.rule.gamma_max else "doubt" if drafted else "none"
        needed = self.last_needed if reason == "doubt" else None
        return DraftStop(drafted=drafted, reason=reason, gamma_max=self.rule.gamma_max, source=self.source,
                         confidences=list(self.confidences), keep=list(self.keep), survival=round(self.survival, 6),
                         needed=None if needed is None or math.isinf(needed) else round(needed, 6))
