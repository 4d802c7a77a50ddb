"""A stand-in for the `spaces` package on ZeroGPU (SPACES_ZERO_GPU=true), for a machine without a GPU.

It keeps the real package's contract (spaces 0.51.3: spaces/zero/__init__.py, decorator.py,
torch/patching.py) and makes every silent failure of it loud:
  - imported while gradio is still importing itself, it refuses (ImportError), as the real one does;
  - imported after torch, it refuses: the real one can only see CUDA already initialised, which needs a
    GPU, so this one asks for what app.py does, `spaces` before torch;
  - `patch()` emulates a GPU on the importing thread only (a torch function mode, thread-local like the
    real one): 'cuda' tensors are host tensors, counted; on any other thread 'cuda' fails (this CPU build
    of torch has no CUDA), as the real emulation's `_cuda_init` guard does;
  - at `gr.Blocks.launch` it runs `startup()`: with no function decorated by `GPU`, or no weights moved
    to 'cuda', it raises where the real one returns quietly and ships nothing to the GPU workers.
`REPORT` (written to $ZEROGPU_STANDIN_REPORT as JSON at launch) is what the tests read.
"""
import json
import os
import sys
import threading

if (_gr := sys.modules.get("gradio")) is not None and not hasattr(_gr, "Blocks"):
    raise ImportError("spaces is not imported from inside gradio's own import")  # as the real package
if "torch" in sys.modules:
    raise RuntimeError("`spaces` was imported after torch: import it before any CUDA-related package")

import torch  # noqa: E402 - after the check above, as the real package imports it
from torch.overrides import TorchFunctionMode  # noqa: E402

REPORT = {"imported_before_torch": True, "decorated": [], "cuda_bytes": 0, "cuda_threads": [], "startup": None}
decorated_cache: dict = {}


def _is_cuda(device) -> bool:
    return device is not None and torch.device(device).type == "cuda"


class _EmulatedCuda(TorchFunctionMode):
    """'cuda' becomes the host; each tensor put there is counted (what startup would pack)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        cuda = False
        if func is torch.Tensor.cuda:
            func, cuda, args, kwargs = torch.Tensor.to, True, args[:1], {"device": "cpu"}
        elif func is torch.Tensor.to:
            kwargs.pop("copy", None)
            device, dtype, _, _ = torch._C._nn._parse_to(*args[1:], **kwargs)
            if _is_cuda(device):
                cuda, args, kwargs = True, args[:1], {"device": "cpu", **({"dtype": dtype} if dtype else {})}
        elif _is_cuda(kwargs.get("device")):
            cuda = True
            kwargs["device"] = "cpu"
        out = func(*args, **kwargs)
        if cuda and isinstance(out, torch.Tensor):
            REPORT["cuda_bytes"] += out.numel() * out.element_size()
            name = threading.current_thread().name
            if name not in REPORT["cuda_threads"]:
                REPORT["cuda_threads"].append(name)
        return out


def patch():
    _EmulatedCuda().__enter__()  # this thread only, like the real emulation
    torch.cuda.is_available = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda *a, **k: type("Props", (), {"major": 9, "minor": 0,
                                                                          "total_memory": 74625056768})()
    torch.cuda.mem_get_info = lambda *a, **k: (74625056768 - 309002240, 74625056768)
    torch.cuda.memory_reserved = torch.cuda.memory_allocated = lambda *a, **k: 0


def GPU(task=None, *, duration=None, size=None):
    if task is None:
        return lambda fn: GPU(fn, duration=duration, size=size)
    decorated_cache[task] = task
    REPORT["decorated"].append(f"{task.__module__}.{task.__qualname__}")
    return task


def startup():
    REPORT["startup"] = "ran"
    path = os.environ.get("ZEROGPU_STANDIN_REPORT")
    if path:
        with open(path, "w") as out:
            json.dump(REPORT, out)
    if not decorated_cache:
        raise RuntimeError("ZeroGPU stand-in: no function is decorated with spaces.GPU at launch")
    if not REPORT["cuda_bytes"]:
        raise RuntimeError("ZeroGPU stand-in: no weights were moved to 'cuda' before launch")


def _one_launch():
    import gradio as gr

    original = gr.Blocks.launch

    def launch(*args, **kwargs):
        startup()
        gr.Blocks.launch = original
        return original(*args, **kwargs)
    gr.Blocks.launch = launch


if os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true"):
    patch()
    _one_launch()
