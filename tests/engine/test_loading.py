"""Loading policy: dtype per GPU, one lock per pair, one resident pair, your own pair's guard rails."""
from __future__ import annotations

import gc
import shutil
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

from specviz.engine.models import loading, placement, policy, presets


@pytest.mark.parametrize("native_bf16, expected", [(True, torch.bfloat16), (False, torch.float16)])
def test_cuda_dtype_is_bf16_only_where_it_is_native(monkeypatch, native_bf16, expected):
    calls = []

    def supported(including_emulation=True):
        calls.append(including_emulation)
        return native_bf16 or including_emulation  # torch counts emulated bf16 (a T4) as supported
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", supported)
    assert placement.pick_dtype(torch.device("cuda")) == expected
    assert calls == [False]


def test_loading_one_pair_never_blocks_a_pair_already_loaded(pair, monkeypatch):
    """A fake load of another pair runs in a thread and lasts until the test ends it; the loaded pair is handed out
    at once meanwhile."""
    started, release = threading.Event(), threading.Event()

    def slow_load(spec, device, dtype):
        started.set()
        release.wait(30)  # the load lasts until the loaded pair has been handed out
        raise presets.ModelLoadError("fake: never finishes loading")
    monkeypatch.setattr(loading, "_load", slow_load)
    monkeypatch.setattr(loading, "check_fits", lambda *a: None)
    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "2")  # keep the bundled pair cached meanwhile
    worker = threading.Thread(target=lambda: pytest.raises(presets.ModelLoadError, loading.load_pair, "gpt2", device="cpu"))
    worker.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    served = loading.load_pair("shakespeare", device="cpu")
    assert served is pair and served.name == "shakespeare" and served.draft is pair.draft
    assert time.perf_counter() - t0 < 0.5 and worker.is_alive()  # the other load still runs
    release.set()
    worker.join()


def test_loading_a_new_pair_releases_the_oldest(monkeypatch):
    made = []

    def fake_load(spec, device, dtype):
        made.append(spec.name)
        return object()
    monkeypatch.setattr(loading, "_load", fake_load)
    monkeypatch.setattr(loading, "check_fits", lambda *a: None)
    monkeypatch.setattr(loading, "_CACHE", OrderedDict())
    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "1")
    a = loading.load_pair(presets.Preset("a1", "a2", name="a"), device="cpu")
    assert loading.load_pair(presets.Preset("a1", "a2", name="a"), device="cpu") is a
    loading.load_pair(presets.Preset("b1", "b2", name="b"), device="cpu")
    assert [k[0] for k in loading._CACHE] == ["b1"] and made == ["a", "b"]


def test_own_models_follow_the_deployment_policy(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    monkeypatch.delenv("SPECVIZ_ALLOW_CUSTOM_MODELS", raising=False)
    with pytest.raises(presets.ModelLoadError, match="SPECVIZ_ALLOW_CUSTOM_MODELS"):
        policy.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    monkeypatch.setenv("SPECVIZ_ALLOW_CUSTOM_MODELS", "1")  # hub ids only: a Space's folders stay closed
    with pytest.raises(presets.ModelLoadError, match="SPECVIZ_ALLOW_MODEL_FOLDERS"):
        policy.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    monkeypatch.setenv("SPECVIZ_ALLOW_MODEL_FOLDERS", "1")
    monkeypatch.setenv("SPECVIZ_MAX_CUSTOM_PARAMS", "1000000")
    with pytest.raises(presets.ModelLoadError, match="cap"):  # the 16x128 target has ~3.7M parameters
        policy.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    monkeypatch.setenv("SPECVIZ_MAX_CUSTOM_PARAMS", "1e9")
    ref = policy.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    assert ref.chat is None and ref.target.endswith("shakespeare-target")


def test_bad_devices_and_dtypes_are_one_line_errors():
    for device in ("bogus", "tpu"):
        with pytest.raises(presets.ModelLoadError, match="device"):
            placement.pick_device(device)
    with pytest.raises(presets.ModelLoadError, match="dtype"):
        placement.pick_dtype(torch.device("cpu"), "float7")


# ------------------------------------------------------------------ one owner of the weights (one loaded copy per pair)


def bundled_copy(tmp_path, name: str):
    """A folder of its own (its own real path, so its own cache key) whose files are the bundled draft's
    and target's: links to them, no copy of the weights on disk."""
    folders = []
    for role in ("draft", "target"):
        folder = tmp_path / f"{name}-{role}"
        folder.mkdir()
        for f in (presets.ASSETS / f"shakespeare-{role}").iterdir():
            (folder / f.name).symlink_to(f)
        folders.append(str(folder))
    return presets.Preset(*folders, name=name)


def test_a_failed_load_changes_nothing_that_was_loaded(pair, monkeypatch):
    """A visitor's sequence: shakespeare, a failing gpt2 (offline), shakespeare again: the same object,
    never dropped; then a load that fails after its size check: the cache is as it was."""
    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "1")
    first = loading.load_pair("shakespeare", device="cpu")
    before = dict(loading._CACHE)
    with pytest.raises(presets.ModelLoadError, match="gpt2"):
        loading.load_pair("gpt2", device="cpu")
    assert dict(loading._CACHE) == before and loading.load_pair("shakespeare", device="cpu") is first

    def broken(spec, device, dtype):
        raise presets.ModelLoadError("fake: the weights are corrupt")
    monkeypatch.setattr(loading, "check_fits", lambda *a: None)
    monkeypatch.setattr(loading, "_load", broken)
    with pytest.raises(presets.ModelLoadError, match="corrupt"):
        loading.load_pair(presets.Preset("x/draft", "x/target", name="x"), device="cpu")
    assert dict(loading._CACHE) == before and loading.load_pair("shakespeare", device="cpu") is first


