"""Predict mode's answer key: the questions a round asks before each of its decisions, and their right answers,
computed from the round's trace alone (never typed by hand).

The decisions are Leviathan et al.'s Algorithm 1 ("Fast Inference from Transformers via Speculative Decoding",
ICML 2023), in its order: before the target pass, how many tokens it will yield (1 … γ + 1); at each tested draft,
its chance of being kept (min(1, p/q); p(x) where q is one-hot, as prompt lookup's copy; 1 or 0 at T = 0, where u
decides nothing; mentored decoding's planned chance under a KL budget), then, once u is drawn, kept or rejected;
at the correction, where the next token comes from (the residual norm(max(0, p - q)), p at the next position as a
bonus, mentored decoding's s, the target's argmax at T = 0). Several drafts (a token tree) ask which candidate
survives at the first depth. Each question names the part of the step card it precedes: the page hides that
part until the question is answered or passed over.

Choices are shuffled per question by a generator seeded from the round (its step, tokens and the question), so
a replayed round asks in the same order and the right answer is not in a fixed place.
"""
from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from .notation import num
from .trace import StepTrace

MAX_CHOICES = 4   # keys 1-4 answer


@dataclass(frozen=True)
class Choice:
    """One answer offered: what it stands for (`key`), the number it shows (chance questions) or a token's text."""
    key: str
    value: float | None = None
    text: str = ""


@dataclass(frozen=True)
class Question:
    """One decision asked before the card shows it."""
    kind: str                    # "yield" | "chance" | "kept" | "source" | "depth" (lessons add "myth")
    position: int                # the drafted position asked about (0-based); -1: the round as a whole
    choices: tuple[Choice, ...]  # in the order shown
    right: int                   # index of the right choice
    before: str                  # the card part it precedes (`card_parts`): hidden until answered or passed
    reveals: bool = True         # answering shows `before`; False: the answer is seen later (the yield, at the end)
    topic: str = ""              # what a question not about the round is about (a lesson's misconception)

    @property
    def answer(self) -> Choice:
        return self.choices[self.right]


def mode(trace: StepTrace) -> str:
    """Which rule decides the round: "tree" (several drafts), "greedy" (T = 0), "mentored" (a KL budget),
    "lookup" (q one-hot: a copied draft) or "exact"."""
    if trace.tree is not None:
        return "tree"
    if trace.greedy:
        return "greedy"
    if trace.kl_budget > 0:
        return "mentored"
    return "lookup" if trace.source.kind == "lookup" else "exact"


def examined(trace: StepTrace) -> list:
    """The drafted positions the target tested (u drawn): up to and including the first rejection."""
    return [p for p in trace.positions if p.uniform is not None]


def card_parts(trace: StepTrace) -> list[str]:
    """The step card's parts in reading order, as the page reveals them; "end" is the round's outcome (the token
    count, the summary, the text's new tokens, the counters)."""
    if trace.tree is not None:
        return ["draft", "verify", "correct", "end"]
    parts = ["draft"]
    if trace.positions:
        parts.append("verify")
        for p in examined(trace):
            i = p.index
            parts += [f"row{i}", f"row{i}.test"] if trace.greedy else [f"row{i}", f"row{i}.ratio", f"row{i}.test"]
        if len(examined(trace)) < len(trace.positions):
            parts.append("skipped")
    return [*parts, "correct", "end"]


def _rng(trace: StepTrace, kind: str, position: int) -> random.Random:
    """A generator seeded from the round and the question (zlib.crc32, stable across processes)."""
    drafted = ",".join(str(p.draft_token) for p in trace.positions)
    seed = zlib.crc32(f"{trace.step}|{drafted}|{trace.correction.token}|{kind}|{position}".encode())
    return random.Random(seed)


def _shuffled(rng: random.Random, right: Choice, others: list[Choice]) -> tuple[tuple[Choice, ...], int]:
    choices = [right, *others][:MAX_CHOICES]
    rng.shuffle(choices)
    return tuple(choices), choices.index(right)


def _distinct(right: Choice, candidates: list[Choice]) -> list[Choice]:
    """The candidates whose printed number differs from the right one's and from each other's."""
    seen, kept = {num(right.value)}, []
    for c in candidates:
        if num(c.value) not in seen:
            seen.add(num(c.value))
            kept.append(c)
    return kept


def yield_question(trace: StepTrace) -> Question | None:
    """How many tokens this target pass yields: the kept drafts and the one correction (fewer where an EOS or the
    token limit cut the round). Four of 1 … γ + 1, in increasing order; answered at the round's end."""
    most = (trace.gamma if trace.tree is not None else len(trace.positions)) + 1
    n = len(trace.emitted)
    if most < 2 or not 1 <= n <= most:
        return None
    rng = _rng(trace, "yield", -1)
    shown = sorted([n, *rng.sample([k for k in range(1, most + 1) if k != n], min(MAX_CHOICES, most) - 1)])
    choices = tuple(Choice(f"n{k}", float(k)) for k in shown)
    return Question("yield", -1, choices, shown.index(n), "verify", reveals=False)


