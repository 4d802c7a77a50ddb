"""The mathematics and plain records: sampling, warping, theory, metrics, notation, DecodeConfig, traces.

Functions over probability tensors and plain dataclasses; torch alone (no models, no transformers,
no gradio, no plotly), randomness only through a `torch.Generator` passed in.
"""
