"""One decoder captured once, rewound and replayed: the path a GPU runs (CUDA graphs) stays exact.

A captured forward replays at whatever length the cache stands at, over keys a rejected round left past it;
a fresh decoder per seeded run would capture its graphs each time (61 ms a run on a GPU). So one decoder is
captured once (on CUDA: graphs; on the CPU: the static cache, eagerly), stepped until a round rejects a
draft at a length other than the capture's, and rewound there before each of N seeded rounds: 2,000 on a GPU
(w >= 0.146 at power 0.9), RUNS = 400 on the CPU, where the static cache replays eagerly and the law of the round
itself is the bulk tests' (w >= 0.33 here; tests/engine/first_token.py). Chi-square of the first emitted token
against the target's warped law from a plain forward, p > 1e-3 (bins of >= 5% expected mass, tests/stats.py).
"""
from __future__ import annotations

import pytest
import torch

from specviz.core.config import DecodeConfig
from tests.engine import first_token
from tests.engine.first_token import rewound_first_token_pvalue


def runs(pair) -> int:
    return 2_000 if torch.device(pair.device).type == "cuda" else first_token.RUNS


@pytest.mark.slow  # hundreds of rounds on the static cache
def test_a_decoder_rewound_after_a_rejection_emits_the_targets_law(pair, record_property):
    config = DecodeConfig(gamma=3, temperature=1.0, max_new_tokens=200, seed=0, record=False)
    pvalue, decoder = rewound_first_token_pvalue(pair, "HAMLET.\nTo be, or not", config, runs=runs(pair))
    record_property("pvalue", pvalue)
    record_property("cache_kind", decoder.cache_kind)
    assert decoder.cache_kind in ("static", "cuda graphs")  # the path under test, not the dynamic cache
    assert pvalue > 1e-3
