"""engine.timing: intervals on the device's clock, read back at once, without a device sync on the CPU."""
from __future__ import annotations

import time

import torch

from specviz.engine.timing import Timer, elapsed_ms


def test_cpu_intervals_are_summed_per_name_and_cleared_by_a_read():
    timer = Timer("cpu")
    for _ in range(2):
        start = timer.mark()
        time.sleep(0.01)
        timer.add("draft", start, timer.mark())
    start = timer.mark()
    timer.add("verify", start, timer.mark())
    totals = timer.read()
    assert set(totals) == {"draft", "verify"}
    assert totals["draft"] >= 20.0 and 0.0 <= totals["verify"] < totals["draft"]
    assert timer.read() == {}


def test_a_cpu_timer_never_touches_cuda(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a CPU timer synchronised or recorded on CUDA")

    monkeypatch.setattr(torch.cuda, "synchronize", refuse)
    monkeypatch.setattr(torch.cuda, "Event", refuse)
    timer = Timer("cpu")
    start = timer.mark()
    timer.add("x", start, timer.mark())
    assert not timer.cuda and timer.read()["x"] >= 0.0


def test_elapsed_ms_of_perf_counter_marks_is_their_difference_in_milliseconds():
    assert elapsed_ms(1.0, 1.25) == 250.0
