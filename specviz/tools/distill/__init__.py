"""Distilling the smollm2-local draft from the target's own answers: `python -m specviz distill-smollm2 --help`.

  data.py      the chat prompts, the target, its sampled answers with their top-k (generate), the vocabulary (vocab)
  layers.py    the plain draft (--draft layers): a few of the target's layers on tokens alone
  features.py  the draft that reads the target's hidden states (--draft features, the default; EAGLE)
  optim.py     the learning-rate schedule and optimiser step both recipes train with
  cli.py       the stages and their flags
"""
