"""Loading policy: dtype per GPU, one lock per pair, one resident pair, your own pair's guard rails."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from specviz import models


@pytest.mark.parametrize("native_bf16, expected", [(True, torch.bfloat16), (False, torch.float16)])
def test_cuda_dtype_is_bf16_only_where_it_is_native(monkeypatch, native_bf16, expected):
    calls = []

    def supported(including_emulation=True):
        calls.append(including_emulation)
        return native_bf16 or including_emulation  # torch counts emulated bf16 (a T4) as supported
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", supported)
    assert models.pick_dtype(torch.device("cuda")) == expected
    assert calls == [False]


def test_loading_one_pair_never_blocks_a_pair_already_loaded(pair, monkeypatch):
    """A 3 s fake load of another pair runs in a thread; the loaded pair is handed out at once."""
    started = threading.Event()

    def slow_load(spec, device, dtype):
        started.set()
        time.sleep(3)
        raise models.ModelLoadError("fake: never finishes loading")
    monkeypatch.setattr(models, "_load", slow_load)
    monkeypatch.setattr(models, "MAX_RESIDENT_PAIRS", 2)  # keep the bundled pair cached meanwhile
    worker = threading.Thread(target=lambda: pytest.raises(models.ModelLoadError, models.load_pair, "gpt2", device="cpu"))
    worker.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    assert models.load_pair("shakespeare", device="cpu") is not None
    assert time.perf_counter() - t0 < 0.5
    worker.join()


def test_loading_a_new_pair_releases_the_oldest(monkeypatch):
    made = []

    def fake_load(spec, device, dtype):
        made.append(spec.name)
        return object()
    monkeypatch.setattr(models, "_load", fake_load)
    monkeypatch.setattr(models, "_CACHE", {})
    monkeypatch.setattr(models, "MAX_RESIDENT_PAIRS", 1)
    a = models.load_pair(models.Preset("a1", "a2", name="a"), device="cpu")
    assert models.load_pair(models.Preset("a1", "a2", name="a"), device="cpu") is a
    models.load_pair(models.Preset("b1", "b2", name="b"), device="cpu")
    assert [k[0] for k in models._CACHE] == ["b1"] and made == ["a", "b"]


def test_own_models_follow_the_deployment_policy(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    monkeypatch.delenv("SPECVIZ_ALLOW_CUSTOM_MODELS", raising=False)
    with pytest.raises(models.ModelLoadError, match="SPECVIZ_ALLOW_CUSTOM_MODELS"):
        models.custom_pair(str(models.ASSETS / "shakespeare-draft"), str(models.ASSETS / "shakespeare-target"))
    monkeypatch.setenv("SPECVIZ_ALLOW_CUSTOM_MODELS", "1")
    monkeypatch.setattr(models, "MAX_CUSTOM_PARAMS", 1_000_000)
    with pytest.raises(models.ModelLoadError, match="cap"):  # the 16x128 target has ~3.7M parameters
        models.custom_pair(str(models.ASSETS / "shakespeare-draft"), str(models.ASSETS / "shakespeare-target"))
    monkeypatch.setattr(models, "MAX_CUSTOM_PARAMS", 10**9)
    ref = models.custom_pair(str(models.ASSETS / "shakespeare-draft"), str(models.ASSETS / "shakespeare-target"))
    assert ref.chat is None and ref.target.endswith("shakespeare-target")


def test_bad_devices_and_dtypes_are_one_line_errors():
    for device in ("bogus", "tpu"):
        with pytest.raises(models.ModelLoadError, match="device"):
            models.pick_device(device)
    with pytest.raises(models.ModelLoadError, match="dtype"):
        models.pick_dtype(torch.device("cpu"), "float7")
