"""Loading a draft/target pair with `from_pretrained`: compatibility, the size check, the pair cache.

Pairs are named by `engine.models.presets` and placed by `engine.models.placement` (device, dtype, the
per-device choices); this module owns the loaded weights (one cache per process).

The cache, its locks and the guarded load they protect (size check, time limit, load-then-admit) stay in one
module: they must be read together to see that a failed load changes nothing.
"""
from __future__ import annotations

import gc
import os
import pickle
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

import torch

from .. import memory, settings
from . import smollm2
from .half_precision import overflowing_roles
from .placement import fit_to_device, pick_device, pick_dtype
from .policy import (
    canonical,
    estimated_params,
    hub_options,
    is_folder_name,
    pickle_checkpoint,
    read_config,
    scrub_paths,
    shown,
)
from .presets import PRESETS, ModelLoadError, Preset, pair_ref


@dataclass
class ModelPair:
    draft: torch.nn.Module
    target: torch.nn.Module
    tokenizer: object
    vocab_size: int            # ids both models share; padded embedding rows beyond it are masked
    device: torch.device
    dtype: torch.dtype         # the target's
    name: str
    chat: bool | None = False
    examples: tuple[str, ...] = ()
    context_window: int = field(default=0)
    ref: Preset | None = None  # what load_pair was asked for: load_pair(pair.ref, device=pair.device) is this pair
    draft_dtype: torch.dtype | None = None  # what the draft computes in: dtype, or bfloat16 (draft_precision.py)
    target_weights: torch.dtype | None = None  # the target's linear weights: dtype, or bfloat16 (target_precision.py)
    dtype_note: str = ""       # why dtype is not the one asked for (float16 that overflowed: half_precision.py)
    __hash__ = object.__hash__  # identity: pairs are compared and weakly referenced as objects

    def encode(self, prompt: str) -> list[int]:
        if self.chat is not False and getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                     add_generation_prompt=True, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        return self.tokenizer(prompt, add_special_tokens=False)["input_ids"]

    _texts: dict = field(default_factory=dict, repr=False)

    def token_text(self, token_id: int) -> str:
        """One token as text (memoised: traces ask for the same few tokens again and again)."""
        text = self._texts.get(token_id)
        if text is None:
            text = self._texts[token_id] = self.tokenizer.decode([int(token_id)], clean_up_tokenization_spaces=False)
        return text


def check_compatible(draft_tokenizer, target_tokenizer) -> int:
    """Both tokenizers must map every id to the same token; returns the shared vocabulary size."""
    draft_vocab, target_vocab = draft_tokenizer.get_vocab(), target_tokenizer.get_vocab()
    draft_by_id = {i: t for t, i in draft_vocab.items()}
    target_by_id = {i: t for t, i in target_vocab.items()}
    for i in range(max(len(draft_by_id), len(target_by_id))):
        if draft_by_id.get(i) != target_by_id.get(i):
            raise ModelLoadError(f"incompatible tokenizers: id {i} is {draft_by_id.get(i)!r} for the draft "
                                 f"but {target_by_id.get(i)!r} for the target; speculative decoding needs one vocabulary")
    return len(draft_by_id)


# The pair cache is the one owner of model weights. `_LIVE` sees every pair still alive (a step in
# flight may hold one the cache dropped), so a model is never loaded twice: at most one copy per key.
_CACHE: OrderedDict[tuple, ModelPair] = OrderedDict()  # key -> pair, least recently used first
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_PENDING: dict[tuple, Future] = {}                      # key -> the load in progress (one per key)
_CACHE_LOCK = threading.Lock()  # guards the dicts only, never held during a load
_ON_EVICT: list[Callable[[ModelPair], None]] = []       # told when the cache drops a pair (runs let go of it)
HEADROOM = 1.2                  # weights x this must fit in the device's free memory (activations, caches)


def on_evict(callback: Callable[[ModelPair], None]) -> None:
    """Call `callback(pair)` whenever the cache drops `pair` (the run layer hibernates runs holding it)."""
    _ON_EVICT.append(callback)


def pair_key(spec: Preset, device: torch.device, dtype: torch.dtype) -> tuple:
    """One key per pair of models: folders by their real path, so any spelling of a folder shares one copy;
    SPECVIZ_DRAFT_BF16 and SPECVIZ_TARGET_BF16 too, since they change the models that load."""
    return (canonical(spec.draft), canonical(spec.target), str(device), str(dtype),
            "draft-bf16" if settings.current().draft_bf16 else "draft-as-target",
            "target-bf16" if settings.current().target_bf16 else "target-as-loaded")


