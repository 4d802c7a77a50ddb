"""float16 where a GPU has no native bfloat16 (a T4): does the pair's half-precision forward stay finite?

A model trained in bfloat16 (Qwen2.5, for one) may carry activations beyond float16's largest value
(65,504); its logits then come out NaN or +inf, and sampling fails later with a message about NaN that
names neither the dtype nor the cure. So right after a float16 load each model runs once over a probe
text; NaN or +inf in its logits means float16 does not hold it (-inf is legitimate: a head that scores part
of the vocabulary gives q = 0 elsewhere). The loader then moves the pair to float32 where it fits, and
refuses it otherwise, saying which (`loading._load_checked`).
"""
from __future__ import annotations

import torch

PROBE = "The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away, there lived"


def overflowing_roles(pair, probe: str = PROBE) -> list[str]:
    """The roles ('draft', 'target') whose logits over `probe` (the pair's first example, if it has one)
    hold NaN or +inf."""
    text = pair.examples[0] if pair.examples else probe
    ids = torch.tensor([pair.encode(text)[:64] or [0]], device=pair.device)     # [1, n]
    bad = []
    with torch.inference_mode():
        for role, model in (("draft", pair.draft), ("target", pair.target)):
            logits = model(ids).logits                                            # [1, n, V]
            if torch.isnan(logits).any() or torch.isposinf(logits).any():
                bad.append(role)
    return bad
