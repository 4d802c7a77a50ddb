"""The causal LM's own forward, with the base model's last hidden state beside the logits.

Reading the hidden state and applying `get_output_embeddings()` by hand skips whatever a family does after
its head: Granite divides the logits by `logits_scaling`, Cohere multiplies them by `logit_scale`,
Gemma 2 soft-caps them (`final_logit_softcapping`). The model's own forward applies all of it; a forward hook
on its base model hands back the last hidden state (after the final norm, what the head reads) without
`output_hidden_states`, which would keep every layer's states.
"""
from __future__ import annotations

import torch


def logits_and_hidden(model, keep: int, **inputs) -> tuple[torch.Tensor, torch.Tensor, object]:
    """(logits [k, keep, V] (keep 0: every position), last hidden state [k, n, H], the cache it returned)."""
    seen = []
    hook = model.base_model.register_forward_hook(lambda _module, _args, out: seen.append(out[0]))
    try:
        out = model(**inputs, use_cache=True, logits_to_keep=keep)
    finally:
        hook.remove()
    return out.logits, seen[-1], out.past_key_values