def test_one_copy_of_a_folder_however_it_is_named(pair, tmp_path, monkeypatch):
    """12 sessions naming the bundled folder 12 ways made 12 copies; folders are keyed by real path now."""
    monkeypatch.chdir(presets.ASSETS.parent.parent)
    link = tmp_path / "link-to-draft"
    link.symlink_to(presets.ASSETS / "shakespeare-draft")
    target = str(presets.ASSETS / "shakespeare-target")
    spellings = [str(presets.ASSETS / "shakespeare-draft"), "assets/models/shakespeare-draft",
                 "./assets/models/shakespeare-draft/", "assets/models/../models/shakespeare-draft", str(link)]
    loaded = [loading.load_pair(draft=d, target=target, device="cpu") for d in spellings]
    assert all(p is pair for p in loaded)


def test_an_evicted_pair_is_let_go_by_its_runs_and_reloaded_on_their_next_step(tmp_path, monkeypatch):
    """SPECVIZ_MAX_PAIRS=1: loading B drops A, the warm run on A hibernates (A's weights are freed: no
    copy outlives the cache), and its next Step reloads A and goes on exactly as an undisturbed run."""
    from specviz.core.config import DecodeConfig
    from specviz.engine.serving.run import ComparedRun, RunSettings

    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "1")
    a, b = bundled_copy(tmp_path, "a"), bundled_copy(tmp_path, "b")
    settings = RunSettings(a, "KING.\nNow is", DecodeConfig(gamma=3, max_new_tokens=40, seed=5), device="cpu")
    run, solo = ComparedRun(settings), None
    run.step()
    held = weakref.ref(run.spec.pair)
    loading.load_pair(b, device="cpu")
    gc.collect()
    assert not run.warm and held() is None
    run.step()
    run.step()
    solo = ComparedRun(settings)
    for _ in range(3):
        solo.step()
    assert run.tokens == solo.tokens and len(run.traces) == 3


def test_the_size_check_comes_before_any_weight_is_read(tmp_path, monkeypatch):
    """With 1 MB free the bundled-size pair (~10 MB in fp32) is refused from its configs alone."""
    loads = []
    monkeypatch.setattr(loading, "_load", lambda *a: loads.append(a))
    monkeypatch.setattr(loading, "free_memory", lambda device: 1_000_000)
    with pytest.raises(presets.ModelLoadError, match=r"needs about 0\.0 GB .* has 0\.0 GB free"):
        loading.load_pair(bundled_copy(tmp_path, "big"), device="cpu")
    assert loads == []


def test_the_size_check_counts_what_the_model_cards_publish():
    """Qwen2.5-3B has 3,085.9M parameters and gpt2-xl 1,557.6M (their model cards); the count from
    the config is within 0.1M. An architecture transformers cannot build gets the formula's upper
    estimate, which must not fall below the published size by more than 2%, nor exceed it by 15%."""
    from transformers import GPT2Config, Qwen2Config

    qwen = Qwen2Config(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
                       num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)
    gpt2 = GPT2Config(n_embd=1600, n_layer=48, n_head=25, vocab_size=50257)
    for config, published in ((qwen, 3085.9e6), (gpt2, 1557.6e6)):
        assert policy.estimated_params(config) == pytest.approx(published, abs=0.1e6)
        config.model_type = "unknown-to-transformers"  # from_config refuses: the formula answers
        assert 0.98 * published <= policy.estimated_params(config) <= 1.15 * published


