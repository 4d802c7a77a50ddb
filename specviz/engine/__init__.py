"""Running real models, by concern:

  models/    naming and loading a draft/target pair: the preset table, what a visitor may load, from_pretrained
             with device, dtype and the pair cache; the offline SmolLM2 target; precision and CPU-speed choices
  caches/    a model with its KV cache (dynamic, or static with CUDA graphs) and the bytes warm caches may hold
  decoding/  the decoders (one chain, several drafts, prompt lookup; the target-only baseline), the factory that
             picks one, the feature-reading draft, the temperature sweep
  serving/   a compared run and a race as the app steps them; per-event deadlines and heavy-work slots, threads,
             the quiet wait before timed forwards, ZeroGPU's boundary

Every deployment knob (`SPECVIZ_*`) is read in `settings.py` (here, beside the subpackages: each of them reads it)
and nowhere else.
"""
