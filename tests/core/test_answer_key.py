"""Predict mode's answer key against the round's own numbers, over many seeded rounds of `sampling.verify`.

The rounds are drawn by the real verify rule on random p and q (8 tokens, γ 1-6): exact at T = 1, one-hot at T = 0,
mentored under a KL budget, a one-hot q (prompt lookup's copy). The oracle here shares no code with the key: it
recomputes min(1, p/q) from p(x) and q(x), the test u < chance from u, the argmax from the candidates, the bonus
from the count of kept drafts, the mentored chance from `mentored_plan` on the round's own distributions.
"""
from __future__ import annotations

import copy

import pytest
import torch

from specviz.core import answer_key
from specviz.core.mentored import mentored_plan
from specviz.core.notation import num
from specviz.core.sampling import verify
from specviz.core.trace import Candidate, Correction, Counters, DraftSource, EmittedToken, PositionTrace, StepTrace

VOCAB = 8
MODES = ("exact", "greedy", "mentored", "lookup")
ROUNDS = 80        # per mode: 320 rounds, about 1,800 questions


def _distribution(g: torch.Generator, rows: int, one_hot: bool) -> torch.Tensor:
    """[rows, VOCAB]: a spread of confident and flat rows, or one-hot rows (T = 0)."""
    x = torch.rand(rows, VOCAB, generator=g, dtype=torch.float64) ** 4
    if one_hot:
        return torch.nn.functional.one_hot(x.argmax(-1), VOCAB).double()
    return x / x.sum(-1, keepdim=True)


def synthetic_round(seed: int, mode: str) -> tuple[StepTrace, torch.Tensor, torch.Tensor]:
    """A round of verify on random distributions, as a StepTrace the way the engine lays one out (and p, q)."""
    g = torch.Generator().manual_seed(seed)
    gamma = 1 + seed % 6
    greedy, budget = mode == "greedy", (0.3 if mode == "mentored" else 0.0)
    p = _distribution(g, gamma + 1, greedy)
    q = _distribution(g, gamma, greedy)
    tokens = torch.multinomial(q, 1, generator=g).squeeze(-1)
    if mode == "lookup":  # a copied draft: q is one-hot on the token
        q = torch.nn.functional.one_hot(tokens, VOCAB).double()
    v = verify(p, q, tokens, kl_budget=budget, generator=g)
    positions = []
    for i, tok in enumerate(tokens.tolist()):
        order = sorted(range(VOCAB), key=lambda j: -float(p[i, j]))
        verdict = "accepted" if i < v.n_accepted else "rejected" if i < v.n_examined else "unexamined"
        positions.append(PositionTrace(
            index=i, draft_token=tok, draft_text=f"t{tok}", draft_prob=float(q[i, tok]), target_prob=float(p[i, tok]),
            accept_prob=float(v.drafted_accept_probs[i]), exact_accept_prob=min(1.0, float(p[i, tok] / q[i, tok])),
            uniform=float(v.uniforms[i]) if i < v.n_examined else None, verdict=verdict,
            candidates=[Candidate(j, f"t{j}", float(p[i, j]), float(q[i, j])) for j in order],
            target_other=0.0, draft_other=0.0, tv=0.0, kl=0.0, overlap=0.0))
    kind = "bonus" if v.bonus else "resampled"
    last = v.tokens[-1]
    emitted = [EmittedToken(t, f"t{t}", "accepted", 1) for t in v.tokens[:-1]] + [EmittedToken(last, f"t{last}", kind, 1)]
    trace = StepTrace(step=1 + seed % 5, gamma=gamma, kl_budget=budget, positions=positions, n_accepted=v.n_accepted,
                      correction=Correction(kind, v.n_accepted, last, f"t{last}", [], 0.0), emitted=emitted,
                      draft_ms=0.0, target_ms=0.0, verify_ms=0.0, counters=Counters(), temperature=0.0 if greedy else 1.0,
                      source=DraftSource("lookup" if mode == "lookup" else "model"))
    return trace, p, q


@pytest.fixture(scope="module")
def rounds() -> list[tuple[str, StepTrace, torch.Tensor, torch.Tensor]]:
    return [(mode, *synthetic_round(1000 * k + seed, mode)) for k, mode in enumerate(MODES) for seed in range(ROUNDS)]


