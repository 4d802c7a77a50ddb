"""Speculative decoding over real models, one round per step(), and the target-only baseline.

  base.py            what every decoder shares (prompt, caches, prefill, stopping, state); TargetOnlyDecoder
  decoders.py        SpeculativeDecoder (one chain, drafted by the draft model)
  tree_decoder.py    TreeDecoder: several drafts at once, verified as a token tree
  lookup_decoder.py  LookupDecoder: drafts copied by prompt lookup, no draft model runs
  factory.py         make_decoder: the decoder a DecodeConfig asks for
  feature_draft.py   a draft that reads the target's hidden states (EAGLE)
  sweep.py           a temperature sweep on one context: why sampling-based verification accepts more
"""
