"""A large LM head on the CPU computed as W·hᵀ, which MKL runs fast for the few rows of a verify pass.

`nn.Linear` computes h·Wᵀ. For a head of many rows (SmolLM2's 49,152 × 576) and only a few positions,
MKL takes a path that is several times slower than the memory-bound floor; W·hᵀ, the same products
summed the same way per logit, runs near that floor. Measured on this project's 2-core CPU
(torch 2.13, MKL 2024.2), per call for 2 / 3 / 5 positions: 25.4 / 38.3 / 18.4 ms as h·Wᵀ, 4.0 / 4.2 /
6.0 ms as W·hᵀ; the 1-token call is unchanged (11.2 vs 10.2 ms). The target's whole verify forward over
2 / 3 / 5 positions went from 102 / 119 / 76 ms to 75 / 91 / 63 ms (1 position: 56 vs 55 ms), and the
target-only baseline uses the same head, so both sides of every comparison get it.

Only on the CPU, and only for heads of at least MIN_WEIGHTS entries (small heads, such as the Shakespeare
pair's 4,096 × 128, are left alone). GPUs do not have this problem.
"""
from __future__ import annotations

import torch

MIN_WEIGHTS = 4_000_000


class RowsFirstHead(torch.nn.Module):
    """`linear`'s map h -> h·Wᵀ (+ b), computed as (W·hᵀ)ᵀ; it shares the weight (tied embeddings stay tied)."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight = linear.weight
        self.bias = linear.bias
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        flat = hidden.reshape(-1, hidden.shape[-1])              # [n, H]
        if self.bias is None:
            logits = torch.mm(self.weight, flat.T).T             # [n, V]
        else:  # fused as nn.Linear's addmm is: the same rounding in bf16
            logits = torch.addmm(self.bias[:, None], self.weight, flat.T).T
        return logits.reshape(*hidden.shape[:-1], self.out_features)


def use_rows_first_head(model, device: torch.device) -> bool:
    """Give a CPU model with a large plain linear head a RowsFirstHead; True if it did."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if device.type != "cpu" or type(head) is not torch.nn.Linear or head.weight.numel() < MIN_WEIGHTS:
        return False
    model.set_output_embeddings(RowsFirstHead(head))
    return True
