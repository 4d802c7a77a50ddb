"""Draft/target pairs with a planted defect, for the tests of the rejection analysis and the report.

- `noisy_draft(path, scale)`: the bundled draft with Gaussian noise of `scale` times each weight
  tensor's own standard deviation added (seeded), saved as a model folder. Scale 0.7 takes the
  acceptance rate from about 0.9 to about 0.35 on the bundled target.
- `TemperedDraft`: a model drafter (`ModelDraft`) that samples the draft at another temperature than the
  target (the production mistake of a draft served with other sampling settings).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import torch

from specviz.core.warping import warp
from specviz.engine.decoding.model_draft import ModelDraft

DRAFT = Path(__file__).resolve().parents[1] / "assets" / "models" / "shakespeare-draft"


def noisy_draft(path: Path, scale: float = 0.7, seed: int = 0) -> Path:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(DRAFT, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for weight in model.parameters():
            if weight.numel() > 1:
                weight.add_(torch.randn(weight.shape, generator=generator) * weight.std() * scale)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt"):
        if (DRAFT / name).exists():
            shutil.copy(DRAFT / name, path / name)
    return path


class TemperedDraft(ModelDraft):
    """The draft samples at `draft_temperature`; the target keeps the run's temperature."""
    draft_temperature = 0.4

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        return warp(logits, self.draft_temperature, self.config.top_k or None, self.config.top_p)


class GreedyDraft(ModelDraft):
    """The draft takes its argmax (one-hot q) while the target samples at the run's temperature."""

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        probs = self.config.warp(logits)  # [V]
        return torch.zeros_like(probs).scatter_(-1, probs.argmax(-1, keepdim=True), 1.0)


class ShiftedHeadDraft(ModelDraft):
    """A broken draft head: its output rows are off by one token id (a head loaded with the wrong
    layout), so it is as sure as ever, of the wrong tokens."""

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        return self.config.warp(logits.roll(1, dims=-1))


class PermutedDraft(ModelDraft):
    """The draft's token ids mean other tokens (a draft with another tokenizer of the same size): its
    logits reach the sampler through a fixed permutation of the vocabulary."""

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        order = torch.randperm(logits.shape[-1], generator=torch.Generator().manual_seed(0)).to(logits.device)
        return self.config.warp(logits[..., order])


class NaNDraft(ModelDraft):
    """The draft's logits turn NaN (as an fp16 overflow makes them)."""

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        return self.config.warp(torch.full_like(logits, float("nan")))
