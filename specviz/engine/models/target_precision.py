"""An exact bfloat16 target on a CPU that computes bfloat16 natively: a verify over 9 positions costs about one forward.

Why. Speculative decoding pays because the target's pass over γ + 1 positions costs about one over one position
(Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding", Sec. 3.4). On this
project's 2-core CPU (AVX512-BF16, torch 2.13) a float32 SmolLM2-135M does not: MKL's few-row float32 paths make a
pass over 5 positions cost 1.45 of one and over 9 positions 2.23 (docs/benchmarks.md). The same layers with
bfloat16 weights, which oneDNN multiplies natively, read half the bytes and take about the same time for 1 to 9 rows
(210 linear layers of SmolLM2-135M: 11–15 ms for any of 1–9 rows, against 13 ms for one row and 30 ms for 9 in
float32 as W·hᵀ). So on such a CPU a target of at least MIN_MODEL_WEIGHTS weights computes its linear layers in
bfloat16.

Exactness. Speculative sampling gives the target's law only if verify's p at a position is the p that target-only
decoding computes there (Thm 3.5 reads p as one function of the prefix). A float32 target already differs by about
4e-5 in its logits between a pass over 9 positions and 9 one-position passes (the kernels sum in other orders); in
bfloat16, where every layer's input is rounded, such a difference grows to 0.3. So this target is made
batch-invariant, bit for bit:

  - `Bf16RowsLinear`: weights in bfloat16, the input rounded to bfloat16, the sums in float32, the result rounded to
    bfloat16 and handed on as float32 (the residual stream, norms and attention compute in float32); at least
    MIN_ROWS rows, the rest zeros: the oneDNN kernel then gives a row the same bits whatever rows it is computed with,
    which `rows_are_independent` checks on this CPU before the target is converted;
  - `rowwise_attention`: one query at a time, each over exactly the keys a one-position pass there sees, in the
    same call a one-position pass makes; drafts scored side by side and a tree's branches included (their mask
    picks each query's keys).

A verify's logits are then the bits of target-only decoding's, position by position
(tests/engine/test_target_precision.py), and greedy speculative decoding writes target-only's text. The cost: n
attention calls a layer instead of one (about 0.02 ms each here). The target stays a float32 model to every other
part of the engine: its embeddings, hidden states and logits are float32 tensors (the logits, a linear layer's
output, hold bfloat16's precision).

Used only on the CPU, when the pair loads in float32, the CPU has AVX512-BF16 or AMX, the target is of a family
whose attention this module was checked against (CHECKED_TYPES: plain scaled dot-product attention over the keys its
mask shows; not GPT-2, whose Conv1D layers are not nn.Linear), its attention is "sdpa" and its linear layers hold at
least MIN_MODEL_WEIGHTS weights (the Shakespeare target's 3.7M are bound by
per-call overhead, not memory). `SPECVIZ_TARGET_BF16=0` keeps a float32 target (cpu_linear.py's rows-first layers).
"""
from __future__ import annotations

import functools
import threading
import weakref

import torch
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from .cpu_linear import MIN_MODEL_WEIGHTS, RowsFirstLinear, streamed_weights
from .draft_precision import cpu_computes_bf16

CHECKED_TYPES = ("llama", "mistral", "qwen2", "gpt_neox")  # SmolLM2, Pythia, Qwen2.5 among them
MIN_ROWS = 4  # fewer rows take another oneDNN path (and a slower one: 15 against 11 ms for SmolLM2's layers)
ROWWISE = "specviz_rowwise"


class Bf16RowsLinear(torch.nn.Module):
    """`linear`'s map h -> h·Wᵀ (+ b) with W in bfloat16, each row's bits independent of the other rows."""

    def __init__(self, linear: torch.nn.Module):
        super().__init__()
        self.weight = torch.nn.Parameter(linear.weight.detach().to(torch.bfloat16), requires_grad=False)
        bias = getattr(linear, "bias", None)
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().to(torch.bfloat16), requires_grad=False)
        self.in_features, self.out_features = self.weight.shape[1], self.weight.shape[0]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        flat = hidden.reshape(-1, self.in_features).to(torch.bfloat16)  # [n, H_in]
        n = flat.shape[0]
        if n < MIN_ROWS:
            flat = torch.cat([flat, flat.new_zeros(MIN_ROWS - n, self.in_features)])
        out = torch.nn.functional.linear(flat, self.weight, self.bias)[:n]  # [n, H_out]
        return out.to(hidden.dtype).reshape(*hidden.shape[:-1], self.out_features)

    def as_linear(self, dtype: torch.dtype) -> torch.nn.Linear:
        """A plain nn.Linear over these weights in `dtype` (what `bench` times this layer against)."""
        linear = torch.nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, dtype=dtype)
        with torch.no_grad():
            linear.weight.copy_(self.weight)
            if self.bias is not None:
                linear.bias.copy_(self.bias)
        return linear.requires_grad_(False)


def _visible(attention_mask: torch.Tensor | None, b: int, n: int, length: int) -> list[list[object]]:
    """For each batch row and query: the number of keys it sees (a prefix), or the indices of the keys it sees."""
    if attention_mask is None:  # what sdpa's is_causal reads it as: one query sees every key, n queries a triangle
        return [[length if n == 1 else i + 1 for i in range(n)] for _ in range(b)]
    seen = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
    seen = seen[:, 0].expand(b, n, length)  # [b, n, L]
    counts = seen.sum(-1)  # [b, n]
    prefix = seen == (torch.arange(length, device=seen.device) < counts[..., None])  # [b, n, L]
    rows = prefix.all(-1).tolist()
    counts = counts.tolist()
    return [[counts[r][i] if rows[r][i] else seen[r, i].nonzero().squeeze(-1) for i in range(n)] for r in range(b)]


