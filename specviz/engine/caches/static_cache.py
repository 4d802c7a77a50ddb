"""A KV cache of fixed size whose forwards replay as CUDA graphs: a GPU forward without launch overhead.

On a GPU a small model's forward costs roughly its number of kernels times the launch overhead, whatever
its width, so a 30-layer draft costs nearly what a 24-layer target does and speculative decoding cannot
pay. A CUDA graph replays a recorded forward with one launch; it needs every tensor it touches at a fixed
address and of a fixed shape. So:
  - the keys and values live in transformers' `StaticCache`, allocated once for the run's longest context
    (`max_len`); each layer's write position is a tensor (`cumulative_length`). A rejection moves that
    position back (`set_length`) and crops nothing: positions move, shapes do not, nothing is recaptured;
  - the attention mask is ours, [1, 1, n, max_len]: key j is visible to query i iff j <= length + i, so
    the stale keys a rejection leaves past `length` are never read (the next forward overwrites them),
    and transformers' mask code, which reads tensor values on the host, is skipped (a 4-D mask is used as is);
  - one graph per number of new tokens n (1 for a drafted token, gamma + 1 for a verify), captured once
    before the run's first timed step and replayed with its inputs copied into fixed buffers; each capture
    is checked against the eager forward on the same inputs, and a graph that differs is not used;
  - the mask is computed inside the graph from the layers' own write position (`[layers]` one tensor, advanced
    by every forward in place, moved back by one `fill_` after a rejection): no mask is built outside the graph,
    nothing is copied from the host, and a recorded loop of forwards (a speculative round's regions,
    `decoding/round_regions.py`) sees each forward's position as it advances.
On the CPU (and wherever graphs are off) the same static forward runs eagerly; tests prove it gives the
dynamic cache's logits. `plan` says where the graph path is used: CUDA, SPECVIZ_CUDA_GRAPHS not 0,
decoders that live across steps (not ZeroGPU's rebuilt-per-step ones).
"""
from __future__ import annotations

import copy
import threading
import time

import torch

from .. import settings
from ..models.lm_forward import logits_and_hidden
from ..models.target_precision import ROWWISE

# the implementations whose 4-D mask we know how to write (a bfloat16 target's one-query-at-a-time attention reads
# sdpa's boolean mask: models/target_precision.py)
SUPPORTED_ATTENTION = ("sdpa", "eager", ROWWISE)
CAPTURE_LOCK = threading.Lock()  # one capture at a time in this process (each blocks the device while it runs)


def unsupported_reason(model) -> str:
    """Why `model` cannot use the static cache ('' when it can)."""
    from transformers import StaticCache
    from transformers.cache_utils import StaticLayer

    attention = getattr(model.config, "_attn_implementation", None)
    if attention not in SUPPORTED_ATTENTION:
        return f"attention implementation {attention!r} (static cache supports {', '.join(SUPPORTED_ATTENTION)})"
    try:
        layers = StaticCache(config=model.config, max_cache_len=1).layers
    except (ValueError, KeyError, TypeError) as err:
        return f"transformers has no static cache for this model ({err})"
    if any(type(layer) is not StaticLayer for layer in layers):  # sliding-window or linear layers
        return "its layers are not all full attention"
    return ""


def plan(device: torch.device, models=()) -> tuple[bool, str]:
    """(use the static cache with CUDA graphs for `models`?, why not). Only on CUDA: elsewhere a static cache
    only adds the masked tail to every attention. All or none of a pair, so both sides are timed alike."""
    if torch.device(device).type != "cuda":
        return False, "not on a CUDA device"
    deployment = settings.current()
    if not deployment.cuda_graphs:
        return False, "SPECVIZ_CUDA_GRAPHS=0"
    if deployment.stateless_steps:
        return False, "decoders are rebuilt at every step (ZeroGPU): a capture would not pay"
    for model in models:
        reason = unsupported_reason(model)
        if reason:
            return False, reason
    return True, ""


def _close(replayed: torch.Tensor, eager: torch.Tensor) -> bool:
    """Equal up to a few units in the last place of their dtype (bf16's is 2^-8 of the value), the scale taken
    from the finite entries. Equal infinities are equal (a draft head that scores only part of the vocabulary
    puts -inf everywhere else); a NaN never is."""
    replayed, eager_ = replayed.float(), eager.float()
    finite = eager_[torch.isfinite(eager_)]
    scale = finite.abs().amax().clamp_min(1.0) if finite.numel() else 1.0
    tolerance = 8 * torch.finfo(eager.dtype).eps * scale
    return bool(((replayed == eager_) | ((replayed - eager_).abs() <= tolerance)).all())