def is_cached(pair: ModelPair) -> bool:
    """Does the cache own `pair` (rather than a run holding on to one it dropped)?"""
    with _CACHE_LOCK:
        return any(p is pair for p in _CACHE.values())


def load_pair(preset: str | Preset | None = None, *, draft: str | None = None, target: str | None = None,
              device: str | None = None, dtype: str | torch.dtype | None = None,
              timeout: float | None = None) -> ModelPair:
    """Load (once per process; all sessions share the read-only copy) a draft/target pair.

    1. A pair in the cache, or still alive elsewhere (a step in flight), is handed out as it is.
    2. Else one load per key runs: with a `timeout` (the app's steps pass SPECVIZ_LOAD_TIMEOUT_S) in a thread
       of its own, the caller waiting at most that long; a slow load goes on and is cached when it ends, and
       a caller that stops waiting gets a message, not a hang. With none (startup, the command line) in the
       caller's own thread: ZeroGPU's CUDA emulation holds only on the thread that imported `spaces`, so
       its startup loads to 'cuda' on the main thread.
    3. The load checks the pair's size, from its configs, against the device's free memory before any
       weight is read, and enters the cache only once it succeeded: a failed load changes nothing.
    4. Then the least recently used pairs beyond `pairs_kept()` per device leave the cache, and
       the runs holding them let go (see `on_evict`)."""
    spec = pair_ref(preset, draft=draft, target=target)
    dev = pick_device(device)
    dt = pick_dtype(dev, dtype)
    key = pair_key(spec, dev, dt)
    start = False
    with _CACHE_LOCK:                                                   # 1.
        pair = _CACHE.get(key)
        if pair is not None:
            _CACHE.move_to_end(key)
            return pair
        pair = _LIVE.get(key)
        future = _PENDING.get(key)
        if pair is None and future is None:
            future = _PENDING[key] = Future()
            start = True
    if pair is not None:
        _admit(key, pair)
        return pair
    if start and timeout is None:                                       # 2.
        _load_into(future, key, spec, dev, dt)
    elif start:
        threading.Thread(target=_load_into, args=(future, key, spec, dev, dt), daemon=True,
                         name=f"specviz-load-{spec.name}").start()
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise ModelLoadError(f"loading the pair {spec.name if spec.name in PRESETS else shown(spec.name)!r} took "
                             f"longer than {timeout:g} s (SPECVIZ_LOAD_TIMEOUT_S); it goes on in the background: "
                             "try again in a while") from None


def _load_into(future: Future, key: tuple, spec: Preset, device: torch.device, dtype: torch.dtype) -> None:
    try:
        check_fits(spec, device, dtype)                                 # 3.
        pair = _load_checked(spec, device, dtype)
    except BaseException as err:  # handed to the waiting callers
        with _CACHE_LOCK:
            _PENDING.pop(key, None)
        future.set_exception(err if isinstance(err, Exception) else ModelLoadError(f"loading stopped: {err!r}"))
        return
    _admit(key, pair)                                                   # 4.
    with _CACHE_LOCK:
        _PENDING.pop(key, None)
    future.set_result(pair)


def _admit(key: tuple, pair) -> None:
    """Put `pair` in the cache as the most recent; drop the least recent beyond the limit on its device."""
    keep = pairs_kept()
    with _CACHE_LOCK:
        _CACHE[key] = pair
        _CACHE.move_to_end(key)
        try:
            _LIVE[key] = pair
        except TypeError:  # a stand-in without weak references (tests)
            pass
        on_device = [k for k in _CACHE if k[2] == key[2]]
        dropped = [_CACHE.pop(k) for k in on_device[: max(len(on_device) - keep, 0)]]
    for old in dropped:
        for callback in list(_ON_EVICT):
            callback(old)
    if dropped:
        dropped.clear()
        old = None
        gc.collect()
        if key[2].startswith("cuda"):
            torch.cuda.empty_cache()


def free_memory(device: torch.device) -> int:
    """Bytes the device can still take: free GPU memory, or on the host the smaller of MemAvailable and
    what the cgroup (a Space's container) still allows. On a GPU the driver counts the blocks torch's
    allocator keeps cached (reserved, not allocated: dropped runs' caches, say) as used; this process can
    reuse them, so they count as free."""
    if device.type == "cuda":
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(torch.cuda.mem_get_info(device)[0]) + int(cached)
    free = memory.host_memory("MemAvailable", cgroup_free=True)
    return free if free is not None else 1 << 62


