"""Where and why a draft is rejected: acceptance of the tested drafts split every way that explains it.

Pure functions over plain records. One record (`TestedDraft`) per drafted token the target tested
(a draft after the first rejection of its step is never tested and is left out, as in Leviathan's
alpha). Every split gives, per group, the tested count n, the accepted count, the rate and its
95% Wilson interval. Findings are named facts computed from the splits (the words that tell them
are in `specviz.present.diagnosis`).

Support rule: a token is listed among the most rejected only when it was tested at least
MIN_SUPPORT times (below that its rate is mostly noise: with n = 4 the Wilson interval of 0/4
is [0, 0.49]).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

MIN_SUPPORT = 5
Z95 = 1.959963984540054
DRAFT_PROB_BINS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)   # q(x) of the drafted token
ENTROPY_BINS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, math.inf)     # H(p) of the target, nats
TOKEN_CLASSES = ("word start", "word continuation", "whitespace/newline", "punctuation", "digits")
# finding thresholds (documented in docs/debugging-acceptance.md, "Why does it reject?")
OVERCONFIDENT_Q, OVERCONFIDENT_P, OVERCONFIDENT_SHARE = 0.5, 0.1, 0.3
SHARP_RATIO, FLAT_RATIO = 0.6, 1.6       # mean H(q) / mean H(p) beyond these: a temperature mismatch
AGREEMENT_LOW = 0.5                       # argmax(q) == argmax(p) on fewer tested drafts than this
# silent misconfigurations (each planted in tests/tools/test_diagnosis_defects.py)
GREEDY_ENTROPY = 0.01      # nats: a draft this sure everywhere samples greedily (one-hot q)
SAMPLING_ENTROPY = 0.3     # nats: ... while the target's mean entropy says it samples at T > 0
NOT_DRAFTING_RATE = 0.2    # alpha below this: acceptance length below about 1.25, the draft is not working
MISMATCH_AGREEMENT = 0.05  # argmax agreement below this with a confident draft: ids mean other tokens
MIN_TESTED_FOR_DEFECT = 20


@dataclass(frozen=True)
class TestedDraft:
    """One drafted token the target tested."""
    prompt_index: int
    position: int            # drafted position in its step, 1-based
    text: str                # the token's text
    token_class: str         # one of TOKEN_CLASSES
    accepted: bool
    draft_prob: float        # q(x)
    target_prob: float       # p(x)
    target_entropy: float    # H(p), nats
    draft_entropy: float     # H(q), nats
    argmax_agrees: bool      # the draft's most likely token is the target's


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion k/n ((0, 1) when n = 0)."""
    if n == 0:
        return 0.0, 1.0
    phat = k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def token_class(text: str, before: str) -> str:
    """The class of a token given the character before it ('' at the start)."""
    core = text.strip()
    if not core:
        return "whitespace/newline"
    if core.isdigit():
        return "digits"
    if not any(ch.isalnum() for ch in core):
        return "punctuation"
    if text[0].isspace() or not before or not before[-1].isalnum():
        return "word start"
    return "word continuation"


def tested_drafts(traces: Iterable, prompt_index: int = 0) -> list[TestedDraft]:
    """The tested drafts of one run's StepTraces (in order), with the text before each for its class."""
    out, text = [], ""
    for tr in traces:
        for p in tr.positions:
            if p.uniform is None:
                continue
            before = text + "".join(e.text for e in tr.emitted[: p.index])
            top_p = max(p.candidates, key=lambda c: c.target_prob).id if p.candidates else None
            top_q = max(p.candidates, key=lambda c: c.draft_prob).id if p.candidates else None
            out.append(TestedDraft(prompt_index=prompt_index, position=p.index + 1, text=p.draft_text,
                                   token_class=token_class(p.draft_text, before), accepted=p.verdict == "accepted",
                                   draft_prob=p.draft_prob, target_prob=p.target_prob,
                                   target_entropy=p.target_entropy, draft_entropy=p.draft_entropy,
                                   argmax_agrees=top_p == top_q))
        text += "".join(e.text for e in tr.emitted)
    return out


def _group(rows: Sequence[TestedDraft], key: Callable, order: Sequence | None = None) -> list[dict]:
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r.accepted)
    keys = [k for k in order if k in groups] if order is not None else sorted(groups)
    out = []
    for k in keys:
        n, acc = len(groups[k]), sum(groups[k])
        low, high = wilson(acc, n)
        out.append({"group": k, "n": n, "accepted": acc, "rate": acc / n, "ci_low": low, "ci_high": high})
    return out


def _bin_label(edges: Sequence[float], value: float) -> str:
    for low, high in zip(edges, edges[1:]):
        if value < high or high == edges[-1]:
            return f"{low:g}–{high:g}" if math.isfinite(high) else f"≥ {low:g}"
    return f"≥ {edges[-2]:g}"


