"""Running real models: presets and loading, the KV cache, the decoders, the compared run, ZeroGPU, sweeps.

Every deployment knob (`SPECVIZ_*`) is read in `settings.py` and nowhere else.
"""
