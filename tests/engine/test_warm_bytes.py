"""Memory bounded in bytes: warm runs' KV caches within a byte budget; offered pairs the pair cache keeps together."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine import memory
from specviz.engine.models import loading, presets
from specviz.engine.models.presets import ModelLoadError, Preset, pair_ref
from specviz.engine.serving.run import ComparedRun, RunSettings, WarmRuns
from specviz.present.views import Session, step_session

pytestmark = pytest.mark.slow  # servers of their own filled to their memory budgets

LONG = "KING.\nNow is the winter of our discontent made glorious summer by this sun of York. " * 12


def _settings(seed: int, prompt: str = LONG) -> RunSettings:
    return RunSettings(pair=pair_ref("shakespeare"), prompt=prompt,
                       config=DecodeConfig(gamma=4, max_new_tokens=40, seed=seed), device="cpu")


def _tensor_bytes(cache) -> int:
    """Every tensor a transformers cache's layers hold, counted directly (the oracle for `kv_bytes`)."""
    total = 0
    for layer in cache.layers:
        for value in vars(layer).values():
            if isinstance(value, torch.Tensor) and value.dim() == 4:  # [batch, kv_heads, positions, head_dim]
                total += value.numel() * value.element_size()
    return total


def test_a_runs_kv_bytes_are_what_its_caches_hold(pair):
    run = ComparedRun(_settings(0), stateless=False, warm=WarmRuns(4))
    for _ in range(3):
        run.step()
    caches = [run.spec.target.cache, run.spec.drafter.model.cache, run.base.target.cache]
    assert run.kv_bytes() == sum(_tensor_bytes(c) for c in caches) > 0
    run.hibernate()
    assert run.kv_bytes() == 0


def test_warm_runs_stay_within_their_byte_budget_and_resume_exactly(pair):
    one = ComparedRun(_settings(0), stateless=False, warm=WarmRuns(4))
    one.step()
    budget = 3 * one.kv_bytes()
    warm = WarmRuns(1000, budget_bytes=budget)
    runs = [ComparedRun(_settings(seed), stateless=False, warm=warm) for seed in range(8)]
    for run in runs * 2:
        run.step()
        assert warm.held_bytes() <= budget
    assert 1 <= len(warm) <= 3
    reference = ComparedRun(_settings(5), stateless=False, warm=WarmRuns(4))
    reference.step(), reference.step()
    assert runs[5].tokens == reference.tokens  # hibernated and woken: the same tokens


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_filling_the_budget_keeps_resident_memory_under_it(pair):
    """24 runs of ~250-token prompts would hold ~8x the budget warm; with it, RSS grows by at most the budget
    plus what the runs keep as plain data (traces, token lists: a few MB)."""
    budget = 24 << 20
    warm = WarmRuns(1000, budget_bytes=budget)
    first = ComparedRun(_settings(100), stateless=False, warm=warm)
    first.step()
    unbounded = 24 * first.kv_bytes()
    assert unbounded > 6 * budget  # without the budget the runs would hold far more than it
    before, peak, runs = _rss(), 0, []
    for seed in range(24):
        runs.append(ComparedRun(_settings(seed), stateless=False, warm=warm))
        runs[-1].step()
        peak = max(peak, _rss() - before)
    assert warm.held_bytes() <= budget
    assert peak <= budget + (16 << 20), f"RSS grew {peak / 2**20:.1f} MiB for a {budget / 2**20:.0f} MiB budget"


def test_the_default_budget_is_a_share_of_the_devices_memory(pair, monkeypatch):
    """A fake 64 MiB machine: the budget is WARM_SHARE of it, and warm runs keep to it; SPECVIZ_WARM_BYTES wins."""
    monkeypatch.delenv("SPECVIZ_WARM_BYTES", raising=False)
    monkeypatch.setattr(memory, "device_memory", lambda device: 64 << 20)
    assert memory.warm_budget(torch.device("cpu")) == int(memory.WARM_SHARE * (64 << 20))
    warm = WarmRuns(1000)
    for seed in range(10):
        ComparedRun(_settings(seed), stateless=False, warm=warm).step()
        assert warm.held_bytes() <= 16 << 20
    monkeypatch.setenv("SPECVIZ_WARM_BYTES", "2e6")
    assert memory.warm_budget(torch.device("cpu")) == 2_000_000


def test_a_bad_byte_budget_names_the_variable(monkeypatch):
    monkeypatch.setenv("SPECVIZ_WARM_BYTES", "lots")
    with pytest.raises(ValueError, match="SPECVIZ_WARM_BYTES must be a whole number"):
        memory.warm_budget(torch.device("cpu"))


def test_a_step_that_rebuilt_its_caches_says_so(pair):
    session = Session()
    step_session(session, _settings(3, "KING.\nNow is the time"))
    session.run.hibernate()
    for lang, word in (("en", "rebuilt"), ("zh", "重建"), ("ja", "再構築")):
        status = step_session(session, session.run.settings, lang)
        assert word in status.text, status.text
        session.run.hibernate()
    assert step_session.__name__ and not session.run.take_rebuilt_s()


# ------------------------------------------------------------------ offered pairs and pairs kept


@pytest.fixture
def two_offered(monkeypatch):
    """A Space offering two local pairs (the bundled one under a second name, so no hub is needed)."""
    twin = presets.PRESETS["shakespeare"]
    monkeypatch.setitem(presets.PRESETS, "shakespeare-twin", Preset(draft=twin.draft, target=twin.target,
                                                                    name="shakespeare-twin"))
    for name in ("SPECVIZ_MAX_PAIRS", "SPECVIZ_PRESET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    monkeypatch.setenv("SPECVIZ_PRESETS", "shakespeare, shakespeare-twin")
    return monkeypatch


def test_more_offered_pairs_than_kept_is_refused_at_startup(two_offered):
    two_offered.setenv("SPECVIZ_MAX_PAIRS", "1")
    with pytest.raises(ModelLoadError, match=r"offers 2 pairs .* SPECVIZ_MAX_PAIRS keeps 1"):
        loading.check_offer("cpu")
    two_offered.setenv("SPECVIZ_MAX_PAIRS", "2")
    loading.check_offer("cpu")


def test_without_max_pairs_every_offered_pair_is_kept_when_memory_allows(two_offered):
    need = 2 * loading.weights_bytes(presets.PRESETS["shakespeare"], torch.float32) * loading.HEADROOM
    loading.check_offer("cpu", free=int(need) + 1)
    assert loading.pairs_kept() == 2
    with pytest.raises(ModelLoadError, match="offers 2 pairs, whose weights need about"):
        loading.check_offer("cpu", free=int(need) - 1)


def test_the_server_stops_with_one_line_when_the_offer_does_not_fit(two_offered):
    env = {**os.environ, "SPECVIZ_MAX_PAIRS": "1", "SPECVIZ_PRESETS": "shakespeare, smollm2-local",
           "GRADIO_SERVER_PORT": "7898"}
    out = subprocess.run([sys.executable, "app.py"], capture_output=True, text=True, timeout=120, env=env, check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "SPECVIZ_MAX_PAIRS keeps 1" in lines[0], out.stderr[-500:]
