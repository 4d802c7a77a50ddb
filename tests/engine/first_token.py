"""The exactness checks engine test files share: the first emitted token (and the first two) against the target's law."""
from __future__ import annotations

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine import settings
from specviz.engine.decoding.factory import make_decoder
from tests.stats import chi_square_pvalue


def first_token_pvalue(pair, prompt: str, config: DecodeConfig, runs: int = 2_000) -> float:
    """Chi-square p-value of the first token of `runs` one-round runs of `config`, seeded 0 .. runs - 1,
    against the target's warped next-token distribution from a plain forward pass (no decoder code).
    Skipped where each run would capture CUDA graphs afresh (61 ms a run on a GPU): there
    `rewound_first_token_pvalue` asks the same question of one decoder captured once (tests/engine/test_rewind.py)."""
    if torch.device(pair.device).type == "cuda" and settings.current().cuda_graphs:
        pytest.skip("a fresh decoder per run captures its graphs each time on CUDA: test_rewind.py covers graphs")
    with torch.inference_mode():
        logits = pair.target(torch.tensor([pair.encode(prompt)], device=pair.device)).logits[0, -1, : pair.vocab_size]
        expected = config.warp(logits)
    counts = torch.zeros(pair.vocab_size)
    for seed in range(runs):
        dec = make_decoder(pair, prompt, DecodeConfig(**{**config.__dict__, "seed": seed}))
        dec.step()
        counts[dec.generated_ids[0]] += 1
    return chi_square_pvalue(counts.numpy(), expected.double().cpu().numpy())


def rewind(decoder, tokens: list[int], target_seen: int, draft_seen: int, seed: int) -> None:
    """Put `decoder` back where it stood (its token list and both caches' lengths; the keys and values below
    those lengths are untouched by later rounds, which write only past them) and reseed it: the next round
    replays the captured forwards at that length, over the stale keys the previous round left past it."""
    decoder.target.crop_to(target_seen)
    decoder.drafter.crop(draft_seen)
    decoder.tokens = list(tokens)
    decoder.finished = False
    decoder.generator.manual_seed(seed)


def rewound_first_token_pvalue(pair, prompt: str, config: DecodeConfig, runs: int = 2_000):
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
    with torch.inference_mode():
        logits = pair.target(torch.tensor([tokens], device=pair.device)).logits[0, -1, : pair.vocab_size]
        expected = config.warp(logits)
    counts = torch.zeros(pair.vocab_size)
    for seed in range(runs):
        rewind(decoder, tokens, target_seen, draft_seen, seed)
        decoder.step()
        counts[decoder.tokens[len(tokens)]] += 1
    return chi_square_pvalue(counts.numpy(), expected.double().cpu().numpy()), decoder


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
