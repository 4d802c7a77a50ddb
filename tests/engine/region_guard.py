"""A mode that refuses, outside a round's regions, writes to the buffers the regions read.

A replayed CUDA graph reads its buffers where they are: a value an eager operation wrote there between replays is
read as that operation left it, which is right only if the host's order of work is exactly what the graph assumed.
The round is built so that everything a region reads was written by a region (or at the run's start), except the
rewind after a rejection: one fill of each static cache's write position. `RegionGuard` holds the code to that: it
watches every aten operation (a `TorchDispatchMode`); inside a region (the draft loop and the verify region) it notes each buffer read that the region did not produce there, and outside the regions it raises on any
operation that writes such a buffer, unless the buffer is one of `allowed` (the write positions).
"""
from __future__ import annotations

from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from specviz.engine.decoding.counting import ROUND_REGIONS, around_regions


class WrittenOutside(AssertionError):
    """An operation outside the regions wrote a buffer that a region reads."""


def _storage(t: torch.Tensor) -> int | None:
    try:
        ptr = t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return ptr or None


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _written(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors `func` writes in place (its schema's mutable arguments, `out=` included)."""
    out = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            out += _tensors(value)
    return out


class RegionGuard(TorchDispatchMode):
    def __init__(self, allowed: list[torch.Tensor]):
        super().__init__()
        self.inside = 0
        self.read: dict[int, torch.Tensor] = {}   # storage -> a tensor on it (held, so no other buffer reuses it)
        self.produced: set[int] = set()           # storages made by the region now running
        self.allowed = {_storage(t) for t in allowed}
        self.checked_writes = 0

    def enter_region(self) -> None:
        if self.inside == 0:
            self.produced = set()
        self.inside += 1

    def leave_region(self) -> None:
        self.inside -= 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.inside:
            for t in _tensors((args, kwargs)):
                key = _storage(t)
                if key is not None and key not in self.produced:
                    self.read.setdefault(key, t)
            self.produced |= {key for t in _tensors(out) if (key := _storage(t)) is not None}
            return out
        for t in _written(func, args, kwargs):
            key = _storage(t)
            self.checked_writes += 1
            if key in self.read and key not in self.allowed:
                raise WrittenOutside(f"{func} writes, outside the regions, a buffer a region reads")
        return out


@contextmanager
def guarding(allowed: list[torch.Tensor]):
    """Yield a RegionGuard active for the block, told when the round's regions start and end."""
    guard = RegionGuard(allowed)
    with around_regions(guard.enter_region, guard.leave_region, ROUND_REGIONS), guard:
        yield guard