class _FreshMask(threading.local):
    """The mask `rowwise_mask` built last in this thread (a weak reference: it does not keep the mask alive), which
    keys each of its queries sees, worked out at the first layer that reads it, and a copy of the mask then. A
    forward hands that mask object to each of its layers, so working it out once a forward instead of once a layer
    saves about 1.5 ms of a verify over 2 positions of SmolLM2-135M's 30 layers (a dozen small operations and two
    reads each, against one comparison with the copy; measured on this project's 2-core CPU). A mask written to
    since, or any other (a static cache's, a second mask of a model with sliding-window layers), is read afresh."""
    mask: weakref.ref | None = None
    shape: tuple | None = None
    copy: torch.Tensor | None = None
    visible: list | None = None


_fresh = _FreshMask()


def rowwise_mask(*args, **kwargs) -> torch.Tensor | None:
    """sdpa's boolean mask (`sdpa_mask`, what this attention reads), remembered as this thread's fresh mask."""
    mask = sdpa_mask(*args, **kwargs)
    _fresh.mask = None if mask is None else weakref.ref(mask)
    _fresh.shape, _fresh.copy, _fresh.visible = None, None, None
    return mask


def _visible_once(attention_mask: torch.Tensor | None, b: int, n: int, length: int) -> list[list[object]]:
    """`_visible`, worked out once for all the layers of a forward where the mask is the fresh one (`_FreshMask`)."""
    if attention_mask is None or _fresh.mask is None or _fresh.mask() is not attention_mask:
        return _visible(attention_mask, b, n, length)
    if _fresh.shape != (b, n, length) or not torch.equal(attention_mask, _fresh.copy):
        _fresh.shape, _fresh.copy = (b, n, length), attention_mask.clone()
        _fresh.visible = _visible(attention_mask, b, n, length)
    return _fresh.visible


def rowwise_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention for query [b, h, n, d] one query at a time (the module docstring says why); [b, n, h, d], None."""
    if any(kwargs.get(name) is not None for name in ("softcap", "s_aux", "position_bias")):
        raise ValueError("one-query-at-a-time attention computes plain attention: no softcap, sinks or position bias")
    b, heads, n, _ = query.shape
    gqa = key.shape[1] != heads
    outs = []
    for r, row in enumerate(_visible_once(attention_mask, b, n, key.shape[2])):
        for i, keys in enumerate(row):
            if isinstance(keys, int):
                k, v = key[r:r + 1, :, :keys], value[r:r + 1, :, :keys]
            else:
                k, v = key[r:r + 1].index_select(2, keys), value[r:r + 1].index_select(2, keys)
            outs.append(torch.nn.functional.scaled_dot_product_attention(
                query[r:r + 1, :, i:i + 1], k, v, scale=scaling, enable_gqa=gqa))  # [1, h, 1, d]
    out = torch.cat(outs, 2).reshape(heads, b, n, -1)  # queries in order r, i
    return out.permute(1, 2, 0, 3).contiguous(), None


AttentionInterface.register(ROWWISE, rowwise_attention)
AttentionMaskInterface.register(ROWWISE, rowwise_mask)


@functools.lru_cache(maxsize=1)
def rows_are_independent() -> bool:
    """Does this CPU's bfloat16 product give a row the same bits alone (padded to MIN_ROWS) as among 9, 17 and 136
    rows? Kernels differ between CPUs (AVX512-BF16, AMX); where they do not, the target stays float32."""
    generator = torch.Generator().manual_seed(0)
    layer = Bf16RowsLinear(torch.nn.Linear(576, 1536))
    with torch.no_grad():
        layer.weight.copy_(torch.randn(1536, 576, generator=generator) * 0.02)
        hidden = torch.randn(136, 576, generator=generator)
        alone = layer(hidden[:1])
        return all(torch.equal(layer(hidden[:rows])[:1], alone) for rows in (MIN_ROWS, 9, 17, 136))


def bf16_target_pays(target, device: torch.device, dtype: torch.dtype, enabled: bool = True) -> bool:
    """Does `target` compute its linear layers in bfloat16 here (the module docstring's conditions)?"""
    return (enabled and device.type == "cpu" and dtype == torch.float32 and cpu_computes_bf16()
            and getattr(target.config, "model_type", None) in CHECKED_TYPES
            and getattr(target.config, "_attn_implementation", None) == "sdpa"
            and streamed_weights(target) >= MIN_MODEL_WEIGHTS and rows_are_independent())


def convert_target(model) -> int:
    """Give `model` bfloat16 rows-independent linear layers (its head too) and one-query-at-a-time attention, in
    place; how many layers it replaced. Its float32 linear weights are dropped (the embedding table is kept)."""
    replaced = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is torch.nn.Linear or isinstance(child, RowsFirstLinear):
                setattr(module, name, Bf16RowsLinear(child))
                replaced += 1
    head = model.get_output_embeddings()
    if head is not None and not isinstance(head, Bf16RowsLinear):
        model.set_output_embeddings(Bf16RowsLinear(head))
        replaced += 1
    model.set_attn_implementation(ROWWISE)
    model.config.tie_word_embeddings = False  # the head is now its own bfloat16 copy: tying it again would break it
    return replaced
