"""specviz.engine.serving.run: the compared run, its fair timing order, and stepping across a ZeroGPU-like boundary."""
from __future__ import annotations

import os
import pickle
import select
import types

import pytest

from specviz.core.config import DecodeConfig
from specviz.engine.models.presets import pair_ref
from specviz.engine.serving import run as run_module
from specviz.engine.serving.run import ComparedRun, RunSettings, WarmRuns

SETTINGS = RunSettings(pair=pair_ref("shakespeare"), prompt="KING.\nNow is the time",
                       config=DecodeConfig(gamma=4, max_new_tokens=60, seed=3), device="cpu")


def test_neither_side_always_runs_first(pair, monkeypatch):
    run = ComparedRun(SETTINGS, stateless=False)
    order = []
    spec_step, base_step = run.spec.step, run.base.step
    monkeypatch.setattr(run.spec, "step", lambda: order.append("spec") or spec_step())
    monkeypatch.setattr(run.base, "step", lambda: order.append("base") or base_step())
    firsts = []
    for _ in range(4):
        order.clear()
        run.step()
        firsts.append(order[0])
    assert firsts == ["spec", "base", "spec", "base"]
    assert abs(run.baseline_tokens() - run.metrics()["tokens"]) <= 5  # within one round of each other


def test_the_baseline_catches_up_on_the_last_step(pair):
    run = ComparedRun(RunSettings(SETTINGS.pair, SETTINGS.prompt, DecodeConfig(gamma=4, max_new_tokens=13, seed=1),
                                  device="cpu"), stateless=False)
    n_prompt = len(run.spec.prompt_ids)
    while not run.finished:
        run.step()
    assert run.baseline_tokens() == len(run.tokens) - n_prompt == 13


class ForkedGPU(types.ModuleType):
    """A stand-in for the `spaces` package on ZeroGPU: the decorated function runs in a forked
    worker, its arguments arrive pickled and only its pickled return value comes back."""

    def __init__(self):
        super().__init__("spaces")
        self.sent, self.received = [], []

    def GPU(self, duration=None):
        def decorate(fn):
            def in_worker(*args):
                payload = pickle.dumps(args)
                self.sent.append(len(payload))
                read, write = os.pipe()
                pid = os.fork()
                if pid == 0:  # the worker: no state of the parent's survives except via the pipe
                    import torch

                    torch.set_num_threads(1)  # OpenMP's thread pool does not survive a fork
                    os.close(read)
                    with os.fdopen(write, "wb") as out:
                        out.write(pickle.dumps(fn(*pickle.loads(payload))))
                    os._exit(0)
                os.close(write)
                chunks = []
                with os.fdopen(read, "rb") as inp:
                    while True:
                        ready, _, _ = select.select([inp], [], [], 120)
                        assert ready, "the forked worker hung"
                        chunk = inp.read1(1 << 20)
                        if not chunk:
                            break
                        chunks.append(chunk)
                os.waitpid(pid, 0)
                data = b"".join(chunks)
                self.received.append(len(data))
                return pickle.loads(data)
            return in_worker
        return decorate


def test_stepping_across_a_forked_boundary_advances_with_plain_data(pair, monkeypatch):
    """5 Steps through a forked, pickling worker: the run advances, traces equal a live run's,
    and each crossing carries under 1 MB (no model, no live decoder)."""
    fake = ForkedGPU()
    monkeypatch.setattr(run_module, "stateless_step", fake.GPU(duration=15)(run_module.stateless_step))
    boundary = ComparedRun(SETTINGS, stateless=True)
    live = ComparedRun(SETTINGS, stateless=False)
    for _ in range(5):
        a, b = boundary.step(), live.step()
        assert [p.uniform for p in a.positions] == [p.uniform for p in b.positions]
        assert [e.id for e in a.emitted] == [e.id for e in b.emitted]
        assert [p.target_prob for p in a.positions] == pytest.approx([p.target_prob for p in b.positions], abs=1e-5)
    assert boundary.tokens == live.tokens and len(boundary.traces) == 5
    assert boundary.metrics()["tokens"] == live.metrics()["tokens"] > 5
    assert boundary.baseline_tokens() == live.baseline_tokens()
    assert len(fake.sent) == 5 and max(fake.sent) < 1_000_000 and max(fake.received) < 1_000_000


def test_runs_beyond_the_warm_capacity_hibernate_and_resume_exactly(pair):
    """With room for one warm run, stepping B drops A's KV caches; A's next steps rebuild them
    and emit what a run that was never dropped emits."""
    warm = WarmRuns(1)
    a = ComparedRun(SETTINGS, stateless=False, warm=warm)
    b = ComparedRun(RunSettings(SETTINGS.pair, "Second prompt", SETTINGS.config, device="cpu"), stateless=False,
                    warm=warm)
    reference = ComparedRun(SETTINGS, stateless=False, warm=WarmRuns(2))
    for _ in range(3):
        a.step(), b.step(), reference.step()
        assert not a.warm and b.warm and len(warm) == 1
        assert a.metrics()["tokens"] == reference.metrics()["tokens"]  # readable while hibernating
    assert a.tokens == reference.tokens and a.baseline_tokens() == reference.baseline_tokens()
    assert [t.emitted for t in a.traces] == [t.emitted for t in reference.traces]


def test_a_finished_run_drops_its_caches_and_keeps_its_results(pair):
    run = ComparedRun(RunSettings(SETTINGS.pair, SETTINGS.prompt, DecodeConfig(gamma=4, max_new_tokens=6, seed=1),
                                  device="cpu"), stateless=False, warm=WarmRuns(4))
    while not run.finished:
        run.step()
    assert not run.warm and run.spec is None
    assert run.metrics()["tokens"] == run.baseline_tokens() == 6 and len(run.tokens) > 6


def test_a_stepping_run_is_never_hibernated_under_it(pair):
    run = ComparedRun(SETTINGS, stateless=False, warm=WarmRuns(4))
    with run._lock:  # as during a step
        assert run.hibernate() is False and run.warm
    assert run.hibernate() is True and not run.warm


def test_the_warm_capacity_is_validated():
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="warm runs"):
            WarmRuns(bad)
