"""Counting what a round costs the host, on the CPU: reads back from the device, and operations launched.

On a GPU every read of a tensor's value by the host (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `int()`,
`float()`, `bool()` or indexing with a tensor) waits for the device to finish everything queued: a
synchronisation. Every tensor built from Python numbers (`torch.tensor`, `torch.as_tensor` of a list or
scalar) is a copy from the host. Neither needs a GPU to be seen: `host_reads()` intercepts them here, on the
CPU, on the same code path. `OpCount` counts the aten operations dispatched outside what a CUDA graph
replays (the static cache's recorded forward body), each of which is a kernel launch on a GPU.

What is not seen: reads made inside C++ (an operation such as `nonzero` that syncs internally): `OpCount`
sees those operations by name (`SYNCING_OPS`). `Tensor.to("cpu")` is not counted (on the CPU it cannot be told
from a move to the model's device).
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

READ_METHODS = ("item", "tolist", "cpu", "numpy", "__int__", "__float__", "__bool__", "__index__")
BUILDERS = ("tensor", "as_tensor")
# aten operations that read a value back (or size their output by one) on the host
SYNCING_OPS = ("aten._local_scalar_dense", "aten.item", "aten.nonzero", "aten.masked_select", "aten.unique", "aten.equal",
               "aten.is_nonzero", "aten._assert_async", "aten.repeat_interleave.Tensor")


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
    """Yield a ReadLog of every host read and host-built tensor while the block runs (not thread-safe:
    the tests that use it run one decoder on one thread)."""
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


class OpCount(TorchDispatchMode):
    """aten operations dispatched while active, except views (no launch) and those inside the static cache's
    graph body (`StaticKV._body`, what a CUDA graph replays with one launch); `syncing` lists those that read
    back to the host."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []
        self.paused = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.paused and not func.is_view:  # a view launches nothing: it is metadata on the host
            self.ops.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))

    @property
    def syncing(self) -> list[str]:
        return [op for op in self.ops if op.startswith(SYNCING_OPS)]

    def take(self) -> list[str]:
        out, self.ops = self.ops, []
        return out


@contextmanager
def counting_ops():
    """Yield an OpCount active for the block, paused inside the static cache's recorded forward."""
    from specviz.engine.caches import static_cache

    counter = OpCount()
    body = static_cache.StaticKV._body

    def paused_body(self, *args, **kwargs):
        counter.paused += 1
        try:
            return body(self, *args, **kwargs)
        finally:
            counter.paused -= 1

    static_cache.StaticKV._body = paused_body
    try:
        with counter:
            yield counter
    finally:
        static_cache.StaticKV._body = body
