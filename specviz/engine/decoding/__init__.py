"""Speculative decoding over real models, one round per step(), and the target-only baseline.

  base.py            what every decoder shares (prompt, caches, prefill, stopping, state); TargetOnlyDecoder
  decoders.py        SpeculativeDecoder: one chain per round, proposed by its drafter
  tree_decoder.py    TreeDecoder: several drafts at once, verified as a token tree
  drafting.py        the Drafter interface and a proposal (Drafted): who proposes the drafts
  drafters.py        the drafters' registry: each drafter by its name (register(name, cls))
  model_draft.py     ModelDraft: the pair's draft model proposes (plain, or reading the target's features)
  lookup_draft.py    PromptLookup: drafts copied by prompt lookup, no draft model runs
  round_trace.py     what a round shows, gathered on the device and read once (sampling.pack)
  round_regions.py   a round as two regions (the draft loop; verify and decide), recorded as CUDA graphs on CUDA
  factory.py         make_decoder: the decoder and the drafter a DecodeConfig asks for
  feature_draft.py   a draft that reads the target's hidden states (EAGLE)
  sweep.py           a temperature sweep on one context: why sampling-based verification accepts more
"""
