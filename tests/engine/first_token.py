"""The exactness checks the engine test files share: the first emitted token (and the first two) against the target's law.

Two halves, as the suite splits every law (docs/contributing.md, "The laws in bulk"):
- the law on the pair's own rows, in bulk (`bulk_first_token_pvalue`): p from a plain forward of the target (no
  decoder code), q as the decoder's drafter gives it at that context, and N = 10,000 rounds of the decision code
  (`sampling.verify_round`) in two vectorised calls. Chi-square p > 1e-3 over at most 20 bins catches a law at
  Cohen's w >= 0.065 from p with power 0.9 (`tests.stats.detectable_effect`), twice as fine as the 2,000 decoder
  runs this replaced (w >= 0.146). The rule's subtle biases are the core tests' (200,000 rounds on toy laws).
- the engine's plumbing end to end (`first_token_pvalue`): RUNS seeded decoders, each built, prefilled and
  stepped once, so every row, token and uniform reaches the decision as in a real run. RUNS = 400 catches
  w >= 0.33 (20 bins): a row fed at the wrong position, a token drawn from another law than the q it reports,
  a uniform used twice (`python tools/mutation_check.py` plants such faults and names the test that catches each).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine import settings
from specviz.engine.decoding.drafting import TokenContext
from specviz.engine.decoding.factory import make_decoder
from tests import bulk
from tests.stats import chi_square_pvalue

RUNS = 400       # end-to-end decoder runs: the plumbing
BULK = 10_000    # rounds of the decision code on the pair's own rows: the law


def target_law(pair, ids: list[int], config: DecodeConfig) -> torch.Tensor:
    """The target's warped next-token law after `ids`, from a plain forward pass (no decoder code): [V]."""
    with torch.inference_mode():
        logits = pair.target(torch.tensor([ids], device=pair.device)).logits[0, -1, : pair.vocab_size]
        return config.warp(logits)


def first_token_counts(pair, prompt: str, config: DecodeConfig, runs: int = RUNS) -> np.ndarray:
    """Counts [V] of the first emitted token of `runs` one-round runs of `config`, seeded 0 .. runs - 1."""
    if torch.device(pair.device).type == "cuda" and settings.current().cuda_graphs:
        pytest.skip("a fresh decoder per run captures its graphs each time on CUDA: test_rewind.py covers graphs")
    counts = np.zeros(pair.vocab_size)
    for seed in range(runs):
        dec = make_decoder(pair, prompt, DecodeConfig(**{**config.__dict__, "seed": seed}))
        dec.step()
        counts[dec.generated_ids[0]] += 1
    return counts


def first_token_pvalue(pair, prompt: str, config: DecodeConfig, runs: int = RUNS) -> float:
    """Chi-square p-value of the first token of `runs` decoder runs against the target's law from a plain forward."""
    counts = first_token_counts(pair, prompt, config, runs)
    expected = target_law(pair, pair.encode(prompt), config)
    return chi_square_pvalue(counts, expected.double().cpu().numpy())


def drafted_row(decoder) -> torch.Tensor:
    """q of the first token the decoder's drafter proposes at its context: the row it draws from [V] (a drafter
    without a model: one-hot on its proposal). The decoder's caches move on: use a decoder made for this."""
    context = TokenContext(ids=decoder.tokens, n_prompt=decoder.n_prompt, on_device=decoder.device_ids)
    drafted = decoder.drafter.propose(context, 1)
    assert drafted.gamma == 1, "the drafter proposed nothing at this context: choose one where it drafts"
    like = torch.zeros(1, decoder.pair.vocab_size, device=decoder.pair.device)
    return drafted.q(like)[0]


def bulk_first_token_pvalue(pair, prompt: str, config: DecodeConfig, rounds: int = BULK, seed: int = 0) -> float:
    """Chi-square p-value of the first token of `rounds` rounds of the decision code on the pair's rows at
    `prompt` (p from a plain forward, q from the decoder's drafter), against p."""
    decoder = make_decoder(pair, prompt, config)
    p = target_law(pair, decoder.tokens, config).float()
    q = drafted_row(decoder)  # in the drafter's own dtype, as the round receives it
    counts = bulk.first_tokens(torch.stack([p, p]).cpu(), q[None].cpu(), rounds, seed=seed, chunk=1_000)
    return chi_square_pvalue(counts, p.double().cpu().numpy())


def rewind(decoder, tokens: list[int], target_seen: int, draft_seen: int, seed: int) -> None:
    """Put `decoder` back where it stood (its token list and both caches' lengths; the keys and values below
    those lengths are untouched by later rounds, which write only past them) and reseed it: the next round
    replays the captured forwards at that length, over the stale keys the previous round left past it."""
    decoder.target.crop_to(target_seen)
    decoder.drafter.crop(draft_seen)
    decoder.tokens = list(tokens)
    decoder.finished = False
    decoder.generator.manual_seed(seed)


def rewound_first_token_pvalue(pair, prompt: str, config: DecodeConfig, runs: int = RUNS):
    """One decoder, captured once at the prompt: stepped until a round rejects a draft (so it stands at a
    length other than the capture's, with stale keys past it), then `runs` rounds seeded 0 .. runs - 1, each
    from that point (`rewind`). Returns (chi-square p-value of each round's first token against the target's
    warped law there from a plain forward, the decoder)."""
    static = None if torch.device(pair.device).type == "cuda" else True  # graphs on CUDA, the static cache here
    decoder = make_decoder(pair, prompt, config, static_cache=static)
    captured_at = decoder.target.seen
    while decoder.counters.accepted == decoder.counters.examined or decoder.target.seen == captured_at:
        decoder.step()
    tokens, target_seen, draft_seen = list(decoder.tokens), decoder.target.seen, decoder.drafter.model.seen
    expected = target_law(pair, tokens, config)
    counts = np.zeros(pair.vocab_size)
    for seed in range(runs):
        rewind(decoder, tokens, target_seen, draft_seen, seed)
        decoder.step()
        counts[decoder.tokens[len(tokens)]] += 1
    return chi_square_pvalue(counts, expected.double().cpu().numpy()), decoder


def two_token_law(pair, prompt: str, config: DecodeConfig) -> torch.Tensor:
    """The warped target's law of the first two tokens after `prompt`, p(x1) p(x2 | x1), from plain forward passes
    (no decoder code): [V * V], row x1."""
    ids, vocab = pair.encode(prompt), pair.vocab_size
    with torch.inference_mode():
        first = config.warp(pair.target(torch.tensor([ids], device=pair.device)).logits[0, -1, :vocab]).double()
        support = torch.nonzero(first > 0)[:, 0]
        rows = torch.tensor([ids + [int(x)] for x in support], device=pair.device)
        second = config.warp(pair.target(rows).logits[:, -1, :vocab]).double()  # [support, V]
    expected = torch.zeros(vocab, vocab, dtype=torch.float64)
    expected[support] = first[support, None] * second
    return expected.flatten()
