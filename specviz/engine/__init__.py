"""Running real models, by concern:

  models/    naming and loading a draft/target pair: the preset table, what a visitor may load, from_pretrained
             with device, dtype and the pair cache; the offline SmolLM2 target; precision and CPU-speed choices
  caches/    a model with its KV cache (dynamic, or static with CUDA graphs)
  decoding/  the decoders (one chain, several drafts, prompt lookup; the target-only baseline), the factory that
             picks one, the feature-reading draft, the temperature sweep
  serving/   a compared run and a race as the app steps them; threads, the quiet wait before timed forwards,
             ZeroGPU's boundary

Beside them, the services every subpackage uses: `settings.py` (every deployment knob, `SPECVIZ_*`, read there
and nowhere else), `limits.py` (per-event deadlines and the heavy-work slots) and `memory.py` (the bytes a warm
run holds and the budget all warm runs share). The subpackages import in one direction:
settings/limits/memory <- models <- caches <- decoding <- serving.
"""
