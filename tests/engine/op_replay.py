"""A CUDA graph's replay, emulated on the CPU: what `round_regions` records runs again as the very operations it
dispatched, on the very tensors, with no Python in between.

A CUDA graph records the kernels a region launched, with their arguments (tensor addresses, scalars) frozen, and a
replay launches them again: nothing the host computed while recording (a Python int, a slice bound, a shape) can
change, and every tensor the region reads must be where it was. `OpTape` records the aten operations a region
dispatches (a `TorchDispatchMode`) and replays them on the same tensors: each operation's fresh result is copied
into the tensor it returned while recording (the memory later operations read), in-place and `out=` operations
write where they wrote, views alias what they aliased, and random operations draw afresh from their generator, as
a graph with the generator registered does. A region whose result depends on host state that changes between
rounds therefore replays to a wrong result here, as it would on a GPU; one that reads a value back to the host
cannot be recorded at all (`aten._local_scalar_dense` and the like raise, as stream capture does).
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from specviz.engine.decoding.counting import SYNCING_OPS


class OpTape(TorchDispatchMode):
    """The aten operations dispatched while active, with their arguments and results, replayable."""

    def __init__(self):
        super().__init__()
        self.ops: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func.overloadpacket).startswith(SYNCING_OPS):
            raise RuntimeError(f"{func} reads back to the host: a CUDA graph cannot record it")
        out = func(*args, **kwargs)
        self.ops.append((func, args, kwargs, out))
        return out

    @torch.inference_mode()
    def replay(self) -> None:
        for func, args, kwargs, out in self.ops:
            fresh = func(*args, **kwargs)
            if func.is_view:
                continue  # the recorded view aliases the recorded base, which is refreshed in place
            inputs = {id(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
            for old, new in zip(tree_leaves(out), tree_leaves(fresh)):
                if isinstance(old, torch.Tensor) and id(old) not in inputs and old is not new:
                    old.copy_(new)  # where the recording's later operations read this result


class TapeRecorder:
    """`round_regions.recorder`'s stand-in on the CPU: records regions as `OpTape`s."""

    def __init__(self, generator: torch.Generator):
        self.generator = generator
        self.tapes: list[OpTape] = []

    def warm_up(self, run):
        return run()

    def record(self, run):
        tape = OpTape()
        with tape:
            output = run()
        self.tapes.append(tape)
        return tape.replay, output

    def synchronize(self) -> None:
        pass
