"""A model with its KV cache.

  cache.py         CachedModel: prefill, forward over new tokens, crop after a rejection, rows for several drafts
  static_cache.py  a fixed-size KV cache whose forwards replay as CUDA graphs
"""
