"""The mathematics and plain records: sampling, warping, theory, metrics, notation, DecodeConfig, traces.

Functions over probability tensors and plain dataclasses, on the standard library, torch and numpy alone
(no models, no transformers, no gradio, no plotly; tests/core/test_imports.py), randomness only through a
`torch.Generator` passed in.
"""
