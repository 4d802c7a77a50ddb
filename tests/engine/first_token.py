"""The exactness check three engine test files share: the first emitted token against the target's law."""
from __future__ import annotations

import torch

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.factory import make_decoder
from tests.stats import chi_square_pvalue


def first_token_pvalue(pair, prompt: str, config: DecodeConfig, runs: int = 2_000) -> float:
    """Chi-square p-value of the first token of `runs` one-round runs of `config`, seeded 0 .. runs - 1,
    against the target's warped next-token distribution from a plain forward pass (no decoder code)."""
    with torch.inference_mode():
        logits = pair.target(torch.tensor([pair.encode(prompt)], device=pair.device)).logits[0, -1, : pair.vocab_size]
        expected = config.warp(logits)
    counts = torch.zeros(pair.vocab_size)
    for seed in range(runs):
        dec = make_decoder(pair, prompt, DecodeConfig(**{**config.__dict__, "seed": seed}))
        dec.step()
        counts[dec.generated_ids[0]] += 1
    return chi_square_pvalue(counts.numpy(), expected.double().cpu().numpy())
