"""A model with its KV cache, and the bytes warm caches may hold.

  cache.py         CachedModel: prefill, forward over new tokens, crop after a rejection, rows for several drafts
  static_cache.py  a fixed-size KV cache whose forwards replay as CUDA graphs
  memory.py        bytes a warm run's caches hold, and the budget all warm runs share
"""