def chance_question(trace: StepTrace, pos) -> Question:
    """A tested draft's chance of being kept, from its q(x) and p(x): min(1, p/q) (p(x) where q is one-hot),
    mentored decoding's planned chance under a KL budget, 1 or 0 at T = 0."""
    rng, i = _rng(trace, "chance", pos.index), pos.index
    if trace.greedy:  # one-hot p and q: the chance is 1 (x is the target's argmax) or 0, whatever u is
        right = Choice("one", 1.0) if pos.accept_prob >= 0.5 else Choice("zero", 0.0)
        others = [c for c in (Choice("one", 1.0), Choice("zero", 0.0)) if c.key != right.key] + [Choice("depends")]
        choices, at = _shuffled(rng, right, others)
        return Question("chance", i, choices, at, f"row{i}.test")
    p, q = pos.target_prob, pos.draft_prob
    ratio = p / q if q > 0 else float("inf")
    right = Choice("mentored" if trace.kl_budget > 0 else "min", pos.accept_prob)
    candidates = [Choice("exact", pos.exact_accept_prob)] if trace.kl_budget > 0 else []
    candidates += [Choice("ratio", ratio), Choice("p", p), Choice("q", q), Choice("one", 1.0),
                   Choice("rest", 1 - pos.accept_prob), Choice("inverse", min(1.0, q / p) if p > 0 else 1.0),
                   Choice("product", p * q)]
    choices, at = _shuffled(rng, right, _distinct(right, candidates)[: MAX_CHOICES - 1])
    return Question("chance", i, choices, at, f"row{i}.ratio")


def kept_question(trace: StepTrace, pos) -> Question:
    """Once u is drawn: kept or rejected (u below the accept chance keeps it)."""
    right = Choice("kept") if pos.verdict == "accepted" else Choice("rejected")
    other = Choice("rejected") if right.key == "kept" else Choice("kept")
    choices, at = _shuffled(_rng(trace, "kept", pos.index), right, [other])
    return Question("kept", pos.index, choices, at, f"row{pos.index}.test")


SOURCES = {  # the choices offered for the correction, by rule: the right one is picked from the trace
    "exact": ("residual", "bonus", "q", "argmax"),
    "lookup": ("residual", "bonus", "q", "argmax"),
    "tree": ("residual", "bonus", "q", "argmax"),
    "mentored": ("mentored", "residual", "bonus", "q"),
    "greedy": ("argmax", "draft", "sample", "nothing"),
}


def source_question(trace: StepTrace) -> Question:
    """Where the round's last token comes from: the target's argmax at T = 0; p at the next position (a bonus)
    when every draft was kept or nothing was proposed; else the residual norm(max(0, p - q)), or mentored
    decoding's s under a KL budget."""
    rule = "greedy" if trace.greedy else mode(trace)  # a tree at T = 0 too: its residuals are the argmax
    right = ("argmax" if rule == "greedy" else "bonus" if trace.correction.kind == "bonus"
             else "mentored" if rule == "mentored" else "residual")
    keys = SOURCES[rule]
    choices, at = _shuffled(_rng(trace, "source", -1), Choice(right), [Choice(k) for k in keys if k != right])
    return Question("source", -1, choices, at, "correct")


def depth_question(trace: StepTrace) -> Question:
    """Several drafts: which candidate is kept at the first depth (each tried in a random order against p, then
    against the residual after each rejection), or none, when the token comes from the last residual."""
    tree = trace.tree
    kept = tree.nodes[tree.path[0]] if tree.path else None
    first = [n for n in tree.nodes if n.depth == 0]
    rng = _rng(trace, "depth", 0)
    others = [n for n in first if kept is None or n.id != kept.id]
    rng.shuffle(others)
    nodes = ([kept] if kept else []) + others
    offered = [Choice(f"node{n.id}", text=n.text) for n in nodes[: MAX_CHOICES - 1]]
    right = offered[0] if kept else Choice("none")
    rest = [c for c in [*offered, Choice("none")] if c.key != right.key]
    choices, at = _shuffled(rng, right, rest)
    return Question("depth", 0, choices, at, "verify")


def questions(trace: StepTrace) -> list[Question]:
    """Every question of the round, in the order the card reaches its decisions."""
    asked = [q for q in [yield_question(trace)] if q is not None]
    if trace.tree is not None:
        return [*asked, depth_question(trace), source_question(trace)]
    for pos in examined(trace):
        asked.append(chance_question(trace, pos))
        if not trace.greedy:  # at T = 0 the chance (1 or 0) already decides: u plays no part
            asked.append(kept_question(trace, pos))
    return [*asked, source_question(trace)]