def expected_chance(mode: str, pos, planned: torch.Tensor | None) -> float:
    """The accept chance by the rule, from the round's numbers (`planned`: mentored decoding's [gamma, V] chances)."""
    if mode == "greedy":
        return 1.0 if pos.candidates[0].id == pos.draft_token else 0.0   # argmax agreement
    if mode == "mentored":
        return float(planned[pos.index, pos.draft_token])
    return min(1.0, pos.target_prob / pos.draft_prob)


def expected_source(mode: str, trace: StepTrace) -> str:
    if mode == "greedy":
        return "argmax"
    kept = sum(p.verdict == "accepted" for p in trace.positions)
    if kept == len(trace.positions):
        return "bonus"
    return "mentored" if mode == "mentored" else "residual"


def check_key(mode: str, trace: StepTrace, p: torch.Tensor, q: torch.Tensor) -> None:
    """Every question of the round has the right answer the round's numbers give."""
    asked = answer_key.questions(trace)
    parts = answer_key.card_parts(trace)
    planned = mentored_plan(p[: trace.gamma], q, trace.kl_budget).accept_probs if mode == "mentored" else None
    for question in asked:
        assert question.before in parts and 2 <= len(question.choices) <= 4
        answer = question.answer
        if question.kind == "yield":
            assert answer.value == len(trace.emitted) == trace.n_accepted + 1
            assert all(1 <= c.value <= trace.gamma + 1 for c in question.choices)
        elif question.kind == "chance":
            pos = trace.positions[question.position]
            assert pos.uniform is not None, "only tested drafts are asked about"
            assert answer.value == pytest.approx(expected_chance(mode, pos, planned), abs=1e-6)
            shown = [num(c.value) for c in question.choices if c.value is not None]
            assert shown.count(num(answer.value)) == 1, "the right number is printed once"
        elif question.kind == "kept":
            pos = trace.positions[question.position]
            kept = pos.uniform < expected_chance(mode, pos, planned)
            assert answer.key == ("kept" if kept else "rejected")
        else:
            assert question.kind == "source" and answer.key == expected_source(mode, trace)
    tested = sum(p.uniform is not None for p in trace.positions)
    assert [q.kind for q in asked].count("chance") == tested
    assert [q.kind for q in asked].count("kept") == (0 if mode == "greedy" else tested)


def test_the_key_agrees_with_the_rounds_numbers(rounds):
    """320 seeded rounds, four rules: every chance within 1e-6 of the rule's, every verdict and source as the
    round's numbers decide."""
    for mode, trace, p, q in rounds:
        check_key(mode, trace, p, q)


def test_a_planted_wrong_key_fails_the_check(rounds, monkeypatch):
    """The check catches a key that answers the bonus as the residual."""
    right = answer_key.source_question

    def bonus_as_residual(trace):
        q = right(trace)
        if q.answer.key == "bonus":
            keys = [c.key for c in q.choices]
            return answer_key.Question(q.kind, q.position, q.choices, keys.index("residual"), q.before)
        return q

    monkeypatch.setattr(answer_key, "source_question", bonus_as_residual)
    with pytest.raises(AssertionError):
        for mode, trace, p, q in rounds:
            check_key(mode, trace, p, q)


def test_the_right_answer_is_not_in_a_fixed_place(rounds):
    places: dict[tuple, set] = {}
    for _, trace, _, _ in rounds:
        for q in answer_key.questions(trace):
            if q.kind != "yield":  # numbers in increasing order: the right one's place follows its value
                places.setdefault((q.kind, len(q.choices)), set()).add(q.right)
    for (kind, n), seen in places.items():
        assert seen == set(range(n)), (kind, n, seen)


def test_a_replayed_round_asks_in_the_same_order(rounds):
    for _, trace, _, _ in rounds[::7]:
        again = StepTrace.from_dict(copy.deepcopy(trace.to_dict()))
        assert answer_key.questions(again) == answer_key.questions(trace)


def test_the_yield_is_settled_by_the_token_count_where_the_round_was_cut():
    """An EOS or the token limit can cut a round: the yield asked is what it added."""
    trace, _, _ = synthetic_round(3, "exact")
    trace.emitted = trace.emitted[:1]
    assert answer_key.yield_question(trace).answer.value == 1


def test_parts_follow_the_card_and_each_question_names_one():
    trace, _, _ = synthetic_round(5, "exact")   # gamma 6
    parts = answer_key.card_parts(trace)
    assert parts[0] == "draft" and parts[-2:] == ["correct", "end"]
    assert ("skipped" in parts) == (trace.n_accepted + 1 < trace.gamma)
    assert [q.before for q in answer_key.questions(trace)][:3] == ["verify", "row0.ratio", "row0.test"]
