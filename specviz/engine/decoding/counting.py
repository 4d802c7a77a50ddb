"""Counting what a round costs the host, on any device: reads back from the device, operations launched outside
what a CUDA graph replays, and the torch calls specviz's own code makes.

On a GPU every read of a tensor's value by the host (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `int()`,
`float()`, `bool()` or indexing with a tensor) waits for the device to finish everything queued: a
synchronisation. Every tensor built from Python numbers (`torch.tensor`, `torch.as_tensor` of a list or scalar) is
a copy from the host. Every aten operation dispatched outside a recorded region is a kernel launch the host must
issue (5-6 us each on an A100/H100-class card). None of this needs a GPU to be seen: the counters here intercept
it on the CPU, on the code path a GPU runs.

  host_reads()     every host read and host-built tensor, as 'kind at file:line'
  counting_ops()   aten operations outside the regions (`REGIONS`: the draft loop, the verify region, the
                   static cache's forward body: what a CUDA graph replays with one launch), views excepted
  counting_calls() torch calls whose caller is specviz's own code (a `TorchFunctionMode`), by module

What is not seen: reads made inside C++ (an operation such as `nonzero` that syncs internally): `OpCount` sees
those operations by name (`SYNCING_OPS`). `Tensor.to("cpu")` is not counted (on the CPU it cannot be told from a
move to the model's device). The counters patch attributes of torch and of the region classes while active: one
thread, one counter at a time (`python -m specviz gpucheck` and the tests).
"""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..caches.static_cache import StaticKV
from .decoders import SpeculativeDecoder
from .model_draft import ModelDraft

READ_METHODS = ("item", "tolist", "cpu", "numpy", "__int__", "__float__", "__bool__", "__index__")
BUILDERS = ("tensor", "as_tensor")
# aten operations that read a value back (or size their output by one) on the host
SYNCING_OPS = ("aten._local_scalar_dense", "aten.item", "aten.nonzero", "aten.masked_select", "aten.unique", "aten.equal",
               "aten.is_nonzero", "aten._assert_async", "aten.repeat_interleave.Tensor")
# (class, function): what a CUDA graph replays with one launch on CUDA (round_regions)
REGIONS = ((ModelDraft, "draft_loop"), (SpeculativeDecoder, "verify_region"), (StaticKV, "_body"))
SPECVIZ = str(Path(__file__).resolve().parents[2])
TORCH = str(Path(torch.__file__).resolve().parent)


@dataclass
class ReadLog:
    """Every host read seen, as 'kind at file:line' of the caller."""
    reads: list[str] = field(default_factory=list)
    _depth: int = 0

    def take(self) -> list[str]:
        out, self.reads = self.reads, []
        return out


def _site() -> str:
    frame = sys._getframe(2)  # the wrapper's caller
    return f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}"


def _counted(log: ReadLog, kind: str, original, counts=lambda *a, **k: True):
    """`original` wrapped to log a read when `counts` says so (a read inside another counted one is not logged)."""
    def wrapper(*args, **kwargs):
        if log._depth == 0 and counts(*args, **kwargs):
            log.reads.append(f"{kind} at {_site()}")
        log._depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            log._depth -= 1
    return wrapper


def _kind(method: str) -> str:
    return f"{method.strip('_')}(tensor)" if method.startswith("__") else f".{method}()"


@contextmanager
def host_reads():
    """Yield a ReadLog of every host read and host-built tensor while the block runs."""
    log = ReadLog()
    saved = {}
    try:
        for name in READ_METHODS:
            saved[(torch.Tensor, name)] = getattr(torch.Tensor, name)
            setattr(torch.Tensor, name, _counted(log, _kind(name), getattr(torch.Tensor, name)))
        for name in BUILDERS:
            saved[(torch, name)] = getattr(torch, name)
            setattr(torch, name, _counted(log, f"torch.{name}(python data)", getattr(torch, name),
                                          counts=lambda data, *a, **k: not isinstance(data, torch.Tensor)))
        yield log
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)


ROUND_REGIONS = REGIONS[:2]  # the round's own two regions, without the forward body a region holds


@contextmanager
def around_regions(enter, leave, regions=REGIONS):
    """Patch every region function of `regions` to call enter() before it runs and leave() after, while the block
    runs."""
    saved = []

    def watched(function):
        def region(*args, **kwargs):
            enter()
            try:
                return function(*args, **kwargs)
            finally:
                leave()
        return region

    try:
        for cls, name in regions:
            saved.append((cls, name, getattr(cls, name)))
            setattr(cls, name, watched(getattr(cls, name)))
        yield
    finally:
        for cls, name, function in saved:
            setattr(cls, name, function)


def _paused_in_regions(counter):
    """Every region function pauses `counter` (its `paused` depth) while it runs."""
    def enter():
        counter.paused += 1

    def leave():
        counter.paused -= 1

    return around_regions(enter, leave)


class OpCount(TorchDispatchMode):
    """aten operations dispatched while active and not `paused` (inside a region), except views (no launch), and
    every operation that reads back to the host wherever it runs (inside a region it would also break the graph's
    capture); `syncing` lists those."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []
        self.paused = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if (not self.paused and not func.is_view) or name.startswith(SYNCING_OPS):  # a view launches nothing
            self.ops.append(name)
        return func(*args, **(kwargs or {}))

    @property
    def syncing(self) -> list[str]:
        return [op for op in self.ops if op.startswith(SYNCING_OPS)]

    def take(self) -> list[str]:
        out, self.ops = self.ops, []
        return out


@contextmanager
def _counting(counter):
    """Yield `counter` active for the block, told when the code is inside a region (`REGIONS`)."""
    with _paused_in_regions(counter), counter:
        yield counter


def counting_ops():
    """An OpCount active for the block, paused inside the regions (`REGIONS`)."""
    return _counting(OpCount())


def _specviz_caller() -> str | None:
    """The specviz module (path under specviz/) of the nearest caller outside torch, or None for any other code."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(TORCH):
        frame = frame.f_back
    if frame is None or not frame.f_code.co_filename.startswith(SPECVIZ) or frame.f_code.co_filename == COUNTER:
        return None
    return frame.f_code.co_filename[len(SPECVIZ) + 1:]


COUNTER = __file__  # this module's own calls (a counter's bookkeeping) are not the code being counted


class CallCount(TorchFunctionMode):
    """Torch calls (functions, methods, attribute reads such as `.shape`: everything a `TorchFunctionMode` sees) whose
    nearest caller outside torch is specviz's own code, counted by module; `inside` those made inside a region. The
    model's own forward (transformers' code) is not specviz's; a call nested inside another torch call is not seen."""

    def __init__(self):
        super().__init__()
        self.by_module: Counter = Counter()
        self.by_name: Counter = Counter()  # (module, the call's name)
        self.inside = 0
        self.paused = 0  # depth inside a region: counted all the same, and told apart

    def __torch_function__(self, func, types, args=(), kwargs=None):
        module = _specviz_caller()
        if module is not None:
            self.by_module[module] += 1
            self.by_name[(module, getattr(func, "__name__", str(func)))] += 1
            self.inside += bool(self.paused)
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.by_module.values())

    def take(self) -> tuple[int, int, Counter]:
        """(calls, of which inside regions, by module) since the last take."""
        out = (self.total, self.inside, self.by_module)
        self.by_module, self.by_name, self.inside = Counter(), Counter(), 0
        return out


def counting_calls():
    """A CallCount active for the block."""
    return _counting(CallCount())
