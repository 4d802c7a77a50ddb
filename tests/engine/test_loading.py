"""Loading policy: dtype per GPU, one lock per pair, one resident pair, your own pair's guard rails."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from specviz.engine import loading, presets


@pytest.mark.parametrize("native_bf16, expected", [(True, torch.bfloat16), (False, torch.float16)])
def test_cuda_dtype_is_bf16_only_where_it_is_native(monkeypatch, native_bf16, expected):
    calls = []

    def supported(including_emulation=True):
        calls.append(including_emulation)
        return native_bf16 or including_emulation  # torch counts emulated bf16 (a T4) as supported
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", supported)
    assert loading.pick_dtype(torch.device("cuda")) == expected
    assert calls == [False]


def test_loading_one_pair_never_blocks_a_pair_already_loaded(pair, monkeypatch):
    """A 3 s fake load of another pair runs in a thread; the loaded pair is handed out at once."""
    started = threading.Event()

    def slow_load(spec, device, dtype):
        started.set()
        time.sleep(3)
        raise presets.ModelLoadError("fake: never finishes loading")
    monkeypatch.setattr(loading, "_load", slow_load)
    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "2")  # keep the bundled pair cached meanwhile
    worker = threading.Thread(target=lambda: pytest.raises(presets.ModelLoadError, loading.load_pair, "gpt2", device="cpu"))
    worker.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    served = loading.load_pair("shakespeare", device="cpu")
    assert served is pair and served.name == "shakespeare" and served.draft is pair.draft
    assert time.perf_counter() - t0 < 0.5
    worker.join()


def test_loading_a_new_pair_releases_the_oldest(monkeypatch):
    made = []

    def fake_load(spec, device, dtype):
        made.append(spec.name)
        return object()
    monkeypatch.setattr(loading, "_load", fake_load)
    monkeypatch.setattr(loading, "_CACHE", {})
    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "1")
    a = loading.load_pair(presets.Preset("a1", "a2", name="a"), device="cpu")
    assert loading.load_pair(presets.Preset("a1", "a2", name="a"), device="cpu") is a
    loading.load_pair(presets.Preset("b1", "b2", name="b"), device="cpu")
    assert [k[0] for k in loading._CACHE] == ["b1"] and made == ["a", "b"]


def test_own_models_follow_the_deployment_policy(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    monkeypatch.delenv("SPECVIZ_ALLOW_CUSTOM_MODELS", raising=False)
    with pytest.raises(presets.ModelLoadError, match="SPECVIZ_ALLOW_CUSTOM_MODELS"):
        presets.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    monkeypatch.setenv("SPECVIZ_ALLOW_CUSTOM_MODELS", "1")
    monkeypatch.setenv("SPECVIZ_MAX_CUSTOM_PARAMS", "1000000")
    with pytest.raises(presets.ModelLoadError, match="cap"):  # the 16x128 target has ~3.7M parameters
        presets.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    monkeypatch.setenv("SPECVIZ_MAX_CUSTOM_PARAMS", "1e9")
    ref = presets.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    assert ref.chat is None and ref.target.endswith("shakespeare-target")


def test_bad_devices_and_dtypes_are_one_line_errors():
    for device in ("bogus", "tpu"):
        with pytest.raises(presets.ModelLoadError, match="device"):
            loading.pick_device(device)
    with pytest.raises(presets.ModelLoadError, match="dtype"):
        loading.pick_dtype(torch.device("cpu"), "float7")
