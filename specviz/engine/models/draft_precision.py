"""A memory-bound draft in bfloat16 on a CPU that computes bfloat16 natively.

At batch size 1 a CPU forward of a draft with millions of weights is bound by reading them from memory:
half the bytes, about half the time. The draft is the one model whose precision is free to choose,
because exact speculative sampling never assumes q is close to p, only that the token was drawn from the
q that verify reads (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative
Decoding", arXiv:2211.17192, Thm 3.5 holds for any q). The target's precision, and so the output law's, is target_precision.py's choice.

Measured on this project's 2-core CPU (AVX512-BF16, torch 2.13): the `smollm2-local` draft (one layer,
its 8,192-row head, the feature layer: 8.9M weights of its own) took 3.69 ms a call in float32 and 1.85 ms
in bfloat16, after a 128-token context.

Used only where it pays: on the CPU, when the pair loads in float32, the CPU has AVX512-BF16 or AMX
(without them torch emulates bfloat16 matrix products, slower than float32), and the draft owns at least
MIN_WEIGHTS weights (the Shakespeare draft's 0.95M are bound by per-call overhead, not by memory, and it
stays as it is). `SPECVIZ_DRAFT_BF16=0` turns it off. Weights the draft shares with the target (its token
embeddings, perhaps its head) are left alone: they stay the target's float32 tensors, wrapped so that what
flows into and out of them is cast (`SharedEmbedding`, `SharedHead`).
"""
from __future__ import annotations

import torch

MIN_WEIGHTS = 4_000_000


def cpu_computes_bf16() -> bool:
    """Does this CPU multiply bfloat16 matrices in hardware (AVX512-BF16 or AMX tiles)?"""
    checks = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(check() for check in checks if callable(check))


def own_weights(draft, target) -> int:
    """The number of weights the draft does not share with the target."""
    shared = {id(p) for p in target.parameters()}
    return sum(p.numel() for p in draft.parameters() if id(p) not in shared)


def draft_dtype(draft, target, device: torch.device, dtype: torch.dtype, enabled: bool = True) -> torch.dtype:
    """The dtype the draft computes in: bfloat16 where the module docstring says it pays, else `dtype`."""
    if (enabled and device.type == "cpu" and dtype == torch.float32 and cpu_computes_bf16()
            and own_weights(draft, target) >= MIN_WEIGHTS):
        return torch.bfloat16
    return dtype


class SharedEmbedding(torch.nn.Module):
    """The target's token embeddings as a bfloat16 draft's: looked up in the target's table (the same tensor),
    handed on in the draft's dtype, so every caller that feeds the draft token ids works unchanged."""

    def __init__(self, embedding: torch.nn.Module, dtype: torch.dtype):
        super().__init__()
        self.embedding, self.dtype = embedding, dtype

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(ids).to(self.dtype)


class SharedHead(torch.nn.Module):
    """The target's head as a bfloat16 draft's: the draft's hidden states cast to the head's dtype first."""

    def __init__(self, head: torch.nn.Module):
        super().__init__()
        self.head = head

    @property
    def weight(self) -> torch.Tensor:
        return self.head.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.head(hidden.to(self.head.weight.dtype))


def convert_draft(draft, target, dtype: torch.dtype) -> None:
    """Cast the draft's own floating-point weights to `dtype` in place. The weights it shares with the target
    keep theirs (casting them would change the target), and so do buffers (rotary frequencies stay exact):
    shared embeddings hand on their rows in `dtype`, and a shared head reads the draft's hidden states cast
    back to its own dtype."""
    shared = {id(p) for p in target.parameters()}
    for p in draft.parameters():
        if p.is_floating_point() and id(p) not in shared:
            p.data = p.data.to(dtype)
    embedding = draft.get_input_embeddings()
    if id(embedding.weight) in shared:
        draft.set_input_embeddings(SharedEmbedding(embedding, dtype))
    head = draft.get_output_embeddings()
    if getattr(head, "weight", None) is not None and id(head.weight) in shared:
        draft.set_output_embeddings(SharedHead(head))


def restore_draft(draft, dtype: torch.dtype) -> None:
    """Undo `convert_draft` on a copy of a converted draft: its weights back in `dtype`, the shared tensors
    unwrapped (what `bench` times the bfloat16 draft against)."""
    for p in draft.parameters():
        if p.is_floating_point():
            p.data = p.data.to(dtype)
    embedding, head = draft.get_input_embeddings(), draft.get_output_embeddings()
    if isinstance(embedding, SharedEmbedding):
        draft.set_input_embeddings(embedding.embedding)
    if isinstance(head, SharedHead):
        draft.set_output_embeddings(head.head)