class _Captured:
    """One recorded forward over n new tokens: its input buffers and the outputs the replay writes."""

    def __init__(self, graph, embeds, logits, hidden):
        self.graph, self.embeds, self.logits, self.hidden = graph, embeds, logits, hidden


class StaticKV:
    """A model's keys and values for one sequence, at most `max_len` positions, and its forward over them."""

    def __init__(self, model, max_len: int, graphs: bool = False):
        from transformers import StaticCache

        self.model, self.max_len, self.graphs = model, int(max_len), graphs
        self.cache = StaticCache(config=model.config, max_cache_len=self.max_len)
        self.length = 0                # positions written and valid
        self.captured: dict[int, _Captured] = {}
        self.graph_error = ""          # why a capture was refused (graphs then stay off)
        self.capture_s = 0.0
        self._positions = None         # [max_len] key positions, for the mask
        self._length_t = None          # 0-d long: `length` as the mask reads it until the layers share one position
        self._lengths = None           # [layers] every layer's write position, once they share one tensor
        self._length_view = None       # 0-d view of layer 0's write position: what the mask reads once shared
        self._key_offsets: dict[int, torch.Tensor] = {}  # n -> key position minus query index, for the mask
        self._offsets: dict[tuple[int, int], torch.Tensor] = {}  # (n, shift) -> arange(n) - shift, on the device
        self.recording = False         # a region is being recorded: forwards run their body, never a replay
        self._pool = None

    # ------------------------------------------------------------------ the forward

    def _mask(self, n: int) -> torch.Tensor:
        """[1, 1, n, max_len]: query i (position length + i) sees keys 0 .. length + i, i.e. key j iff j - i <=
        length: one comparison against the write position, read on the device."""
        device = self.model.device
        if self._positions is None:
            self._positions = torch.arange(self.max_len, device=device)
            self._length_t = torch.zeros((), dtype=torch.long, device=device)
        if n not in self._key_offsets:  # [1, 1, n, max_len]: key j - query i, the same for every forward over n
            self._key_offsets[n] = (self._positions[None, :] - torch.arange(n, device=device)[:, None])[None, None]
        visible = self._key_offsets[n] <= (self._length_t if self._length_view is None else self._length_view)
        if self.model.config._attn_implementation == "eager":  # eager attention adds the mask to its scores
            blocked = torch.finfo(self.model.dtype).min
            return torch.zeros(1, 1, n, self.max_len, device=device, dtype=self.model.dtype).masked_fill(
                ~visible, blocked)
        return visible

    def positions(self, n: int, shift: int = 0) -> torch.Tensor:
        """[n] the positions write position - shift .. + n - 1, computed on the device from the layers' own write
        position (a graph input that every forward advances): where a recorded region reads and writes ids."""
        if self._length_view is None:
            self._share_lengths()
        if self._length_view is None:
            raise RuntimeError("no forward has allocated the static cache yet")
        key = (n, shift)
        if key not in self._offsets:
            self._offsets[key] = torch.arange(-shift, n - shift, device=self.model.device)
        return self._length_view + self._offsets[key]

    def _body(self, embeds: torch.Tensor, keep: int):
        """The forward a graph records, the mask included: logits [1, keep, V] (the model's own forward: its
        family's logit scaling included) and the last hidden state [1, n, H]."""
        logits, hidden, _ = logits_and_hidden(self.model, keep, inputs_embeds=embeds,
                                              attention_mask=self._mask(embeds.shape[1]), past_key_values=self.cache)
        return logits, hidden

    def forward(self, embeds: torch.Tensor, keep: int, n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits [1, keep, V] and hidden states [1, n, H] for n new inputs [1, n, H] (`n`: their number, where the
        caller has read it); extends the cache. While a region is `recording`, the body runs (its forwards are part
        of the region's graph)."""
        if n is None:
            batch, n = embeds.shape[:2]
            if batch != 1:
                raise ValueError("a static cache holds one sequence")
        if self.length + n > self.max_len:
            raise RuntimeError(f"the static cache holds {self.max_len} positions; {self.length} + {n} do not fit")
        keep = keep or n
        captured = None if self.recording else self.captured.get(n)
        try:
            if self._length_view is None:
                self._set_mask_length()
            if captured is None:
                logits, hidden = self._body(embeds, keep)
            else:
                captured.embeds.copy_(embeds)  # the graph's input buffer
                captured.graph.replay()  # advances every layer's write position by n, as the eager body does
                logits, hidden = captured.logits[:, -keep:].clone(), captured.hidden.clone()
        except BaseException:
            # a forward that stopped midway (out of memory, say) has moved the write positions of the layers
            # it ran and not the others': put them all back, or a later write lands past max_len (a device assert)
            self.set_length(self.length)
            raise
        self.length += n
        if self._lengths is None:
            self._share_lengths()
        return logits, hidden

    @torch.inference_mode()
    def _set_mask_length(self) -> None:
        if self._length_t is None:
            self._mask(1)  # allocates the position buffers
        self._length_t.fill_(self.length)  # a scalar argument to one kernel: no copy from the host, no sync

    @torch.inference_mode()  # the write positions may be inference tensors (made by a prefill in inference mode)
    def set_length(self, length: int) -> None:
        """Forget every position from `length` on: the next forward writes there (nothing is freed)."""
        self.length = length
        if self._lengths is None:
            self._share_lengths()
        if self._lengths is not None:
            self._lengths.fill_(length)  # every layer's write position at once: one launch, not one per layer
            return
        for layer in self.cache.layers:
            if layer.is_initialized:
                layer.cumulative_length.fill_(length)

    def _share_lengths(self) -> None:
        """Once every layer is allocated and before any graph records their addresses: make each layer's write
        position (a 0-d tensor it advances in place) an element of one [layers] tensor, set by one fill."""
        layers = self.cache.layers
        if self.captured or not all(layer.is_initialized for layer in layers):
            return
        lengths = torch.stack([layer.cumulative_length for layer in layers])  # [layers]
        for i, layer in enumerate(layers):
            layer.cumulative_length = lengths[i]
        self._lengths, self._length_view = lengths, lengths[0]

    # ------------------------------------------------------------------ graphs

    @torch.inference_mode()
    def capture(self, sizes) -> None:
        """Record one graph per number of new tokens in `sizes` (CUDA only; call after the prefill). A capture
        that fails, or whose replay differs from the eager forward, turns the graphs off for this cache."""
        if not self.graphs or self.graph_error:
            return
        with CAPTURE_LOCK:
            t0 = time.perf_counter()
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            if not self.cache.layers[0].is_initialized:  # allocate the keys and values on this stream, not a side one
                self._set_mask_length()
                self._body(self.model.get_input_embeddings()(torch.zeros(1, 1, dtype=torch.long, device=self.model.device)),
                           1)
                self.set_length(self.length)
            try:
                for n in sorted(set(sizes)):
                    if n not in self.captured and self.length + n <= self.max_len:
                        self.captured[n] = self._capture(n)
            except RuntimeError as err:  # e.g. an operation that syncs with the host while capturing
                self.captured.clear()
                self.graph_error = f"CUDA graph capture failed: {err}"
            finally:
                self.set_length(self.length)  # whatever a warm-up or a failed capture advanced
            torch.cuda.synchronize(self.model.device)
            self.capture_s += time.perf_counter() - t0

    def _capture(self, n: int) -> _Captured:
        length, device = self.length, self.model.device
        ids = torch.randint(0, self.model.config.get_text_config().vocab_size, (1, n), device=device,
                            generator=torch.Generator(device).manual_seed(n))
        embeds = self.model.get_input_embeddings()(ids)  # inputs of the model's own scale: no fp16 overflow
        self._set_mask_length()
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):  # warm-up off the capture (library handles, autotuning)
            for _ in range(2):
                eager_logits, eager_hidden = self._body(embeds, n)
                self.set_length(length)  # the warm-up's keys land past `length`: stale, overwritten later
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        # thread_local: the app's other threads may use the device while this one captures
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            logits, hidden = self._body(embeds, n)
        graph.replay()  # the check: the same inputs through the graph
        self.set_length(length)
        if not (_close(logits, eager_logits) and _close(hidden, eager_hidden)):
            raise RuntimeError(f"the replayed {n}-token forward differs from the eager one")
        return _Captured(graph, embeds, logits, hidden)

    # ------------------------------------------------------------------ copies

    def fork(self) -> StaticKV:
        """A copy with its own keys and values; graphs are recorded against addresses, so none are copied
        (capture again on the copy)."""
        twin = copy.copy(self)
        twin.cache = copy.deepcopy(self.cache)
        twin.captured, twin._pool, twin.capture_s = {}, None, 0.0
        twin._positions = twin._length_t = twin._lengths = twin._length_view = None  # its own, set by its forwards
        twin._key_offsets, twin._offsets = {}, {}
        return twin