def pairs_kept() -> int:
    """How many pairs stay loaded per device: SPECVIZ_MAX_PAIRS, else one per offered preset (`check_offer`
    made sure at startup that they fit), else 1 (served locally, where every preset is offered)."""
    deployment = settings.current()
    if deployment.max_pairs is not None:
        return deployment.max_pairs
    return len(deployment.offered_presets) if deployment.offered_presets else 1


def weights_bytes(spec: Preset, dtype: torch.dtype) -> int:
    """Both models' weights in `dtype`, estimated from their configs (no weight is read)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    return sum(estimated_params(read_config(smollm2.resolve(model_id), role)) for role, model_id in
               (("draft", spec.draft), ("target", spec.target))) * itemsize


def check_offer(device: str | None = None, free: int | None = None) -> None:
    """At startup: the offered pairs and the pairs kept agree, so visitors of two pairs never push each
    other's out. With SPECVIZ_MAX_PAIRS below the offer, ModelLoadError; without it, every offered pair is
    kept, provided their weights (from the configs, with HEADROOM) fit the device's free memory."""
    deployment = settings.current()
    offered = deployment.offered_presets
    if not offered or len(offered) == 1:
        return
    if deployment.max_pairs is not None:
        if deployment.max_pairs < len(offered):
            raise ModelLoadError(f"SPECVIZ_PRESETS offers {len(offered)} pairs ({', '.join(offered)}) but "
                                 f"SPECVIZ_MAX_PAIRS keeps {deployment.max_pairs}: each visitor would unload another's "
                                 f"pair; set SPECVIZ_MAX_PAIRS={len(offered)} or offer fewer presets")
        return
    if deployment.zero_gpu:  # the weights go to the GPU worker; the main process only emulates a device
        return
    dev = pick_device(device)
    dtype = pick_dtype(dev)
    need = sum(weights_bytes(PRESETS[name], dtype) for name in offered)
    free = free_memory(dev) if free is None else free
    if need * HEADROOM > free:
        raise ModelLoadError(f"SPECVIZ_PRESETS offers {len(offered)} pairs, whose weights need about "
                             f"{need * HEADROOM / 1e9:.1f} GB together and {dev} has {free / 1e9:.1f} GB free: offer "
                             "fewer presets, or set SPECVIZ_MAX_PAIRS to keep fewer loaded (visitors of different "
                             "pairs then wait for reloads)")


def check_fits(spec: Preset, device: torch.device, dtype: torch.dtype) -> None:
    """ModelLoadError unless both models' weights (estimated from their configs, before any weight is
    read or downloaded) fit in the device's free memory with HEADROOM to spare."""
    need = weights_bytes(spec, dtype)
    free = free_memory(device)
    if need * HEADROOM > free:
        name = spec.name if spec.name in PRESETS else f"{shown(spec.draft)} -> {shown(spec.target)}"
        raise ModelLoadError(f"the pair {name!r} needs about {need / 1e9:.1f} GB for its weights in "
                             f"{str(dtype).removeprefix('torch.')}, and {device} has {free / 1e9:.1f} GB free: "
                             "pick a smaller pair (sizes estimated from the models' configs)")


