"""The greedy parity check engine test files share: at T = 0 speculative decoding emits what the target alone does."""
from __future__ import annotations

import torch

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import SpeculativeDecoder, TargetOnlyDecoder
from specviz.engine.decoding.factory import make_decoder


def greedy_parity(pair, prompt: str, config: DecodeConfig) -> SpeculativeDecoder:
    """Runs `config` (T = 0) speculatively and target-only, and transformers' greedy generate as the oracle;
    asserts the three agree token for token over the whole generation (max_new_tokens, or fewer ending on the
    tokenizer's EOS, where all three stop) and returns the speculative decoder."""
    spec = make_decoder(pair, prompt, config)
    spec.run()
    base = TargetOnlyDecoder(pair, prompt, config)
    base.run()
    eos = pair.tokenizer.eos_token_id
    ids = torch.tensor([spec.prompt_ids], device=pair.device)
    hf = pair.target.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                              max_new_tokens=config.max_new_tokens, eos_token_id=eos,
                              pad_token_id=eos)[0, ids.shape[1]:].tolist()
    assert len(hf) == config.max_new_tokens or hf[-1] == eos, (len(hf), config.max_new_tokens)
    assert spec.generated_ids == hf, (len(spec.generated_ids), len(hf))
    assert base.generated_ids == hf, (len(base.generated_ids), len(hf))
    return spec