def test_a_slow_load_fails_in_time_and_is_cached_when_it_ends(monkeypatch):
    from specviz.core.config import DecodeConfig
    from specviz.engine.serving.run import RunSettings

    made, release, finished = [], threading.Event(), threading.Event()

    def slow(spec, device, dtype):
        release.wait(30)  # the load lasts past both callers' time limits, until the test ends it
        made.append(spec.name)
        finished.set()
        return loading.ModelPair(None, None, None, 0, device, dtype, spec.name)
    monkeypatch.setattr(loading, "_load", slow)
    monkeypatch.setattr(loading, "check_fits", lambda *a: None)
    monkeypatch.setenv("SPECVIZ_LOAD_TIMEOUT_S", "1")
    monkeypatch.setenv("SPECVIZ_MAX_PAIRS", "2")
    slowpoke = presets.Preset("slow/draft", "slow/target", name="slowpoke")
    t0 = time.perf_counter()
    with pytest.raises(presets.ModelLoadError, match="longer than 1 s .SPECVIZ_LOAD_TIMEOUT_S"):
        RunSettings(slowpoke, "KING.", DecodeConfig(), device="cpu").load()  # the app's way: the variable's limit
    assert time.perf_counter() - t0 < 2.0
    with pytest.raises(presets.ModelLoadError):  # a second caller waits on the same load, not a new one
        loading.load_pair(slowpoke, device="cpu", timeout=0.2)
    release.set()
    assert finished.wait(10)
    done = loading.load_pair(slowpoke, device="cpu")
    assert done.name == "slowpoke" and made == ["slowpoke"]
    loading._CACHE.pop(loading.pair_key(slowpoke, torch.device("cpu"), torch.float32))


def test_the_size_check_on_a_gpu_counts_the_allocators_cached_blocks_as_free(monkeypatch):
    """A fake GPU: the driver reports 4 MiB free, and torch's allocator holds 40 MiB reserved of which 4 MiB
    are allocated (36 MiB of cached blocks, e.g. a dropped run's KV caches). The bundled pair (17.9 MiB in
    fp32, x 1.2 headroom) fits in the 40 MiB this process can use, and not in 4 MiB."""
    mib = 1 << 20
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (4 * mib, 80 * mib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 40 * mib)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 4 * mib)
    cuda = torch.device("cuda")
    assert loading.free_memory(cuda) == 40 * mib
    loading.check_fits(presets.pair_ref("shakespeare"), cuda, torch.float32)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 4 * mib)
    with pytest.raises(presets.ModelLoadError, match=r"has 0\.0 GB free"):
        loading.check_fits(presets.pair_ref("shakespeare"), cuda, torch.float32)


def overflowing_copy(tmp_path):
    """The bundled pair with a target whose final norm is scaled by 1e5: its logits pass float16's largest
    value (65,504) and come out inf, as a bf16-trained model's can on a T4; finite in float32."""
    from transformers import AutoModelForCausalLM

    bundled = presets.PRESETS["shakespeare"]
    target = AutoModelForCausalLM.from_pretrained(bundled.target, dtype=torch.float32)
    with torch.no_grad():
        target.transformer.ln_f.weight.mul_(1e5)
    folder = tmp_path / "hot-target"
    target.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(bundled.target) / name, folder / name)
    return presets.Preset(bundled.draft, str(folder), name="hot")


def test_a_pair_whose_float16_logits_overflow_moves_to_float32_and_says_so(tmp_path, capsys):
    pair = loading.load_pair(overflowing_copy(tmp_path), device="cpu", dtype="float16")
    assert pair.dtype == torch.float32 and pair.target.dtype == torch.float32
    assert pair.dtype_note == ("the target model's float16 logits are not finite (NaN or inf: float16 overflows); "
                               "loaded in float32 instead")
    assert "loaded in float32 instead" in capsys.readouterr().err


def test_a_pair_whose_float16_logits_overflow_is_refused_where_float32_does_not_fit(tmp_path, monkeypatch):
    fp16_bytes = 2 * sum(policy.estimated_params(policy.read_config(m, r)) for r, m in
                         (("draft", presets.PRESETS["shakespeare"].draft), ("target", presets.PRESETS["shakespeare"].target)))
    monkeypatch.setattr(loading, "free_memory", lambda device: int(fp16_bytes * 1.5))  # float16 fits, float32 not
    with pytest.raises(presets.ModelLoadError, match=r"target model's float16 logits are not finite .* and in "
                                                     r"float32 the pair .* needs about"):
        loading.load_pair(overflowing_copy(tmp_path), device="cpu", dtype="float16")