def _bin_labels(edges: Sequence[float]) -> list[str]:
    return [f"{a:g}–{b:g}" if math.isfinite(b) else f"≥ {a:g}" for a, b in zip(edges, edges[1:])]


def most_rejected(rows: Sequence[TestedDraft], min_support: int = MIN_SUPPORT, top: int = 10) -> list[dict]:
    """Tokens tested at least `min_support` times, most rejections first (then the higher rate):
    token, tested n, rejected, rejection rate and its Wilson interval."""
    groups = _group(rows, lambda r: r.text)
    ranked = [{"token": g["group"], "n": g["n"], "rejected": g["n"] - g["accepted"],
               "rejection_rate": 1 - g["rate"], "ci_low": 1 - g["ci_high"], "ci_high": 1 - g["ci_low"]}
              for g in groups if g["n"] >= min_support and g["accepted"] < g["n"]]
    ranked.sort(key=lambda g: (-g["rejected"], -g["rejection_rate"], g["token"]))
    return ranked[:top]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def findings(rows: Sequence[TestedDraft]) -> dict:
    """The named facts a diagnosis is made of."""
    rejected = [r for r in rows if not r.accepted]
    confident_misses = [r for r in rejected if r.draft_prob > OVERCONFIDENT_Q and r.target_prob < OVERCONFIDENT_P]
    h_p, h_q = _mean([r.target_entropy for r in rows]), _mean([r.draft_entropy for r in rows])
    ratio = h_q / h_p if h_p > 0 else None
    agreement = _mean([float(r.argmax_agrees) for r in rows])
    share = len(confident_misses) / len(rejected) if rejected else 0.0
    out = {
        "tested": len(rows), "rejected": len(rejected),
        "acceptance_rate": _mean([float(r.accepted) for r in rows]),
        "overconfident_share": share,           # rejections with q > 0.5 where p < 0.1
        "mean_target_entropy": h_p, "mean_draft_entropy": h_q, "entropy_ratio": ratio,
        "argmax_agreement": agreement,
        "overconfident": bool(rejected) and share >= OVERCONFIDENT_SHARE,
        "draft_sharper": ratio is not None and ratio < SHARP_RATIO,
        "draft_flatter": ratio is not None and ratio > FLAT_RATIO,
        "disagrees": bool(rows) and agreement < AGREEMENT_LOW,
    }
    # a temperature mismatch: the entropies are off while the top choices still agree
    out["temperature_mismatch"] = (out["draft_sharper"] or out["draft_flatter"]) and not out["disagrees"]
    out.update(misconfigurations(rows, out))
    return out


def misconfigurations(rows: Sequence[TestedDraft], f: dict) -> dict:
    """Settings errors that show only as numbers: NaN probabilities, all-or-nothing acceptance, a greedy
    draft beside a sampling target, acceptance length about 1, token ids that mean other tokens."""
    finite = [r for r in rows if math.isfinite(r.draft_prob) and math.isfinite(r.target_prob)]
    enough = len(rows) >= MIN_TESTED_FOR_DEFECT
    h_p, h_q = f["mean_target_entropy"], f["mean_draft_entropy"]
    return {
        "non_finite_probabilities": len(rows) - len(finite),
        # every draft accepted (or none) although the target is unsure: the accept test is not testing
        "all_or_nothing": enough and h_p > SAMPLING_ENTROPY and f["acceptance_rate"] in (0.0, 1.0),
        "greedy_draft": enough and h_q < GREEDY_ENTROPY and h_p > SAMPLING_ENTROPY,
        "not_drafting": enough and f["acceptance_rate"] < NOT_DRAFTING_RATE,
        # a draft as sure as the target (not flat like an untrained head) that almost never agrees with it
        "ids_mismatch": enough and f["argmax_agreement"] < MISMATCH_AGREEMENT and not f["draft_flatter"]
                        and h_q >= GREEDY_ENTROPY,
    }


def analyse(rows: Sequence[TestedDraft], min_support: int = MIN_SUPPORT) -> dict:
    """Every split of the tested drafts, the most rejected tokens and the findings (plain JSON data)."""
    return {
        "tested": len(rows),
        "min_support": min_support,
        "by_position": _group(rows, lambda r: r.position),
        "by_draft_prob": _group(rows, lambda r: _bin_label(DRAFT_PROB_BINS, r.draft_prob), _bin_labels(DRAFT_PROB_BINS)),
        "by_target_entropy": _group(rows, lambda r: _bin_label(ENTROPY_BINS, r.target_entropy), _bin_labels(ENTROPY_BINS)),
        "by_token_class": _group(rows, lambda r: r.token_class, TOKEN_CLASSES),
        "by_prompt": _group(rows, lambda r: r.prompt_index),
        "most_rejected": most_rejected(rows, min_support),
        "findings": findings(rows),
    }


def as_dicts(rows: Sequence[TestedDraft]) -> list[dict]:
    return [asdict(r) for r in rows]