def _detail(err: BaseException) -> str:
    """The first line of an error, with server paths cut to their last part."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return scrub_paths(text)


def _load_one(model_id: str, role: str, device: torch.device, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_id = smollm2.resolve(model_id)  # the GGUF target's cached folder; any other id unchanged
    name = shown(model_id)
    pickled = pickle_checkpoint(model_id) if is_folder_name(model_id) else None
    if pickled:  # refused before torch reads a byte of it
        raise ModelLoadError(f"the {role} model {name!r} has only a pickle checkpoint ({pickled}), which is not "
                             "loaded: save it as safetensors")
    options = hub_options(model_id, role)
    try:
        tokenizer = AutoTokenizer.from_pretrained(canonical(model_id), trust_remote_code=False, **options)
        with smollm2.quiet_if_shared(model_id):
            model = AutoModelForCausalLM.from_pretrained(canonical(model_id), dtype=dtype, trust_remote_code=False,
                                                         **options)
        return tokenizer, model.to(device).eval()
    except torch.cuda.OutOfMemoryError as err:
        raise ModelLoadError(f"out of memory loading the {role} model {name!r} on {device}: "
                             "pick a smaller pair or free the GPU") from err
    except pickle.UnpicklingError:
        raise ModelLoadError(f"the {role} model {name!r} has a pickle checkpoint that cannot be loaded safely: "
                             "save it as safetensors") from None
    except (OSError, ValueError, KeyError) as err:
        where = "local folder" if is_folder_name(model_id) else "hub id (is the hub reachable? HF_HUB_OFFLINE is " \
            f"{os.environ.get('HF_HUB_OFFLINE', 'unset')})"
        raise ModelLoadError(f"could not load the {role} model {name!r} as a {where}: {_detail(err)}") from None
    except RuntimeError as err:  # e.g. a device that fails to take the weights
        raise ModelLoadError(f"could not move the {role} model {name!r} to {device}: {_detail(err)}") from None


def _load(spec: Preset, device: torch.device, dtype: torch.dtype) -> ModelPair:
    draft_tok, draft = _load_one(spec.draft, "draft", device, dtype)
    target_tok, target = _load_one(spec.target, "target", device, dtype)
    try:
        smollm2.attach_shared(draft, target, spec.draft)  # a draft that stores only what it does not share
    except (ValueError, KeyError, OSError, RuntimeError) as err:
        raise ModelLoadError(f"could not give the draft {shown(spec.draft)!r} what it shares with the target: "
                             f"{_detail(err)}") from None
    own_dtype, target_weights = fit_to_device(draft, target, device, dtype)
    vocab = check_compatible(draft_tok, target_tok)
    for role, model in (("draft", draft), ("target", target)):
        if model.config.get_text_config().vocab_size < vocab:
            raise ModelLoadError(f"the {role} model has {model.config.vocab_size} output rows but the tokenizer {vocab} ids")
    window = min(_context_window(draft), _context_window(target))
    if not settings.current().stateless_steps:  # on ZeroGPU no CUDA work may run outside spaces.GPU
        with torch.inference_mode():  # pay one-off allocation costs now, not in the first timed step
            for model in (draft, target):
                model(torch.zeros((1, 4), dtype=torch.long, device=device), use_cache=True)
    return ModelPair(draft=draft, target=target, tokenizer=target_tok, vocab_size=vocab, device=device, dtype=dtype,
                     name=spec.name, chat=spec.chat, examples=spec.examples, context_window=window, ref=spec,
                     draft_dtype=own_dtype, target_weights=target_weights)


def _load_checked(spec: Preset, device: torch.device, dtype: torch.dtype) -> ModelPair:
    """`_load`, and a float16 pair whose logits overflow (half_precision.py) loaded again in float32 where
    it fits, else refused; the message says which. Not on ZeroGPU: no CUDA work runs outside spaces.GPU
    there, and its GPUs compute in bfloat16."""
    pair = _load(spec, device, dtype)
    if dtype != torch.float16 or settings.current().zero_gpu:
        return pair
    bad = overflowing_roles(pair)
    if not bad:
        return pair
    del pair
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    name = spec.name if spec.name in PRESETS else f"{shown(spec.draft)} -> {shown(spec.target)}"
    why = f"the {' and '.join(bad)} model's float16 logits are not finite (NaN or inf: float16 overflows)"
    try:
        check_fits(spec, device, torch.float32)
    except ModelLoadError as err:
        raise ModelLoadError(f"the pair {name!r} cannot run on {device}: {why}, and in float32 {err}") from None
    pair = _load(spec, device, torch.float32)
    pair.dtype_note = f"{why}; loaded in float32 instead"
    print(f"warning: the pair {name!r}: {pair.dtype_note}", file=sys.stderr)
    return pair


def _context_window(model) -> int:
    """The window the model was trained for: where its config records the length it was trained at before
    its positions were stretched (RoPE scaling's `original_max_position_embeddings`), that; else the size of
    its position table (`max_position_embeddings`, which a scaled model only extrapolates to)."""
    config = model.config.get_text_config()
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    trained = (rope.get("original_max_position_embeddings") if isinstance(rope, dict) else None) or \
        getattr(config, "original_max_position_embeddings", None)
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        if getattr(config, attr, None):
            size = int(getattr(config, attr))
            return min(size, int(trained)) if trained else size
    return int(trained) if trained else 2048
