"""Every knob of a decoding run, validated in one place, and the conventions the UI and CLI share."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .draft_length import GAMMA_MAX_DEFAULT, DraftLengthRule

GAMMA_MIN, GAMMA_MAX = 1, 16          # tokens drafted per step
GAMMA_AUTO = "auto"                   # --gamma auto: a draft length that adapts (core.draft_length)
DRAFTS_MIN, DRAFTS_MAX = 1, 8         # chains drafted per step (core.tree: several drafts at once)
MAX_NEW_TOKENS = 4096
TEMPERATURE_MAX = 100.0
TOP_K_OFF, TOP_P_OFF = 0, 1.0         # the values the UI and CLI use for "no top-k / top-p"
NGRAM_MIN, NGRAM_MAX = 1, 8           # n-gram sizes the lookup may try
LOOKUP_SOURCES = ("context", "prompt")  # where the lookup looks: prompt + generated so far, or the prompt only


def _whole(name: str, value) -> int:
    """value as an int, refusing 2.5, NaN, True and text rather than silently rounding them."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return int(value)


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class DecodeConfig:
    """Every knob of a decoding run. Bad values raise ValueError naming the knob and the range."""
    gamma: int = 4
    temperature: float = 1.0
    top_k: int | None = None      # None: off
    top_p: float | None = None    # None: off
    kl_budget: float = 0.0        # 0: exact speculative sampling; > 0: mentored decoding (lossy)
    max_new_tokens: int = 64
    seed: int = 0
    trace_top_k: int = 10         # bars per figure
    record: bool = True           # build a StepTrace per step (the benchmark's lean loop turns it off)
    drafts: int = 1               # k chains drafted per step and verified as a token tree; 1: the single chain
    drafter: str = "model"        # who proposes: a name in the engine's drafters registry (engine/decoding/drafters.py)
    lookup_max_ngram: int = 3     # the lookup tries n = max..min and takes the first n that matches
    lookup_min_ngram: int = 1
    lookup_source: str = "context"  # "context": prompt and generated so far; "prompt": the prompt only
    gamma_auto: bool = False      # True: gamma is the cap (--gamma-max) and each round stops by `draft_length`
    draft_length: DraftLengthRule | None = None  # gamma_auto's rule, at the pair's measured costs (resolved by the
                                                 # engine's serving.auto_gamma before a decoder is built)

    def __post_init__(self):
        gamma = _whole("gamma", self.gamma)
        if not GAMMA_MIN <= gamma <= GAMMA_MAX:
            raise ValueError(f"gamma must be a whole number in {GAMMA_MIN}..{GAMMA_MAX}, not {self.gamma!r}")
        if not 0 <= _number("temperature", self.temperature) <= TEMPERATURE_MAX:
            raise ValueError(f"temperature must be a number in [0, {TEMPERATURE_MAX:g}], not {self.temperature!r}")
        if self.top_k is not None and _whole("top_k", self.top_k) < 0:
            raise ValueError(f"top_k must be a whole number >= 0 ({TOP_K_OFF} = off), not {self.top_k!r}")
        if self.top_p is not None and not 0 < _number("top_p", self.top_p) <= 1:
            raise ValueError(f"top_p must be in (0, 1] ({TOP_P_OFF:g} = off), not {self.top_p!r}")
        if not 0 <= _number("kl_budget", self.kl_budget) < math.inf:
            raise ValueError(f"kl_budget must be a finite number >= 0, not {self.kl_budget!r}")
        if not 1 <= _whole("max_new_tokens", self.max_new_tokens) <= MAX_NEW_TOKENS:
            raise ValueError(f"max_new_tokens must be a whole number in 1..{MAX_NEW_TOKENS}, not {self.max_new_tokens!r}")
        if not 0 <= _whole("seed", self.seed) < 2**63:
            raise ValueError(f"seed must be a whole number >= 0, not {self.seed!r}")
        if not 1 <= _whole("trace_top_k", self.trace_top_k) <= 50:
            raise ValueError(f"trace_top_k must be in 1..50, not {self.trace_top_k!r}")
        if not DRAFTS_MIN <= _whole("drafts", self.drafts) <= DRAFTS_MAX:
            raise ValueError(f"drafts must be a whole number in {DRAFTS_MIN}..{DRAFTS_MAX}, not {self.drafts!r}")
        if self.drafts > 1 and self.kl_budget > 0:
            # mentored decoding's plan is a one-candidate rule; no tree version is proven here
            raise ValueError(f"drafts > 1 needs kl_budget = 0: several drafts are verified by the exact rule only "
                             f"(got drafts={self.drafts!r}, kl_budget={self.kl_budget!r})")
        self._check_drafting()
        self._check_auto()
        # whole-number floats (4.0 from a slider) become ints, so equal settings compare equal
        for name in ("gamma", "max_new_tokens", "seed", "trace_top_k", "drafts", "lookup_max_ngram",
                     "lookup_min_ngram"):
            object.__setattr__(self, name, int(getattr(self, name)))
        if self.top_k is not None:
            object.__setattr__(self, "top_k", int(self.top_k))

    def _check_drafting(self) -> None:
        # which names exist, and what each drafter can run (several drafts, mentored decoding), is the engine's
        # registry's to say (`drafters.drafter_class`); here only that a name was given
        if not isinstance(self.drafter, str) or not self.drafter:
            raise ValueError(f"drafter must be a drafter's name, not {self.drafter!r}")
        for name in ("lookup_max_ngram", "lookup_min_ngram"):
            if not NGRAM_MIN <= _whole(name, getattr(self, name)) <= NGRAM_MAX:
                raise ValueError(f"{name} must be a whole number in {NGRAM_MIN}..{NGRAM_MAX}, not {getattr(self, name)!r}")
        if self.lookup_min_ngram > self.lookup_max_ngram:
            raise ValueError(f"lookup_min_ngram must be <= lookup_max_ngram (got {self.lookup_min_ngram!r} > "
                             f"{self.lookup_max_ngram!r})")
        if self.lookup_source not in LOOKUP_SOURCES:
            raise ValueError(f"lookup_source must be one of {', '.join(LOOKUP_SOURCES)}, not {self.lookup_source!r}")

    def _check_auto(self) -> None:
        if not isinstance(self.gamma_auto, bool):
            raise ValueError(f"gamma_auto must be true or false, not {self.gamma_auto!r}")
        rule = self.draft_length
        if rule is not None and not isinstance(rule, DraftLengthRule):
            raise ValueError(f"draft_length must be a core.draft_length.DraftLengthRule, not {type(rule).__name__}")
        if rule is not None and not self.gamma_auto:
            raise ValueError("draft_length is gamma auto's rule: set gamma_auto=True with it")
        if self.gamma_auto and self.drafts > 1:
            raise ValueError(f"gamma auto drafts one chain: it needs drafts = 1 (got drafts={self.drafts!r})")
        if rule is not None and rule.gamma_max != self.gamma:
            raise ValueError(f"with gamma auto, gamma is the cap: the rule's gamma_max {rule.gamma_max} must equal "
                             f"gamma {self.gamma!r}")

    @property
    def gamma_shown(self) -> int | str:
        """gamma as the user set it: a number, or "auto" (gamma is then the cap)."""
        return GAMMA_AUTO if self.gamma_auto else self.gamma

    @classmethod
    def from_knobs(cls, *, gamma, temperature, top_k, top_p, kl_budget, max_new_tokens, seed,
                   gamma_max=GAMMA_MAX_DEFAULT, **extra) -> DecodeConfig:
        """From the UI's and CLI's values, where top-k 0 and top-p 1 (or None) mean off, and gamma "auto" drafts
        at most `gamma_max` tokens a round (core.draft_length)."""
        if isinstance(gamma, str) and gamma.strip().lower() == GAMMA_AUTO:
            if not GAMMA_MIN <= _whole("gamma_max", gamma_max) <= GAMMA_MAX:
                raise ValueError(f"gamma_max must be a whole number in {GAMMA_MIN}..{GAMMA_MAX}, not {gamma_max!r}")
            gamma, extra = gamma_max, {**extra, "gamma_auto": True}
        elif isinstance(gamma, str):
            raise ValueError(f"gamma must be a whole number in {GAMMA_MIN}..{GAMMA_MAX} or {GAMMA_AUTO}, not {gamma!r}")
        top_k = None if top_k is None or (not isinstance(top_k, str) and top_k == TOP_K_OFF) else top_k
        top_p = None if top_p is None or (not isinstance(top_p, str) and top_p == TOP_P_OFF) else top_p
        return cls(gamma=gamma, temperature=temperature, top_k=top_k, top_p=top_p, kl_budget=kl_budget,
                   max_new_tokens=max_new_tokens, seed=seed, **extra)

    def warp(self, logits):
        """Logits [..., V] -> the warped probabilities both models sample from."""
        from .warping import warp

        return warp(logits, self.temperature, self.top_k or None, self.top_p)

    @property
    def lossy(self) -> bool:
        """Mentored decoding trades exactness for acceptance: its output is not the target's law."""
        return self.kl_budget > 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0
