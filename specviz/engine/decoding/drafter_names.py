"""The drafters' names without the drafters: what `--drafter` offers, importable before torch.

`drafters.py` registers each drafter under one of these names and checks, as it loads, that its registry holds
these, so the command line can offer the choices and refuse a typo without importing the decoding code.
"""

MODEL_DRAFTER = "model"    # the pair's draft model
LOOKUP_DRAFTER = "lookup"  # prompt lookup: copies what followed an earlier n-gram
HYBRID_DRAFTER = "auto"    # per round: the lookup where the context has a match, the draft model elsewhere
DRAFTER_NAMES = (MODEL_DRAFTER, LOOKUP_DRAFTER, HYBRID_DRAFTER)
DEFAULT_DRAFTER = MODEL_DRAFTER
