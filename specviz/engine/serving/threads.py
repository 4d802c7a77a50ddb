"""How many threads the engine's forwards use while it serves a page: one core is left to everything else.

A CPU forward splits each operation over torch's intra-op threads and waits at the end of every operation
for the slowest of them. Served as a web app, the forwards are never alone on the machine: gradio's event
loop wakes every millisecond to poll its queue, the handlers render figures, and in a classroom the browser
repaints on the same laptop. With one intra-op thread per core, whichever of these runs takes a core from
one thread, and every operation of the forward waits for it. The speculative round suffers most (its
draft loop is many small operations: the per-call cost ratio c rose from 0.22 to 0.35-0.56 on the page),
so the live counters called a 1.6-1.9x speed-up "slower". With one core left free nothing waits at those
barriers: the counters then agree with `bench` (docs/benchmarks.md, "Live counters against the bench").
"""
from __future__ import annotations

import os

import torch

from .. import settings


def serving_threads(cores: int | None = None) -> int:
    """SPECVIZ_THREADS if set, else every core but one (at least one)."""
    chosen = settings.current().threads
    if chosen:
        return chosen
    cores = (os.cpu_count() or 1) if cores is None else cores
    return max(1, cores - 1)


def use_serving_threads() -> int:
    """Set torch's intra-op threads for serving; returns how many."""
    n = serving_threads()
    torch.set_num_threads(n)
    return n
