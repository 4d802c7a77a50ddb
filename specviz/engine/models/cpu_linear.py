"""Linear layers on the CPU computed as W·hᵀ, which MKL runs near the memory floor for the few rows of decoding.

`nn.Linear` computes h·Wᵀ. For a weight too large to stay in the CPU's caches and only a few positions,
MKL takes paths far slower than reading the weight once: its one-row product (a matrix-vector product)
runs on one core, and two to four rows take a slower path still. W·hᵀ, the same products summed per
output, is a matrix product with a few columns, which MKL spreads over every core; one row is given a
second, zero, column to take that path. Measured on this project's 2-core CPU (torch 2.13, MKL 2024.2):

  - SmolLM2's 49,152 × 576 head, per call for 1 / 2 / 3 / 5 positions: 9.8 / 25.4 / 38.3 / 18.4 ms as h·Wᵀ,
    3.1 / 3.3 / 4.2 / 4.9 ms as W·hᵀ.
  - SmolLM2-135M's 210 other linear layers (106M weights), one after another, for 1 / 2 / 3 / 5 positions:
    34–37 / 51–53 / 59–61 / 39 ms as h·Wᵀ, 14–16 / 13–16 / 22–24 / 26–30 ms as W·hᵀ.
  - The whole target forward (`smollm2-local`, 128 tokens of context) for 1 / 2 / 5 positions:
    see docs/benchmarks.md.

Applied on the CPU only (GPUs do not have this problem), to float32 layers (on a CPU that computes bfloat16
natively a large target's layers are bfloat16 instead, target_precision.py): every plain linear layer of a model
whose linear layers hold at least MIN_MODEL_WEIGHTS weights (such a model streams them from memory at every
forward; a token-embedding table, only looked up, does not count), and a head of at least MIN_HEAD_WEIGHTS
weights in any model. Small models, such as the Shakespeare pair (3.7M and 0.95M weights, in cache, bound
by per-call overhead), are left alone, and so are bfloat16 layers (draft_precision.py), whose one-row path
is already fast. The target-only baseline runs the same layers,
so both sides of every comparison get them.
"""
from __future__ import annotations

import torch

MIN_HEAD_WEIGHTS = 4_000_000
MIN_MODEL_WEIGHTS = 32_000_000


class RowsFirstLinear(torch.nn.Module):
    """`linear`'s map h -> h·Wᵀ (+ b), computed as (W·hᵀ)ᵀ; it shares the weight (tied embeddings stay tied)."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight = linear.weight
        self.bias = linear.bias
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        flat = hidden.reshape(-1, hidden.shape[-1]).contiguous()  # [n, H]: a strided h would take a slow path
        n = flat.shape[0]
        if n == 1 and flat.dtype == torch.float32:  # one row: a 2-column product, not the 1-core vector product
            flat = torch.cat([flat, flat.new_zeros(1, flat.shape[1])])
        if self.bias is None:
            out = torch.mm(self.weight, flat.T)                   # [V, n]
        else:  # fused as nn.Linear's addmm is: the same rounding in bf16
            out = torch.addmm(self.bias[:, None], self.weight, flat.T)
        return out[:, :n].T.reshape(*hidden.shape[:-1], self.out_features)

    def as_linear(self) -> torch.nn.Linear:
        """A plain nn.Linear over the same weight and bias (what `bench` times this layer against)."""
        linear = torch.nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, device="meta")
        linear.weight, linear.bias = self.weight, self.bias
        return linear


def use_rows_first_linears(model, device: torch.device) -> int:
    """Give a CPU model RowsFirstLinear layers where the module docstring says they pay; how many it replaced."""
    if device.type != "cpu":
        return 0
    replaced = 0
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if plain_float32(head) and head.weight.numel() >= MIN_HEAD_WEIGHTS:
        model.set_output_embeddings(RowsFirstLinear(head))
        replaced += 1
    if streamed_weights(model) < MIN_MODEL_WEIGHTS:
        return replaced
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if plain_float32(child):
                setattr(module, name, RowsFirstLinear(child))
                replaced += 1
    return replaced


def streamed_weights(model) -> int:
    """What a forward streams from memory: the float32 linear layers' weights, each shared tensor once (an embedding
    table is only looked up)."""
    linears = [m for m in model.modules() if plain_float32(m) or isinstance(m, RowsFirstLinear)]
    return sum(m.weight.numel() for m in {id(m.weight): m for m in linears}.values())


def plain_float32(module) -> bool:
    """A plain nn.Linear in float32: the layers MKL's small-row paths slow down (bfloat16 ones are fast as they are)."""
    return type(module) is torch.nn.Linear and module.weight.dtype == torch.float32
